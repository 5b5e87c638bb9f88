"""What a run changed, read from its layer as data and turned into a git tree.

Two readers, one result. An overlay's upper folder *is* the change: each file there is
new or changed, a character device 0:0 (a whiteout) is a deletion, an opaque folder
replaces the lower one. A copy is compared with the base it was made from: an entry
whose inode changed after the copy was made (``st_ctime``, which no program can set
back) is read, and a base path missing from the copy is a deletion.

Only regular files (executable or not) and symlinks that stay inside the tree become
part of the change, as blobs written from the bytes read; everything else (FIFOs,
sockets, devices, a nested ``.git``, whatever the owner's ignore rules ignore) is left
out and named on the card. Setuid bits and owners do not exist in git: the owner's
files are later written by git with 0644 or 0755.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field

from orchestrator.boundary.gitops import Change, Repo
from orchestrator.boundary.gittree import escapes
from orchestrator.boundary.walk import Found, Limits, Refused, Tree, shown

ZERO = "0" * 40


@dataclass
class Scan:
    """What differs from the base, found by ``lstat`` alone: entries to read (files and
    links), deletions, and what is left out and why. Nothing is read yet."""

    found: list[Found] = field(default_factory=list)
    gone: set[str] = field(default_factory=set)  # a file, or a folder and all below it
    left_out: list[str] = field(default_factory=list)


def _skip(path: str) -> str | None:
    """Why ``path`` can never be part of a change (None: it can)."""
    parts = path.split("/")
    if any(p.lower() == ".git" for p in parts):
        return "a git repository's folder"
    return None


def _entries(tree: Tree, limits: Limits, out: Scan, mount_point: bool) -> Iterator[Found]:
    """The tree's entries that may be part of a change; a nested ``.git`` (and all below
    it) is named in ``out.left_out`` instead. ``mount_point``: the top ``.git`` is where
    the owner's is shown read-only (an overlay's upper): nothing below it to name."""
    hidden: list[str] = []  # folders below which nothing is read
    for found in tree.walk(limits):
        path = found.path
        if (mount_point and path == ".git") or any(path.startswith(h + "/") for h in hidden):
            continue
        why = _skip(path)
        if why is not None:
            out.left_out.append(f"{shown(path)} ({why})")
            if found.kind == "dir":
                hidden.append(path)
            continue
        yield found


def scan_upper(tree: Tree, limits: Limits) -> Scan:
    """An overlay's upper folder, as a scan. Only ``trusted.`` xattrs mark an opaque
    folder: the host mounts as root, and a kennel cannot set those."""
    out = Scan()
    for found in _entries(tree, limits, out, mount_point=True):
        path, kind = found.path, found.kind
        if kind == "dir":
            if found.opaque:
                out.gone.add(path)
        elif kind == "whiteout":
            out.gone.add(path)
        elif kind in ("file", "link"):
            out.found.append(found)
        else:
            out.left_out.append(f"{shown(path)} ({kind})")
    return out


def scan_copy(
    tree: Tree, before: Tree, since_ns: int, limits: Limits, setup: Tree | None = None
) -> Scan:
    """A full copy compared with the base it was made from at ``since_ns`` (and with the
    repository's setup layer, copied in beside it: what setup installed is no change)."""
    out = Scan()
    seen: set[str] = set()
    for found in _entries(tree, limits, out, mount_point=False):
        path, kind = found.path, found.kind
        seen.add(path)
        old = before.lstat(path)
        if old is None and setup is not None:
            old = setup.lstat(path)
        if kind == "dir":
            if old is not None and not stat.S_ISDIR(old.st_mode):
                out.gone.add(path)  # a file became a folder
            continue
        if old is not None and found.st.st_ctime_ns <= since_ns and _same_kind(old, found):
            continue  # untouched since the copy
        if old is not None and stat.S_ISDIR(old.st_mode):
            out.gone.add(path)  # a folder became a file or link
        if kind in ("file", "link"):
            out.found.append(found)
        else:
            out.left_out.append(f"{shown(path)} ({kind})")
    # What the base has and the copy lost. The walk is depth-first, parents first: a
    # lost folder is one deletion, and its entries (which follow it) are skipped.
    lost = ""
    for found in before.walk(limits):
        if lost and found.path.startswith(lost):
            continue
        if found.path not in seen:
            out.gone.add(found.path)
            lost = found.path + "/" if found.kind == "dir" else ""
    return out


def _same_kind(old: os.stat_result, found: Found) -> bool:
    return stat.S_IFMT(old.st_mode) == stat.S_IFMT(found.st.st_mode)


def to_change(repo: Repo, base: str, tree: Tree, scan: Scan, limits: Limits) -> Change:
    """Read what the scan found (within the limits, after the owner's own ignore rules
    took out what they ignore: build output never sinks a task), write it as blobs into
    ``repo`` and make the change from ``base``."""
    left = list(scan.left_out)
    ignored = repo.ignored(sorted(f.path for f in scan.found))
    wanted = sorted((f for f in scan.found if f.path not in ignored), key=lambda f: f.path)
    if len(wanted) + len(scan.gone) > limits.changes:
        raise Refused(f"the kennel changed more than {limits.changes:,} paths")
    for path in sorted(ignored):
        left.append(f"{shown(path)} (ignored by .gitignore)")
    records: list[bytes] = []
    for folder in sorted(scan.gone):
        for path in repo.paths_under(base, folder):
            records.append(_record("0", ZERO, path))
    total = 0
    files: list[tuple[Found, bytes]] = []
    for found in wanted:
        if found.kind == "link":
            target = tree.readlink(found.path)
            if escapes(found.path, target):
                left.append(
                    f"{shown(found.path)} (a symlink out of the repository: {shown(target)})"
                )
                continue
            files.append((found, target.encode("utf-8", "surrogateescape")))
            continue
        data = tree.read(found.path, found.st, limits.file_bytes)
        total += len(data)
        if total > limits.total_bytes:
            raise Refused(
                f"the change is over {limits.total_bytes // (1024 * 1024)} MB; I won't read it"
            )
        files.append((found, data))
    shas = repo.write_blobs([data for _found, data in files])
    for (found, _data), sha in zip(files, shas, strict=True):
        if found.kind == "link":
            mode = "120000"
        else:
            mode = "100755" if found.st.st_mode & stat.S_IXUSR else "100644"
        records.append(_record(mode, sha, found.path))
    new_tree = repo.tree_from(base, b"".join(records))
    return repo.change_between(base, new_tree, tuple(left))


def _record(mode: str, sha: str, path: str) -> bytes:
    return f"{mode} {sha}\t".encode() + path.encode("utf-8", "surrogateescape") + b"\0"


__all__ = ["Scan", "scan_copy", "scan_upper", "to_change"]
