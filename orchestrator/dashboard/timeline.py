"""A chat's timeline from its journal (``sessions/{slug}/session.jsonl``): the messages as
the owner saw them, the orchestrator's tool calls with their durations (role ``tool``)
and the harnesses' events per task (role ``harness``).

Only the tail of a journal is read (``TAIL_BYTES``): a chat of years must not make a
page slow. A line that is not a JSON object (a crash mid-write, a hand edit) is skipped,
never an error page.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.events import SessionKey

TAIL_BYTES = 2 * 1024 * 1024
ROLE_TOOL, ROLE_HARNESS = "tool", "harness"


@dataclass(frozen=True, slots=True)
class Entry:
    ts: float
    role: str  # owner | a sender | fetch | tool | harness
    text: str
    ms: float | None = None  # a tool call's duration
    ok: bool = True
    task: int | None = None
    kind: str = ""  # a harness event's kind (text, tool, done, error, ...)


def session_key(key: str) -> SessionKey | None:
    """``channel:chat`` as the tables write it."""
    channel, sep, chat = key.partition(":")
    return SessionKey(channel, chat) if sep and channel and chat else None


def _entry(raw: Any) -> Entry | None:
    if not isinstance(raw, dict):
        return None
    ts, role, text = raw.get("ts"), raw.get("role"), raw.get("text")
    if not isinstance(ts, int | float) or not isinstance(role, str) or not isinstance(text, str):
        return None
    ms = raw.get("ms")
    task = raw.get("task")
    return Entry(
        float(ts),
        role,
        text,
        float(ms) if isinstance(ms, int | float) else None,
        raw.get("ok") is not False,
        task if isinstance(task, int) else None,
        str(raw.get("kind") or ""),
    )


def read_tail(path: Path, limit: int = TAIL_BYTES) -> tuple[list[Entry], bool]:
    """The journal's entries from its last ``limit`` bytes; True when older ones exist."""
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            start = max(0, size - limit)
            fh.seek(start)
            data = fh.read()
    except OSError:
        return [], False
    lines = data.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first line was cut in the middle
    entries: list[Entry] = []
    for line in lines:
        if not line.strip():
            continue
        try:
            found = _entry(json.loads(line))
        except ValueError:
            continue
        if found is not None:
            entries.append(found)
    return entries, start > 0


# A chat's replay shows the harness's steps, not its streamed prose or token counts (the
# task's own page has every event).
STEP_KINDS = frozenset({"tool_use", "file_change", "done", "error", "question"})
TASK_EVENTS = 1000  # the newest ones a task page lists


def tools_and_events(entries: list[Entry]) -> list[Entry]:
    return [
        e
        for e in entries
        if e.role == ROLE_TOOL or (e.role == ROLE_HARNESS and e.kind in STEP_KINDS)
    ]


def task_events(entries: list[Entry], task_id: int) -> tuple[list[Entry], bool]:
    """The task's events, oldest first: the newest ``TASK_EVENTS``; True when cut."""
    found = [e for e in entries if e.role == ROLE_HARNESS and e.task == task_id]
    return found[-TASK_EVENTS:], len(found) > TASK_EVENTS


__all__ = ["Entry", "read_tail", "session_key", "task_events", "tools_and_events"]
