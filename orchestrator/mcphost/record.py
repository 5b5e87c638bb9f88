"""The record of the owner's MCP calls (``FETCH_HOME/mcp.jsonl``, one JSON line each:
at, task, chat, server, tool, outcome, ms), and the dashboard's reading of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TAIL_BYTES = 1 << 20  # the part of the record a page reads: the latest calls


def calls_of(path: Path, task_id: int, limit: int = 200) -> list[dict[str, Any]]:
    """The calls of task ``task_id`` among the latest, oldest first (bad lines skipped)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - TAIL_BYTES))
            raw = fh.read()
    except OSError:
        return []
    out: list[dict[str, Any]] = []
    for line in raw.splitlines()[1 if size > TAIL_BYTES else 0 :]:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("task") == task_id:
            out.append(entry)
    return out[-limit:]


__all__ = ["calls_of"]
