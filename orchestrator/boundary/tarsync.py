"""A folder that came back from a remote kennel as a tar, written into Fetch's own copy.

A kennel on another Docker engine hands its run's tree back as the engine's archive of
it (``get_archive``). The archive is as hostile as the tree it was made from, and the
engine may be too: every member is checked before anything is written (``plan``), then
the destination (a folder of Fetch's that no kennel ever saw) is brought in step with it
(``apply``), one ``O_NOFOLLOW`` step at a time, nothing extracted by ``tarfile``:

* names: relative, below the archive's top folder, no ``.``/``..``/empty parts, within
  a depth; a ``.git`` anywhere is never written (nothing of a repository's own comes
  from a kennel);
* kinds: folders, regular files and symlinks (a link's target is data: it is written as
  a link, never followed; ``changeset`` later leaves out links that leave the tree); a
  hard link becomes a copy of the file it names; FIFOs, devices and sockets are left
  out, by name;
* modes: 0755/0644 by the owner's execute bit, nothing else (no setuid, no owners);
* sizes: each file and the whole archive bounded, checked from the headers first.

An entry whose bytes and mode are already what the destination holds is left alone, so
its inode's change time stays before the run began, and ``changeset.scan_copy`` reads
only what the kennel changed.
"""

from __future__ import annotations

import os
import stat
import tarfile
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from secrets import token_hex
from typing import IO

from orchestrator.boundary.walk import Limits, Refused, Tree, shown

FILE_WRITE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# tarfile reads an extended header (pax records, a GNU long name) whole into memory, at
# about three times its size, before anything can look at it; the engine's tar code
# (Go's archive/tar) reads none over 1 MiB either. Sparse members: no engine writes one,
# and tarfile reads their maps (GNU's, block after block) into memory too.
MAX_HEADER = 1 << 20
# Extended headers before one member: tarfile reads each chained one recursively (a long
# chain of empty ones ends in RecursionError); an engine writes one or two.
MAX_CHAIN = 8
_EXTENDED = (
    tarfile.XHDTYPE,
    tarfile.XGLTYPE,
    tarfile.SOLARIS_XHDTYPE,
    tarfile.GNUTYPE_LONGNAME,
    tarfile.GNUTYPE_LONGLINK,
)


