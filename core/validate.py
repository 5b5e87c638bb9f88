"""Input validation shared by every channel: names a person sends must never escape."""

from __future__ import annotations

import re
import unicodedata
from pathlib import PurePosixPath
from urllib.parse import unquote

from core.errors import FetchError

MAX_NAME = 255
_DRIVE = re.compile(r"^[A-Za-z]:")


class UnsafeName(FetchError):
    pass


def safe_relative_path(raw: str, *, max_parts: int = 32) -> str:
    """A path relative to a root, or ``UnsafeName`` saying why not.

    Refuses absolute paths, ``..`` anywhere, NUL and control characters, backslashes,
    drive letters, and the same tricks hidden behind percent-encoding or Unicode
    look-alikes (NFKC folds fullwidth dots and slashes into real ones before checking).
    """
    if not raw or len(raw) > 4096:
        raise UnsafeName("a file name must be 1 to 4096 characters")
    text = raw
    for _ in range(3):  # %252e%252e → %2e%2e → ..
        decoded = unquote(text)
        if decoded == text:
            break
        text = decoded
    text = unicodedata.normalize("NFKC", text)
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise UnsafeName("control characters are not allowed in a file name")
    if "\\" in text:
        raise UnsafeName("backslashes are not allowed in a file name")
    if text.startswith(("/", "~")) or _DRIVE.match(text):
        raise UnsafeName("absolute paths are not allowed; name a file inside the repo")
    parts = [p for p in PurePosixPath(text).parts if p not in ("", ".")]
    if not parts:
        raise UnsafeName("that is not a file name")
    if any(p == ".." for p in parts):
        raise UnsafeName("'..' is not allowed in a file name")
    if len(parts) > max_parts or any(len(p) > MAX_NAME for p in parts):
        raise UnsafeName("that file name is too long")
    if parts[0] == ".git":
        raise UnsafeName(".git is not shown or touched")
    return "/".join(parts)
