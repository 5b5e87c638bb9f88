"""Per-run parser state for adapters whose verdict needs earlier events.

One adapter object serves every run, and the runner judges by the last done/error event;
a denial or an abort seen mid-stream must survive until the final event. Each run is
its own asyncio task, hence its own context, so a ContextVar keeps concurrent runs apart.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Generic, TypeVar

T = TypeVar("T")


class RunState(Generic[T]):
    def __init__(self, name: str, factory: Callable[[], T]) -> None:
        self._var: ContextVar[T | None] = ContextVar(name, default=None)
        self._factory = factory

    def get(self, fresh: bool = False) -> T:
        """This run's state; ``fresh`` starts a new one (the stream's first event)."""
        state = self._var.get()
        if state is None or fresh:
            state = self._factory()
            self._var.set(state)
        return state
