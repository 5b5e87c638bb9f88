"""Append-only conversation log: ``sessions/{channel}_{chat}/session.jsonl``.

SQLite is the source of truth; the journal is the human-readable log the dashboard
and people read. Appends are small and synchronous: one line, flushed, no fsync. Files
stay open (a few, least recently used closed first) because reopening per line cost
more than the rest of an instinct's round trip.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, TextIO

from core.events import SessionKey

OPEN_FILES = 32


class Journal:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._open: OrderedDict[SessionKey, TextIO] = OrderedDict()

    def path(self, key: SessionKey) -> Path:
        return self.root / key.slug / "session.jsonl"

    def _file(self, key: SessionKey) -> TextIO:
        fh = self._open.get(key)
        if fh is not None:
            self._open.move_to_end(key)
            return fh
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = path.open("a", encoding="utf-8")
        self._open[key] = fh
        if len(self._open) > OPEN_FILES:
            _old, oldest = self._open.popitem(last=False)
            oldest.close()
        return fh

    def append(self, key: SessionKey, role: str, text: str, **extra: Any) -> None:
        record = {"ts": round(time.time(), 3), "role": role, "text": text, **extra}
        fh = self._file(key)
        fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        fh.flush()

    def close(self) -> None:
        while self._open:
            _key, fh = self._open.popitem()
            fh.close()
