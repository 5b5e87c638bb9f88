"""The files the owner sent with a task: copied into the run's ``attachments/`` (beside
its tree, never in the repository: ``Layer.attach``), shown read-only to the CLI, and
named in the prompt, each with what it is, so every CLI knows where to look (Claude Code
reads an image file as an image; the others read what they can)."""

from __future__ import annotations

from pathlib import Path

from core.events import Attachment
from orchestrator.boundary.layer import Layer

KINDS = {"image": "an image: open it to see it", "document": "a file"}


def usable(attachments: tuple[Attachment, ...]) -> tuple[Attachment, ...]:
    """Images and documents that arrived (audio became words; a refused one is gone)."""
    return tuple(a for a in attachments if a.kind in KINDS and a.path and not a.refused)


def copy_in(layer: Layer, attachments: tuple[Attachment, ...]) -> list[str]:
    """Into the run's folder; the names given there, in order."""
    files = [(a.name or Path(a.path).name, Path(a.path)) for a in attachments]
    return layer.attach(files)


def prompt_note(seen: Path, names: list[str], attachments: tuple[Attachment, ...]) -> str:
    lines = [
        "The owner attached these files (read-only, outside the repository; do not copy "
        "them into it unless asked):"
    ]
    for name, att in zip(names, attachments, strict=False):
        what = KINDS.get(att.kind, "a file")
        mime = f", {att.mime}" if att.mime else ""
        lines.append(f"- {seen / name} ({what}{mime})")
    return "\n".join(lines)


def earlier_line(files: tuple[Attachment, ...]) -> str:
    """The card's line for files sent before the task's own message."""
    names = ", ".join(a.name or Path(a.path).name for a in files)
    return f"📎 with what you sent just before: {names}"
