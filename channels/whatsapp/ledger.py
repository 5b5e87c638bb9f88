"""What the WhatsApp adapter must remember across restarts, in one small JSON file.

* ``chats``: chats that wrote to Fetch. Fetch never starts a conversation with anyone
  else (WhatsApp bans numbers that message strangers), so a send to any other chat is
  refused; the one exception is the owner's own direct chat, from ``whatsapp.owner``. Kept on disk
  because replies to messages replayed after a restart, and scheduled jobs, must still
  reach the owner's chat.
* ``sent``: ids of the messages Fetch sent, newest last, bounded. They tell an echo of
  Fetch's own message apart from the owner typing in the self-chat, and a 👍 on a diff
  (which must survive a restart, like the pending approval it answers) from a 👍 on
  anything else.
* ``lids``: LID -> phone number, learned from events that carried both forms of an
  allowed sender (never a stranger's: nothing of theirs is kept), so a later message
  with only the LID is still recognised as the owner's or a member's.

Writes are atomic (temp file + rename) and owner-only; sends are paced to a few a
minute, so rewriting the file on each is cheap.
"""

from __future__ import annotations

import json
import logging
import os
from collections import OrderedDict
from pathlib import Path

log = logging.getLogger(__name__)
MAX_SENT = 2000


class Ledger:
    def __init__(self, path: Path | None, max_sent: int = MAX_SENT) -> None:
        self._path = path
        self._max_sent = max_sent
        self._chats: set[str] = set()
        self._sent: OrderedDict[str, str] = OrderedDict()  # message id -> chat
        self._lids: dict[str, str] = {}  # LID user -> phone digits
        if path is not None:
            self._load(path)

    def _load(self, path: Path) -> None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as err:
            # A damaged file must not stop Fetch; it only forgets who wrote first.
            log.warning("whatsapp ledger %s unreadable (%s); starting empty", path, err)
            return
        self._chats = {str(c) for c in data.get("chats", [])}
        for item in data.get("sent", [])[-self._max_sent :]:
            self._sent[str(item[0])] = str(item[1])
        lids = data.get("lids", {})
        if isinstance(lids, dict):
            self._lids = {str(k): str(v) for k, v in lids.items()}

    def _save(self) -> None:
        if self._path is None:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._path.with_suffix(".tmp")
        payload = {
            "chats": sorted(self._chats),
            "sent": [[mid, chat] for mid, chat in self._sent.items()],
            "lids": dict(sorted(self._lids.items())),
        }
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh)
        os.replace(tmp, self._path)

    def wrote(self, chat: str) -> bool:
        return chat in self._chats

    def record_wrote(self, chat: str) -> None:
        if chat not in self._chats:
            self._chats.add(chat)
            self._save()

    @property
    def lids(self) -> dict[str, str]:
        return self._lids

    def record_lid(self, lid: str, number: str) -> None:
        if lid and number and self._lids.get(lid) != number:
            self._lids[lid] = number
            self._save()

    def sent_by_fetch(self, message_id: str) -> bool:
        return message_id in self._sent

    def __contains__(self, message_id: object) -> bool:
        return message_id in self._sent

    def record_sent(self, message_id: str, chat: str) -> None:
        if not message_id:
            return
        self._sent[message_id] = chat
        self._sent.move_to_end(message_id)
        while len(self._sent) > self._max_sent:
            self._sent.popitem(last=False)
        self._save()
