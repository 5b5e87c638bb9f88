"""Append-only conversation log: ``sessions/{channel}_{chat}/session.jsonl``.

SQLite is the source of truth; the journal is the human-readable log the dashboard
and people read. Appends are small and synchronous: one line, flushed, no fsync.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from orchestrator.events import SessionKey


class Journal:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, key: SessionKey) -> Path:
        return self.root / key.slug / "session.jsonl"

    def append(self, key: SessionKey, role: str, text: str, **extra: Any) -> None:
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {"ts": round(time.time(), 3), "role": role, "text": text, **extra}
        with path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
