"""Reading a folder a kennel wrote, as data: iteratively, within bounds, following nothing.

Every directory is opened relative to its parent's descriptor with ``O_NOFOLLOW``, so a
link anywhere in the tree is reported as a link, never entered; the walk keeps an
explicit stack (a 1,100-deep folder raises ``RecursionError`` in ``os.walk`` and
``shutil.rmtree``), and stops with ``Refused`` past a depth, an entry count or a byte
budget. A file's bytes are read through a descriptor opened the same way, checked to be
the regular file the walk saw (a FIFO never blocks the host: ``O_NONBLOCK``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass

from core.errors import GitError

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# Only the trusted namespace: the host mounts overlays as root, where a ``user.`` xattr
# (which the kennel's own uid may set) means nothing to the kernel and nothing here.
OPAQUE = ("trusted.overlay.opaque",)


class Refused(GitError):
    """What a kennel left cannot be read safely; nothing of the owner's was touched."""


@dataclass(frozen=True, slots=True)
class Limits:
    depth: int = 128  # folders deep
    entries: int = 400_000  # everything walked (a copy holds the whole tree)
    changes: int = 20_000  # paths that differ from the base
    file_bytes: int = 100 * 1024 * 1024  # one file (st_size: a sparse file counts whole)
    total_bytes: int = 512 * 1024 * 1024  # every changed file together


@dataclass(frozen=True, slots=True)
class Found:
    path: str  # relative, '/'-separated, as the bytes on disk decode (surrogateescape)
    st: os.stat_result
    opaque: bool = False  # an overlay folder that hides everything below it in the lower

    @property
    def kind(self) -> str:
        mode = self.st.st_mode
        if stat.S_ISREG(mode):
            return "file"
        if stat.S_ISLNK(mode):
            return "link"
        if stat.S_ISDIR(mode):
            return "dir"
        if stat.S_ISCHR(mode) and self.st.st_rdev == 0:
            return "whiteout"  # an overlay's mark of a deletion
        if stat.S_ISFIFO(mode):
            return "a FIFO"
        if stat.S_ISSOCK(mode):
            return "a socket"
        return "a device"


class Tree:
    """A folder opened once (``O_NOFOLLOW``); everything below is read relative to it."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self.fd = os.open(self.path, DIR_FLAGS)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Tree:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def walk(self, limits: Limits, enter: Callable[[Found], bool] | None = None) -> Iterator[Found]:
        """Every entry, parents before children; folders are yielded and entered (those
        ``enter`` says yes to, when given)."""
        count = 0
        root = os.dup(self.fd)
        stack: list[tuple[int, str, Iterator[os.DirEntry[str]]]] = [(root, "", os.scandir(root))]
        try:
            while stack:
                fd, rel, entries = stack[-1]
                entry = next(entries, None)
                if entry is None:
                    stack.pop()
                    with suppress(OSError):
                        entries.close()  # type: ignore[attr-defined]
                    os.close(fd)
                    continue
                count += 1
                if count > limits.entries:
                    raise Refused(f"the kennel left more than {limits.entries:,} entries")
                path = f"{rel}{entry.name}"
                st = os.stat(entry.name, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISDIR(st.st_mode):
                    yield Found(path, st)
                    continue
                if len(stack) > limits.depth:
                    raise Refused(
                        f"{shown(path)} is more than {limits.depth} folders deep; I won't read it"
                    )
                child = os.open(entry.name, DIR_FLAGS, dir_fd=fd)
                seen = os.fstat(child)
                if (seen.st_dev, seen.st_ino) != (st.st_dev, st.st_ino):
                    os.close(child)
                    raise Refused(f"{shown(path)} changed while I read it")
                found = Found(path, st, opaque=_opaque(child))
                yield found
                if enter is not None and not enter(found):
                    os.close(child)
                    continue
                stack.append((child, path + "/", os.scandir(child)))
        finally:
            for fd, _rel, entries in stack:
                with suppress(OSError):
                    entries.close()  # type: ignore[attr-defined]
                with suppress(OSError):
                    os.close(fd)

    def lstat(self, path: str) -> os.stat_result | None:
        """The entry at ``path`` (no link followed on the way), or None."""
        try:
            fd, name = self._parent(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            return os.stat(name, dir_fd=fd, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return None
        finally:
            os.close(fd)

    def read(self, path: str, expect: os.stat_result, limit: int) -> bytes:
        """The bytes of the regular file at ``path``, the one ``expect`` describes."""
        if expect.st_size > limit:
            raise Refused(f"{shown(path)} is {expect.st_size:,} bytes, over the limit")
        fd, name = self._parent(path)
        try:
            file_fd = os.open(name, FILE_FLAGS, dir_fd=fd)
        finally:
            os.close(fd)
        try:
            st = os.fstat(file_fd)
            if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (
                expect.st_dev,
                expect.st_ino,
            ):
                raise Refused(f"{shown(path)} changed while I read it")
            chunks: list[bytes] = []
            left = min(st.st_size, limit) + 1
            while left > 0:
                chunk = os.read(file_fd, min(left, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            data = b"".join(chunks)
            if len(data) > limit:
                raise Refused(f"{shown(path)} grew over the limit while I read it")
            return data
        finally:
            os.close(file_fd)

    def readlink(self, path: str) -> str:
        fd, name = self._parent(path)
        try:
            return os.readlink(name, dir_fd=fd)
        finally:
            os.close(fd)

    def move(self, path: str, dest: Tree) -> None:
        """Rename the entry at ``path`` to the same path below ``dest`` (whose folders
        exist): both ends reached one ``O_NOFOLLOW`` step at a time, nothing read."""
        src_fd, name = self._parent(path)
        try:
            dst_fd, dst_name = dest._parent(path)
            try:
                os.rename(name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
            finally:
                os.close(dst_fd)
        finally:
            os.close(src_fd)

    def _parent(self, path: str) -> tuple[int, str]:
        """A descriptor of ``path``'s folder, reached one ``O_NOFOLLOW`` step at a time."""
        *folders, name = path.split("/")
        fd = os.dup(self.fd)
        try:
            for part in folders:
                nxt = os.open(part, DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = nxt
        except BaseException:
            os.close(fd)
            raise
        return fd, name


def _opaque(fd: int) -> bool:
    for name in OPAQUE:
        with suppress(OSError):
            if os.getxattr(fd, name) == b"y":
                return True
    return False


def shown(path: str) -> str:
    """A path fit for a phone: cut, control characters escaped."""
    text = path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    text = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)
    return text if len(text) <= 120 else text[:60] + "…" + text[-50:]


__all__ = ["Found", "Limits", "Refused", "Tree", "shown"]
