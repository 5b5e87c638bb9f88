"""What a kennel may see and change of memory (issue "Trust III" point 4).

The coding CLI in the kennel is assumed hostile (it reads repo content that can steer
it), so memory over /mcp — and the memory put in its prompt — is scoped to its task:
archived conversations only of the task's chat, memories only of the task's subject,
and its writes never change a row someone else wrote.
"""

from __future__ import annotations

KENNEL_PREFIX = "harness:"  # how the relay marks what a CLI in the kennel writes


def from_kennel(source: str) -> bool:
    """A write from a coding CLI (marked by the relay, never by the CLI itself)."""
    return source.startswith(KENNEL_PREFIX)


def archive_threads(chat: str | None) -> tuple[str, ...]:
    """The archive threads a kennel of ``chat`` may read: that chat's own (an archive's
    thread is its session, ``channel:chat``, the store's ``key_str``); none without a
    chat: a task that cannot say whose conversation it is gets no conversation at all."""
    return (chat,) if chat else ()
