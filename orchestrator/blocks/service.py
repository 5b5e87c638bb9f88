"""The memory blocks' rules: kinds, limits, edits, reverts, and what the prompt shows.

The current text of every block is kept in memory (read once from the store, updated
on every change this process makes): the prompt is built on every model turn and must
not wait for SQLite. Changes go through the store's compare-and-swap, so an edit is
computed from the version it replaces (an append never loses a change made meanwhile).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from core.errors import FetchError
from orchestrator.blocks.settings import BlockSettings
from orchestrator.store.blocks import BlockPort, BlockVersion

KINDS = ("persona", "owner", "project")
MODES = ("set", "append", "clear")
MAX_SCOPE = 100
_RETRIES = 5


class BlockError(FetchError):
    """An edit refused, in words for the phone and the model; nothing was changed."""


@dataclass(frozen=True, slots=True)
class Block:
    """A block as it is now: version 0 and empty text when never written."""

    kind: str
    scope: str  # '' or, for a project block, the repository's name
    text: str
    version: int
    limit: int
    author: str = ""  # who wrote the current version
    at: float = 0.0

    @property
    def name(self) -> str:
        return f"{self.kind} {self.scope}" if self.scope else self.kind


def check_kind(kind: str) -> str:
    word = kind.strip().lower()
    if word not in KINDS:
        raise BlockError(f"no block kind {kind[:30]!r}; the kinds are {', '.join(KINDS)}")
    return word


def check_scope(kind: str, scope: str | None) -> str:
    """``''`` for persona and owner; the repository's name for a project block."""
    if kind != "project":
        return ""
    name = (scope or "").strip()
    if not name:
        raise BlockError("a project block needs a repository (none is active in this chat)")
    if len(name) > MAX_SCOPE or any(c in name for c in "/\\\n\r\t\0"):
        raise BlockError(f"{name[:40]!r} is not a repository name")
    return name


class Blocks:
    def __init__(
        self, port: BlockPort, settings: BlockSettings, clock: Callable[[], float] = time.time
    ) -> None:
        self._port = port
        self._settings = settings
        self._clock = clock
        self._heads: dict[tuple[str, str], BlockVersion] | None = None
        self._loading = asyncio.Lock()

    def limit(self, kind: str) -> int:
        limits = {
            "persona": self._settings.persona_chars,
            "owner": self._settings.owner_chars,
            "project": self._settings.project_chars,
        }
        return limits[check_kind(kind)]

    async def load(self) -> None:
        """Read every block's current version (once; the app does it at start, so the
        sync readers below see them)."""
        await self._loaded()

    async def _loaded(self) -> dict[tuple[str, str], BlockVersion]:
        if self._heads is None:
            async with self._loading:
                if self._heads is None:
                    self._heads = {(h.kind, h.scope): h for h in await self._port.heads()}
        return self._heads

    def _block(self, heads: dict[tuple[str, str], BlockVersion], kind: str, scope: str) -> Block:
        head = heads.get((kind, scope))
        if head is None:
            return Block(kind, scope, "", 0, self.limit(kind))
        return Block(kind, scope, head.text, head.number, self.limit(kind), head.author, head.at)

    async def get(self, kind: str, scope: str | None = None) -> Block:
        kind = check_kind(kind)
        return self._block(await self._loaded(), kind, check_scope(kind, scope))

    async def all(self) -> list[Block]:
        """Persona and owner (even when empty), then every project block ever written."""
        heads = await self._loaded()
        projects = sorted(s for k, s in heads if k == "project")
        return [
            self._block(heads, "persona", ""),
            self._block(heads, "owner", ""),
            *(self._block(heads, "project", s) for s in projects),
        ]

    async def for_prompt(self, repo: str | None) -> tuple[Block, ...]:
        """What the model is shown: persona, owner and the active repo's project block,
        those with text only."""
        return self._shown(await self._loaded(), repo)

    def shown(self, repo: str | None) -> tuple[Block, ...]:
        """``for_prompt`` without a wait, once ``load`` has run (nothing before)."""
        return self._shown(self._heads or {}, repo)

    def _shown(
        self, heads: dict[tuple[str, str], BlockVersion], repo: str | None
    ) -> tuple[Block, ...]:
        shown = [self._block(heads, "persona", ""), self._block(heads, "owner", "")]
        if repo:
            shown.append(self._block(heads, "project", repo))
        return tuple(b for b in shown if b.text)

    @staticmethod
    def digest(blocks: tuple[Block, ...]) -> str:
        """Names the blocks' versions: a frozen prompt built from other versions is stale."""
        names = ",".join(f"{b.kind}/{b.scope}@{b.version}" for b in blocks)
        return hashlib.sha256(names.encode()).hexdigest()[:16]

    async def edit(
        self, kind: str, scope: str | None, mode: str, text: str, author: str
    ) -> BlockVersion:
        """Replace (``set``), add a line to (``append``) or empty (``clear``) a block."""
        kind = check_kind(kind)
        scope = check_scope(kind, scope)
        if mode not in MODES:
            raise BlockError(f"no edit mode {mode[:20]!r}; use {', '.join(MODES)}")
        text = text.strip()
        if mode != "clear" and not text:
            raise BlockError(f"the new text for the {kind} block is empty (nothing changed)")

        def new_text(old: str) -> str:
            if mode == "clear":
                return ""
            return f"{old.rstrip()}\n{text}" if mode == "append" and old.strip() else text

        return await self._commit(kind, scope, new_text, author, mode, None)

    async def revert(self, kind: str, scope: str | None, number: int, author: str) -> BlockVersion:
        """A new version carrying version ``number``'s text (the history keeps both)."""
        kind = check_kind(kind)
        scope = check_scope(kind, scope)
        old = await self._port.version(kind, scope, number)
        name = f"{kind} {scope}" if scope else kind
        if old is None:
            raise BlockError(f"the {name} block has no version {number}; see its history")
        return await self._commit(kind, scope, lambda _: old.text, author, "revert", number)

    async def history(self, kind: str, scope: str | None, limit: int = 10) -> list[BlockVersion]:
        kind = check_kind(kind)
        return await self._port.history(kind, check_scope(kind, scope), limit)

    async def _commit(
        self,
        kind: str,
        scope: str,
        new_text: Callable[[str], str],
        author: str,
        change: str,
        restored: int | None,
    ) -> BlockVersion:
        heads = await self._loaded()
        name = f"{kind} {scope}" if scope else kind
        limit = self.limit(kind)
        for _ in range(_RETRIES):
            head = heads.get((kind, scope))
            old, expected = (head.text, head.number) if head else ("", 0)
            text = new_text(old)
            if len(text) > limit:
                raise BlockError(
                    f"the {name} block would be {len(text):,} characters; its limit is "
                    f"{limit:,}. Nothing was changed: shorten it (or raise blocks."
                    f"{kind}_chars in the settings)."
                )
            if text == old:
                raise BlockError(
                    f"the {name} block already says exactly that (version {expected}); "
                    "nothing changed"
                )
            done = await self._port.commit(
                kind,
                scope,
                expected=expected,
                text=text,
                author=author,
                change=change,
                restored=restored,
                at=self._clock(),
            )
            if done is not None:
                heads[(kind, scope)] = done
                return done
            # Another writer (a second Fetch on this file) moved it: read it again.
            latest = await self._port.history(kind, scope, 1)
            if latest:
                heads[(kind, scope)] = latest[0]
        raise BlockError(f"the {name} block keeps changing under this edit; try again")
