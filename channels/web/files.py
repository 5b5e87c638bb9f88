"""Files in the web chat: what the owner uploads (an audio file, a screenshot, a log),
and what Fetch sends back (``/send``).

Uploads (``POST /chat/upload``, multipart: ``file``, optional ``text`` and ``id``) are read
as a stream, refused past ``UPLOAD_LIMIT`` or for a type Fetch does not read (the
channels' shared list, ``channels/media.py``), and kept like any channel's media in
``FETCH_HOME/sessions/<chat>/media``. Files sent back are kept under an unguessable
token in ``FETCH_HOME/web-files`` and served only to the web token's holder at
``/chat/files/<token>/<name>``: an image inline, anything else as a download, never as a
page (``application/octet-stream``, ``nosniff``), so a file cannot run script here.
"""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from aiohttp import BodyPartReader, MultipartReader

from channels import media

UPLOAD_LIMIT = 25 * 1024 * 1024
SHOWN_INLINE = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})
LINK = re.compile(r"^/chat/files/([0-9a-f]{32})/([A-Za-z0-9._-]{1,120})$")
SAFE = re.compile(r"[^A-Za-z0-9._-]")


class UploadRefused(Exception):
    """One line for the page: why the upload is not taken."""


@dataclass(frozen=True, slots=True)
class Upload:
    kind: str
    mime: str
    name: str
    data: bytes
    text: str
    client_id: str


async def read_upload(reader: MultipartReader, limit: int = UPLOAD_LIMIT) -> Upload:
    fields: dict[str, str] = {}
    found: tuple[str, str, bytes] | None = None
    data = bytearray()
    async for part in reader:
        if not isinstance(part, BodyPartReader):
            continue
        if part.name == "file":
            mime = media.base_mime(part.headers.get("Content-Type", ""))
            data.clear()
            while chunk := await part.read_chunk(65536):
                data += chunk
                if len(data) > limit:
                    raise UploadRefused(
                        f"the file is over the {media.megabytes(limit)} limit of the web chat"
                    )
            found = (part.filename or "file", mime, bytes(data))
        elif part.name in ("text", "id", "csrf"):
            fields[part.name] = (await part.text())[:20_000]
    if found is None or not found[2]:
        raise UploadRefused("no file in the upload")
    name, mime, body = found
    kind = media.kind_of(mime)
    if kind is None:
        raise UploadRefused(
            f"{mime or 'that type'} is not a file Fetch reads (images, audio, text, PDF)"
        )
    return Upload(kind, mime, name, body, fields.get("text", ""), fields.get("id", ""))


class SentFiles:
    """Files Fetch sent to the page, kept under ``root`` (0700) by token."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def keep(self, name: str, data: bytes) -> str:
        """Store ``data``; the page's link to it."""
        token = secrets.token_hex(16)
        safe = SAFE.sub("_", Path(name).name).lstrip(".")[:120] or "file"
        folder = self.root / token
        folder.mkdir(parents=True, mode=0o700)
        os.chmod(self.root, 0o700)
        fd = os.open(folder / safe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        return f"/chat/files/{token}/{safe}"

    def find(self, token: str, name: str) -> Path | None:
        if not LINK.match(f"/chat/files/{token}/{name}"):
            return None
        path = self.root / token / name
        return path if path.is_file() and not path.is_symlink() else None
