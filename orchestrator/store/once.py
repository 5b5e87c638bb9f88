"""Exactly once: a command's effect and the closing of the inbound row that asked for it
are one SQLite transaction.

A message stays ``queued`` in the inbox until handled, and a restart replays what is
still queued. Closing the row after the effect leaves a window (the effect written, the
row still queued) in which a kill makes the replay do the effect twice. So while a
command runs, the dispatcher names its message here (``handling``), and every write that
*is* a command's effect goes through ``Database.effect()``, which closes that row in the
same transaction: after a kill either both happened (nothing is replayed) or neither
did (the replay does it once). Effects that outlive the process's memory in git (an
undo) carry the message on their intent instead (``work.open_intent``), and settling the
intent closes it, at run time or at the next start.

A context variable, not a parameter: the effect sits several facades below the
dispatcher, and a task the command spawns inherits it harmlessly (closing a closed row
changes nothing)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

FINISH = "UPDATE inbound SET status='done' WHERE channel=? AND message_id=?"

# (channel, message id) of the command being handled in this task, if any.
_HANDLING: ContextVar[tuple[str, str] | None] = ContextVar("fetch_handling", default=None)


@contextmanager
def handling(channel: str, message_id: str) -> Iterator[None]:
    """While a command's handler runs: its effects close this message's row."""
    token = _HANDLING.set((channel, message_id))
    try:
        yield
    finally:
        _HANDLING.reset(token)


def current() -> tuple[str, str] | None:
    """The message whose command is being handled here; None outside a command."""
    return _HANDLING.get()
