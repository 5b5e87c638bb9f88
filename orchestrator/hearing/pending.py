"""Voice notes being heard, kept on the host until the gateway has them (issue 23, 1).

A voice note reaches the inbox (orchestrator/store/inbox.py, the durable queue) only as
the words it was heard as; the channel has let go of it before that (WhatsApp acked it,
Telegram's offset moved past it). So from the moment ``Ears`` takes one until the
gateway accepted its words (or it was refused, said), it is kept here: one JSON file per
note in ``FETCH_HOME/hearing/pending`` (0700, files 0600), the message as the gateway
stores it, with the audio file's path (the audio stays where the channel put it until
then). A Fetch killed mid-transcription finds it at the next start: heard again, or,
should its audio be gone, the sender is told it was lost (``Ears.recover``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

from core.events import Inbound
from orchestrator.gateway import from_payload, to_payload

log = logging.getLogger(__name__)


class Pending:
    def __init__(self, folder: Path) -> None:
        self._folder = folder

    def _path(self, inbound: Inbound) -> Path:
        digest = hashlib.sha256(f"{inbound.channel}\0{inbound.message_id}".encode()).hexdigest()
        return self._folder / f"{digest[:32]}.json"

    def keep(self, inbound: Inbound) -> None:
        """Written whole (a temporary file, then a rename): a kill leaves it or not."""
        self._folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = self._path(inbound)
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(to_payload(inbound), fh)
        os.replace(tmp, path)

    def forget(self, inbound: Inbound) -> None:
        try:
            self._path(inbound).unlink()
        except FileNotFoundError:
            pass
        except OSError as err:
            log.warning("pending voice note %s not removed: %s", inbound.message_id, err)

    def left(self) -> list[Inbound]:
        """What a stopped Fetch was still hearing, oldest first (unreadable ones are
        dropped with a log line: nothing can be done with them)."""
        try:
            entries = sorted(self._folder.glob("*.json"))
        except OSError:
            return []
        found: list[Inbound] = []
        for path in entries:
            try:
                inbound = from_payload(json.loads(path.read_text(encoding="utf-8")))
                if path != self._path(inbound):  # under the name ``forget`` removes
                    os.replace(path, self._path(inbound))
                found.append(inbound)
            except (OSError, ValueError, TypeError) as err:
                log.warning("pending voice note %s unreadable, dropped: %s", path.name, err)
                path.unlink(missing_ok=True)
        return sorted(found, key=lambda inbound: inbound.timestamp)
