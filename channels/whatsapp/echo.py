"""Fetch's own messages coming back as events (the echo), told apart however slow a send.

WhatsApp delivers every message the linked account sends back to it as a ``MessageEv``
with ``IsFromMe``; in the owner's self-chat such an echo looks exactly like the owner
typing. Its id is known only when the send call returns, and the echo may arrive first
(or a send may hang for a long time). So the text of every send is registered here
*before* the call starts: an ``IsFromMe`` event carrying a text that is being sent right
now is the echo (and its id is recorded as Fetch's at once). After the call returns the
id is in the ledger, which catches any later echo by id.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(slots=True)
class _Send:
    text: str
    echoed: bool = False


class PendingSends:
    def __init__(self) -> None:
        self._sends: list[_Send] = []  # in flight; few (sends are paced)

    @contextmanager
    def sending(self, text: str) -> Iterator[None]:
        send = _Send(text)
        self._sends.append(send)
        try:
            yield
        finally:
            self._sends.remove(send)

    def claim(self, text: str) -> bool:
        """True when ``text`` is being sent now: the event carrying it is the echo. One
        echo per send: a second identical event (the owner really typing the same words)
        is not claimed by the same send."""
        for send in self._sends:
            if not send.echoed and send.text == text:
                send.echoed = True
                return True
        return False

    def __len__(self) -> int:
        return len(self._sends)
