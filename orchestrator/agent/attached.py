"""What the owner sent with a message, as the orchestrator model reads it.

The turn's user message becomes content parts: the words, then each image as an
``image_url`` part (a data URL, at most ``IMAGE_BYTES``) and each text file inline (at
most ``TEXT_CHARS``, said when cut). An image part carries ``fetch_alt``, the line that
stands for it: ``for_endpoint`` sends the part to an endpoint whose settings say it
takes images (``images: true``) and the line to any other, so a chain can fall back from
a vision model to one without. ``fetch_alt`` never leaves Fetch.
"""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path
from typing import Any

from core.events import Attachment

IMAGE_BYTES = 5 * 1024 * 1024  # what the common hosted APIs take per image
TEXT_CHARS = 32 * 1024
ALT = "fetch_alt"
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})


def _read(path: str, limit: int) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return None
        return fh.read(limit + 1)


def _label(att: Attachment) -> str:
    return att.name or Path(att.path).name


def _part(att: Attachment) -> dict[str, Any]:
    label = _label(att)
    if att.kind == "image":
        alt = f"[the owner sent an image, {label}; this model is not shown images]"
        data = _read(att.path, IMAGE_BYTES) if att.mime in IMAGE_TYPES else None
        if data is None or len(data) > IMAGE_BYTES:
            return {"type": "text", "text": f"[the owner sent an image, {label}, too big to show]"}
        url = f"data:{att.mime};base64,{base64.b64encode(data).decode()}"
        return {"type": "image_url", "image_url": {"url": url}, ALT: alt}
    raw = (
        _read(att.path, TEXT_CHARS)
        if att.mime.startswith("text/")
        or att.mime
        in (
            "application/json",
            "application/x-yaml",
        )
        else None
    )
    if raw is None:
        return {
            "type": "text",
            "text": f"[the owner sent a file, {label} ({att.mime or 'unknown type'}); "
            "a task it starts gets it as an attachment]",
        }
    text = raw[:TEXT_CHARS].decode("utf-8", errors="replace")
    cut = " (cut)" if len(raw) > TEXT_CHARS else ""
    return {"type": "text", "text": f"[the owner sent {label}{cut}]\n```\n{text}\n```"}


def user_content(text: str, attachments: tuple[Attachment, ...]) -> str | list[dict[str, Any]]:
    """The turn's user content: ``text`` alone, or parts when files came with it."""
    shown = [a for a in attachments if a.kind in ("image", "document") and a.path and not a.refused]
    if not shown:
        return text
    return [{"type": "text", "text": text}, *(_part(a) for a in shown)]


def for_endpoint(messages: list[Any], images: bool) -> list[Any]:
    """``messages`` as one endpoint is sent them: image parts kept (without ``fetch_alt``)
    where it takes images, else their line instead. Untouched when nothing has parts."""
    if not any(isinstance(m, dict) and isinstance(m.get("content"), list) for m in messages):
        return messages
    out: list[Any] = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            out.append(message)
            continue
        parts: list[Any] = []
        for part in content:
            if isinstance(part, dict) and ALT in part:
                if images:
                    parts.append({k: v for k, v in part.items() if k != ALT})
                else:
                    parts.append({"type": "text", "text": part[ALT]})
            else:
                parts.append(part)
        out.append({**message, "content": parts})
    return out