class _Bounded(tarfile.TarInfo):
    """A member header that tarfile may expand only within ``MAX_HEADER``.
    (ReadError: tarfile takes most header errors past the first member for the
    archive's end, silently.)"""

    def _proc_member(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise tarfile.ReadError("a sparse member (no engine writes one)")
        # The chain of extended headers before this member: their count and bytes.
        count, spent = getattr(tarfile_, "_fetch_chain", (0, 0))
        if self.type in _EXTENDED:
            count, spent = count + 1, spent + self.size
            if spent > MAX_HEADER or count > MAX_CHAIN:
                raise tarfile.ReadError(f"{count} extended headers of {spent:,} bytes")
            tarfile_._fetch_chain = (count, spent)  # type: ignore[attr-defined]
        else:
            tarfile_._fetch_chain = (0, 0)  # type: ignore[attr-defined]
        return super()._proc_member(tarfile_)  # type: ignore[misc,no-any-return]

    def _proc_gnusparse_10(self, *_args: object) -> None:
        raise tarfile.ReadError("a sparse member (no engine writes one)")


@dataclass(frozen=True, slots=True)
class Entry:
    path: str  # below the top folder, '/'-separated
    kind: str  # "dir", "file" or "link"
    mode: int  # 0o755 or 0o644 (folders 0o755)
    member: tarfile.TarInfo | None = None  # where a file's bytes are
    target: str = ""  # a link's
    # A file over the size limit that is the one sent (``Unchanged``): left as it is
    # here, never read.
    kept: bool = False


@dataclass
class Plan:
    entries: list[Entry] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Synced:
    written: int  # files and links (re)written
    removed: int  # entries the archive no longer has
    left_out: tuple[str, ...]


def _parts(name: str, top: str, depth: int) -> list[str] | None:
    """``name``'s parts below ``top`` ([] for ``top`` itself); None if it is not below
    it. ``Refused`` for a name no engine makes of a real folder."""
    if "\0" in name or name.startswith("/"):
        raise Refused(f"the returned archive names {shown(name)}")
    parts = name.rstrip("/").split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise Refused(f"the returned archive names {shown(name)}")
    if any(len(p.encode("utf-8", "surrogateescape")) > 255 for p in parts):
        raise Refused(f"the returned archive names {shown(name)}: a part is too long")
    if parts[0] != top:
        return None
    if len(parts) - 1 > depth:
        raise Refused(f"{shown(name)} is more than {depth} folders deep; I won't read it")
    return parts[1:]


# Whether a file over the size limit is the one that was sent (path, its member): a
# repository may commit a file bigger than any change may be, and it travels both ways.
Unchanged = Callable[[str, tarfile.TarInfo], bool]


def plan(
    tar: tarfile.TarFile,
    top: str,
    limits: Limits,
    total_bytes: int,
    unchanged: Unchanged | None = None,
) -> Plan:
    """Every member of ``tar`` checked, nothing written; ``Refused`` past a bound."""
    out = Plan()
    files: dict[str, tarfile.TarInfo] = {}  # by full name: what a hard link may name
    seen: set[str] = set()
    folders: set[str] = set()
    total = 0
    count = 0
    for member in tar:
        count += 1
        if count > limits.entries:
            raise Refused(f"the kennel left more than {limits.entries:,} entries")
        parts = _parts(member.name, top, limits.depth)
        if parts is None:
            out.left_out.append(f"{shown(member.name)} (outside the run's folder)")
            continue
        if not parts:
            if not member.isdir():  # the top replaced by a link, a file
                raise Refused(f"the returned {shown(top)} is not a folder")
            continue  # the top folder itself: it exists on this side
        path = "/".join(parts)
        if _git(path):
            if parts[-1].lower() == ".git":
                out.left_out.append(f"{shown(path)} (a git repository's folder)")
            continue
        if path in seen:
            raise Refused(f"the returned archive names {shown(path)} twice")
        if len(parts) > 1 and "/".join(parts[:-1]) not in folders:
            raise Refused(f"the returned archive has {shown(path)} before its folder")
        seen.add(path)
        executable = 0o755 if member.mode & stat.S_IXUSR else 0o644
        if member.isdir():
            folders.add(path)
            out.entries.append(Entry(path, "dir", 0o755))
        elif member.isreg():
            if member.size > limits.file_bytes:
                if unchanged is None or not unchanged(path, member):
                    raise Refused(f"{shown(path)} is {member.size:,} bytes, over the limit")
                out.entries.append(Entry(path, "file", executable, kept=True))
                continue
            total += member.size
            files[member.name.rstrip("/")] = member
            out.entries.append(Entry(path, "file", executable, member))
        elif member.issym():
            out.entries.append(Entry(path, "link", 0o777, target=member.linkname))
        elif member.islnk():
            # A hard link is the bytes of a file named earlier: a copy, never a link.
            source = files.get(member.linkname.rstrip("/"))
            if source is None:
                out.left_out.append(f"{shown(path)} (a hard link to nothing it sent)")
                continue
            total += source.size
            out.entries.append(Entry(path, "file", executable, source))
        else:
            kind = "a FIFO" if member.isfifo() else "a device" if member.isdev() else "odd"
            out.left_out.append(f"{shown(path)} ({kind})")
        if total > total_bytes:
            raise Refused(f"the returned tree is over {total_bytes // (1 << 20)} MB")
    return out


def apply(
    tar: tarfile.TarFile,
    steps: Plan,
    dest: str,
    limits: Limits,
    keep: frozenset[str] = frozenset(),
) -> Synced:
    """Bring ``dest`` (Fetch's own folder) in step with ``steps``: what differs is
    rewritten, what the archive lacks is removed (but a ``.git`` there, and the paths in
    ``keep``: what was never sent, so could not come back). A kept folder is not entered:
    what is below it is kept with it, whatever the archive says of it."""
    wanted = {e.path: e for e in steps.entries}
    written = removed = 0
    with Tree(dest) as tree:
        # What is there and should not be, or is of another kind: deepest first.
        gone: list[tuple[str, bool]] = []
        for found in tree.walk(limits, lambda f: not _git(f.path) and f.path not in keep):
            if _git(found.path):
                continue
            entry = wanted.get(found.path)
            if entry is None and found.path in keep:
                continue
            if entry is None or entry.kind != found.kind:
                gone.append((found.path, found.kind == "dir"))
        skip = ""
        for path, is_dir in gone:  # parents first: below a removed folder, nothing else
            if skip and path.startswith(skip):
                continue
            _remove(tree, path, is_dir, limits)
            removed += 1
            skip = path + "/" if is_dir else ""
        for entry in sorted(steps.entries, key=lambda e: e.path.split("/")):
            if _write(tar, tree, entry, limits):
                written += 1
    return Synced(written, removed, tuple(steps.left_out))


def sync(
    fileobj: IO[bytes],
    top: str,
    dest: str,
    limits: Limits,
    total_bytes: int,
    keep: frozenset[str] = frozenset(),
) -> Synced:
    """``plan`` then ``apply``: the archive in ``fileobj`` (seekable), its folder ``top``
    made the contents of ``dest``. ``Refused`` leaves ``dest`` as it was."""

    def same(path: str, member: tarfile.TarInfo) -> bool:
        # Sent with mtime 0 (remote_files.py), still that size and time there, and the
        # same size here: the file that was sent. (A kennel that rewrote it in place and
        # set its time back loses its own change, which was over the limit anyway.)
        with Tree(dest) as tree:
            st = tree.lstat(path)
        return (
            member.mtime == 0
            and st is not None
            and stat.S_ISREG(st.st_mode)
            and st.st_size == member.size
        )

    try:
        with tarfile.open(fileobj=fileobj, mode="r:", tarinfo=_Bounded) as tar:
            steps = plan(tar, top, limits, total_bytes, same)
            return apply(tar, steps, dest, limits, keep)
    except (tarfile.TarError, EOFError, ValueError) as err:
        raise Refused(f"the returned archive is not readable: {err}") from err


def _git(path: str) -> bool:
    return any(p.lower() == ".git" for p in path.split("/"))


def _remove(tree: Tree, path: str, is_dir: bool, limits: Limits) -> None:
    fd, name = tree._parent(path)
    try:
        if not is_dir:
            os.unlink(name, dir_fd=fd)
            return
        with Tree(f"/proc/self/fd/{fd}/{name}") as below:
            # Iteratively (any depth), children before their folders.
            found = list(below.walk(limits))
            for item in reversed(found):
                sub_fd, sub_name = below._parent(item.path)
                try:
                    if item.kind == "dir":
                        os.rmdir(sub_name, dir_fd=sub_fd)
                    else:
                        os.unlink(sub_name, dir_fd=sub_fd)
                finally:
                    os.close(sub_fd)
        os.rmdir(name, dir_fd=fd)
    finally:
        os.close(fd)


def _write(tar: tarfile.TarFile, tree: Tree, entry: Entry, limits: Limits) -> bool:
    """Make ``entry`` so; False when it already was."""
    fd, name = tree._parent(entry.path)
    try:
        try:
            st: os.stat_result | None = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if entry.kind == "dir":
            if st is None:
                os.mkdir(name, entry.mode, dir_fd=fd)
            return False
        if entry.kept:
            return False
        if entry.kind == "link":
            if st is not None and os.readlink(name, dir_fd=fd) == entry.target:
                return False
            _replace(fd, name, lambda tmp: os.symlink(entry.target, tmp, dir_fd=fd))
            return True
        assert entry.member is not None
        source = tar.extractfile(entry.member)
        if source is None:
            raise Refused(f"{shown(entry.path)} has no bytes in the archive")
        data = source.read(limits.file_bytes + 1)
        if len(data) > limits.file_bytes:
            raise Refused(f"{shown(entry.path)} is over the limit")
        if st is not None and stat.S_ISREG(st.st_mode):
            same = (st.st_mode & 0o777) == entry.mode and st.st_size == len(data)
            if same and tree.read(entry.path, st, limits.file_bytes) == data:
                return False

        def make(tmp: str) -> None:
            out = os.open(tmp, FILE_WRITE, entry.mode, dir_fd=fd)
            with os.fdopen(out, "wb") as handle:
                handle.write(data)
            os.chmod(tmp, entry.mode, dir_fd=fd, follow_symlinks=False)

        _replace(fd, name, make)
        return True
    except OSError as err:
        raise Refused(f"could not write {shown(entry.path)}: {err.strerror or err}") from err
    finally:
        os.close(fd)


def _replace(fd: int, name: str, make: Callable[[str], None]) -> None:
    """Make the entry under a fresh name beside ``name``, then rename it over."""
    tmp = f".fetch-sync-{token_hex(6)}"
    try:
        make(tmp)
        os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp, dir_fd=fd)
        raise


__all__ = ["Entry", "Plan", "Synced", "Unchanged", "apply", "plan", "sync"]
