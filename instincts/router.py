"""The instinct registry: deterministic handlers matched before anything else.

Each family module exports ``router = InstinctRouter("family")`` and registers with
``@router.command("name", aliases=(...), help="...")``. The root includes routers
explicitly; a name or alias registered twice is an error at start, never an overwrite.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from instincts.contract import Handler


class DuplicateInstinct(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Instinct:
    name: str
    aliases: tuple[str, ...]
    help: str
    handler: Handler
    while_working: bool  # may run while a harness works (most may)
    bypass_queue: bool  # answered immediately, ahead of the session's queue
    # Changes nothing (a listing, a report). Every other command is a state-changing one
    # and must do its effect exactly once however it is killed (store/once.py): the
    # crash test runs each of them, listed from here (tests/crash/test_command_once.py).
    reads_only: bool = False


class InstinctRouter:
    def __init__(self, family: str) -> None:
        self.family = family
        self.instincts: list[Instinct] = []

    def command(
        self,
        name: str,
        *,
        help: str,
        aliases: Iterable[str] = (),
        while_working: bool = True,
        bypass_queue: bool = False,
        reads_only: bool = False,
    ) -> Callable[[Handler], Handler]:
        def register(fn: Handler) -> Handler:
            self.instincts.append(
                Instinct(name, tuple(aliases), help, fn, while_working, bypass_queue, reads_only)
            )
            return fn

        return register


class InstinctRegistry:
    def __init__(self) -> None:
        self._by_word: dict[str, Instinct] = {}
        self._ordered: list[Instinct] = []

    def include(self, router: InstinctRouter) -> None:
        for instinct in router.instincts:
            for word in (instinct.name, *instinct.aliases):
                if word in self._by_word:
                    raise DuplicateInstinct(
                        f"/{word} from {router.family} is already registered by "
                        f"/{self._by_word[word].name}"
                    )
            for word in (instinct.name, *instinct.aliases):
                self._by_word[word] = instinct
            self._ordered.append(instinct)

    def get(self, word: str) -> Instinct | None:
        return self._by_word.get(word.lower())

    def all(self) -> list[Instinct]:
        return list(self._ordered)

    def suggest(self, word: str) -> list[str]:
        import difflib

        return difflib.get_close_matches(word.lower(), list(self._by_word), n=3, cutoff=0.6)
