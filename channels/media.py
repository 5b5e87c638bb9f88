"""What media Fetch accepts from any channel, and how a received file is kept.

Images, voice notes and documents (text, logs, patches, PDFs), by an allowlist of MIME
types, under each channel's size limit. Files go to
``FETCH_HOME/sessions/{channel}_{chat}/media/`` next to the session's journal, named by
the message id so a replayed message overwrites its own file instead of adding a copy.
Only ever called after the gate (``core/gate.py``): nothing of a stranger is fetched.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from core.events import SessionKey

# base MIME type -> file extension
ACCEPTED: dict[str, dict[str, str]] = {
    "image": {"image/jpeg": ".jpg", "image/png": ".png", "image/webp": ".webp"},
    "audio": {
        "audio/ogg": ".ogg",
        "audio/mpeg": ".mp3",
        "audio/mp4": ".m4a",
        "audio/aac": ".aac",
        "audio/amr": ".amr",
        "audio/wav": ".wav",
        "audio/x-wav": ".wav",
        "audio/webm": ".webm",
    },
    # What a task or the model can read: text in its many names, and PDFs.
    "document": {
        "text/plain": ".txt",
        "text/markdown": ".md",
        "text/csv": ".csv",
        "text/x-diff": ".diff",
        "text/x-patch": ".patch",
        "text/x-log": ".log",
        "application/json": ".json",
        "application/x-yaml": ".yaml",
        "application/pdf": ".pdf",
        "image/png": ".png",
        "image/jpeg": ".jpg",
    },
}
DEFAULT_MIME = {"image": "image/jpeg", "audio": "audio/ogg", "document": "text/plain"}


def base_mime(mime: str) -> str:
    """``"audio/ogg; codecs=opus"`` -> ``"audio/ogg"``."""
    return mime.split(";", 1)[0].strip().lower()


def megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def problem(kind: str, mime: str, size: int, limit: int) -> str | None:
    """Why this media is refused, in words for the owner; None when it is accepted."""
    allowed = ACCEPTED.get(kind)
    if allowed is None:
        return f"{kind} files are not supported (images, voice notes and documents are)"
    if base_mime(mime) not in allowed:
        return f"{base_mime(mime) or 'unknown type'} is not an accepted {kind} type"
    if size > limit:
        return f"{megabytes(size)} is over the {megabytes(limit)} limit"
    return None


def media_dir(sessions_root: Path, key: SessionKey) -> Path:
    return sessions_root / key.slug / "media"


def kind_of(mime: str) -> str | None:
    """The kind a MIME type is accepted as (image before document), None when none."""
    bare = base_mime(mime)
    for kind in ("image", "audio", "document"):
        if bare in ACCEPTED[kind]:
            return kind
    return None


def save(folder: Path, message_id: str, mime: str, kind: str, data: bytes) -> Path:
    """Write ``data`` (owner-only permissions) and return its path."""
    folder.mkdir(parents=True, exist_ok=True)
    safe_id = re.sub(r"[^A-Za-z0-9_-]", "_", message_id)[:80] or "media"
    path = folder / (safe_id + ACCEPTED[kind].get(base_mime(mime), ".bin"))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return path
