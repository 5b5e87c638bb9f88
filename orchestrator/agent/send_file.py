"""Files back to the phone: ``/send <path>`` and the model's ``send_message`` with ``file``.

The path is checked as the read tools check it (``repo_tools.confined``: a relative path,
no ``..``, no ``.git``, resolved after symlinks and still inside the repository), then the
file is opened with ``O_NOFOLLOW`` and read from that descriptor: a regular file only,
bounded by the channel's own limit (the messenger refuses past it, in one line). An image
goes as a picture where the channel shows one, anything else as a document.
"""

from __future__ import annotations

import asyncio
import mimetypes
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import FetchError
from orchestrator.agent.access import repo_of
from orchestrator.agent.repo_tools import confined
from orchestrator.tools import ToolArgumentError, ToolResult

if TYPE_CHECKING:
    from orchestrator.context import Context

# Read at most this much, whatever a channel takes (WhatsApp documents: 100 MB).
READ_LIMIT = 100 * 1024 * 1024


class NotSendable(FetchError):
    """The path cannot be sent: outside the repository, not a file, too big."""


@dataclass(frozen=True, slots=True)
class RepoFile:
    rel: str
    data: bytes
    mime: str

    @property
    def name(self) -> str:
        return Path(self.rel).name


def read_repo_file(root: Path, raw: str, limit: int = READ_LIMIT) -> RepoFile:
    """The bytes of ``raw`` inside ``root``, read safely; ``NotSendable`` with one line."""
    try:
        rel, real = confined(root, raw.strip())
    except ToolArgumentError as err:
        raise NotSendable(str(err)) from None
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise NotSendable(f"no file {rel!r} in the repository") from None
    except OSError as err:
        raise NotSendable(f"{rel!r} cannot be read ({err.strerror})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # a folder, a FIFO, a device
        os.close(fd)
        raise NotSendable(f"{rel!r} is not a file")
    with os.fdopen(fd, "rb") as fh:
        if info.st_size > limit:
            raise NotSendable(
                f"{rel!r} is {info.st_size / 2**20:.1f} MB; the limit is {limit / 2**20:.0f} MB"
            )
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise NotSendable(f"{rel!r} grew past {limit / 2**20:.0f} MB while being read")
    return RepoFile(rel, data, mime_of(rel))


# What the host's mime table may not know, but a phone should open as text.
TEXT_SUFFIXES = frozenset(
    {".log", ".patch", ".diff", ".md", ".txt", ".yaml", ".yml", ".toml", ".ini", ".cfg"}
)


def mime_of(rel: str) -> str:
    if Path(rel).suffix.lower() in TEXT_SUFFIXES:
        return "text/plain"
    return mimetypes.guess_type(rel)[0] or "application/octet-stream"


async def send_repo_file(ctx: Context, repo: str, raw: str, caption: str = "") -> str:
    """Send ``raw`` of ``repo`` to the chat of ``ctx``; the line that says so."""
    if not raw.strip():
        raise NotSendable("name a file: /send <path>, e.g. /send README.md")
    root = ctx.services.workspace.path(repo)
    found = await asyncio.to_thread(read_repo_file, root, raw)
    await ctx.services.messenger.send_file(
        ctx.session.key, found.name, found.data, found.mime, caption=caption
    )
    return f"📎 Sent {found.rel} of {repo}."


async def send_file(ctx: Context, args: dict[str, Any], caption: str) -> ToolResult:
    """The model's way to send a file: ``send_message`` with ``file`` (and ``repo``)."""
    repo = repo_of(ctx, args)
    try:
        line = await send_repo_file(ctx, repo, str(args["file"]), caption)
    except FetchError as err:  # NotSendable, or the channel's own limit
        raise ToolArgumentError(str(err)) from None
    return ToolResult(line)
