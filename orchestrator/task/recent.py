"""The files a person sent lately in a chat, for their next task (issue 23, 2): a
screenshot, then "fix this"; a log sent while a task runs; a photo before answering
"Which repo?". Only a task started by the very message that carried a file used to get
it.

Kept per chat in ``FETCH_HOME/sessions/<chat>/recent-files.json`` (on the host, beside
the media folder the channels keep the files in; never in a kennel): each sender's last
``KEEP`` files within ``WITHIN`` seconds, each with who sent it, so a task gets only its
own requester's files. A task's start takes them (once); the file's own copy stays where the
channel kept it. Written whole through a temporary file and a rename, so a crash leaves
the old list or the new one.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from core.events import Attachment, SessionKey
from orchestrator.task.attachments import usable

log = logging.getLogger(__name__)
KEEP = 5  # files per sender in a chat
WITHIN = 600.0  # seconds: older files are not "just sent" any more
FILE = "recent-files.json"


@dataclass(frozen=True, slots=True)
class Recent:
    attachment: Attachment
    sender: str  # the subject who sent it (orchestrator/permissions)
    at: float  # when it was noted (wall clock: it must survive a restart)


class RecentFiles:
    def __init__(self, sessions: Path, clock: Callable[[], float] = time.time) -> None:
        self._sessions = sessions  # FETCH_HOME/sessions
        self._clock = clock

    def _path(self, key: SessionKey) -> Path:
        return self._sessions / key.slug / FILE

    def _load(self, key: SessionKey) -> list[Recent]:
        try:
            raw = json.loads(self._path(key).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as err:
            log.warning("recent files of %s unreadable, starting afresh: %s", key.slug, err)
            return []
        names = {f.name for f in fields(Attachment)}
        found: list[Recent] = []
        for item in raw if isinstance(raw, list) else []:
            try:
                att = Attachment(**{k: v for k, v in item["attachment"].items() if k in names})
                found.append(Recent(att, str(item["sender"]), float(item["at"])))
            except (KeyError, TypeError, ValueError, AttributeError):
                continue  # one bad entry costs only itself
        return found

    def _save(self, key: SessionKey, items: list[Recent]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{FILE}.{os.getpid()}")
        tmp.write_text(json.dumps([asdict(r) for r in items]), encoding="utf-8")
        os.replace(tmp, path)

    def _fresh(self, items: list[Recent]) -> list[Recent]:
        """Within the window, the files still there, each sender's last ``KEEP``: in a
        group, one member sending file after file pushes out only their own."""
        now = self._clock()
        kept = [r for r in items if now - r.at <= WITHIN and os.path.isfile(r.attachment.path)]
        count: dict[str, int] = {}
        last: list[Recent] = []
        for item in reversed(kept):
            count[item.sender] = count.get(item.sender, 0) + 1
            if count[item.sender] <= KEEP:
                last.append(item)
        return last[::-1]

    def note(self, key: SessionKey, sender: str, attachments: tuple[Attachment, ...]) -> int:
        """Keep the images and documents of a message; how many were kept. A message
        seen again (replayed after a task or a restart) keeps its files' first time."""
        new = usable(attachments)
        if not new:
            return 0
        items = self._load(key)
        known = {r.attachment.path for r in items}
        now = self._clock()
        items += [Recent(a, sender, now) for a in new if a.path not in known]
        self._save(key, self._fresh(items))
        return len(new)

    def take(
        self, key: SessionKey, sender: str, already: tuple[Attachment, ...] = ()
    ) -> tuple[Attachment, ...]:
        """The sender's recent files not in ``already`` (the task's own message's), in
        the order they came; all of the sender's are then forgotten (used once)."""
        items = self._load(key)
        if not items:
            return ()
        have = {a.path for a in already}
        mine = [r for r in self._fresh(items) if r.sender == sender]
        rest = [r for r in items if r.sender != sender]
        if len(rest) != len(items):
            self._save(key, self._fresh(rest))
        return tuple(r.attachment for r in mine if r.attachment.path not in have)
