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
from dataclasses import dataclass, field

from orchestrator.boundary.gitops import Change, Repo
from orchestrator.boundary.gittree import escapes
from orchestrator.boundary.walk import Found, Limits, Refused, Tree, shown

ZERO = "0" * 40


@dataclass
class Changeset:
    """Paths that differ from the base: new contents, deletions, and what is left out."""

    files: dict[str, tuple[bool, bytes]] = field(default_factory=dict)  # path: (exec, data)
    links: dict[str, str] = field(default_factory=dict)  # path: target
    gone: set[str] = field(default_factory=set)  # a file, or a folder and all below it
    left_out: list[str] = field(default_factory=list)
    total: int = 0

    def add_file(self, tree: Tree, found: Found, limits: Limits) -> None:
        data = tree.read(found.path, found.st, limits.file_bytes)
        self.total += len(data)
        if self.total > limits.total_bytes:
            raise Refused(
                f"the change is over {limits.total_bytes // (1024 * 1024)} MB; I won't read it"
            )
        self.files[found.path] = (bool(found.st.st_mode & stat.S_IXUSR), data)
        self._count(limits)

    def add_link(self, tree: Tree, found: Found, limits: Limits) -> None:
        self.links[found.path] = tree.readlink(found.path)
        self._count(limits)

    def _count(self, limits: Limits) -> None:
        if len(self.files) + len(self.links) + len(self.gone) > limits.changes:
            raise Refused(f"the kennel changed more than {limits.changes:,} paths")


def _skip(path: str) -> str | None:
    """Why ``path`` can never be part of a change (None: it can)."""
    parts = path.split("/")
    if any(p.lower() == ".git" for p in parts):
        return "a git repository's folder"
    return None


def read_upper(upper: os.PathLike[str] | str, limits: Limits) -> Changeset:
    """An overlay's upper folder, as a changeset."""
    out = Changeset()
    hidden: list[str] = []  # folders below which nothing is read (a nested .git)
    with Tree(upper) as tree:
        for found in tree.walk(limits):
            path = found.path
            if path == ".git" or any(path.startswith(h + "/") for h in hidden):
                # The top .git is the read-only view of the owner's (its mount point).
                continue
            why = _skip(path)
            kind = found.kind
            if why is not None:
                out.left_out.append(f"{shown(path)} ({why})")
                if kind == "dir":
                    hidden.append(path)
                continue
            if kind == "dir":
                if found.opaque:
                    out.gone.add(path)
                continue
            if kind == "whiteout":
                out.gone.add(path)
            elif kind == "file":
                out.add_file(tree, found, limits)
            elif kind == "link":
                out.add_link(tree, found, limits)
            else:
                out.left_out.append(f"{shown(path)} ({kind})")
    return out


def read_copy(
    copy: os.PathLike[str] | str, base: os.PathLike[str] | str, since_ns: int, limits: Limits
) -> Changeset:
    """A full copy compared with the ``base`` it was made from at ``since_ns``."""
    out = Changeset()
    seen: set[str] = set()
    hidden: list[str] = []
    with Tree(copy) as tree, Tree(base) as before:
        for found in tree.walk(limits):
            path = found.path
            if any(path.startswith(h + "/") for h in hidden):
                continue
            seen.add(path)
            why = _skip(path)
            kind = found.kind
            if why is not None:
                out.left_out.append(f"{shown(path)} ({why})")
                if kind == "dir":
                    hidden.append(path)
                continue
            old = before.lstat(path)
            if kind == "dir":
                if old is not None and not stat.S_ISDIR(old.st_mode):
                    out.gone.add(path)  # a file became a folder
                continue
            if old is not None and found.st.st_ctime_ns <= since_ns and _same_kind(old, found):
                continue  # untouched since the copy
            if old is not None and stat.S_ISDIR(old.st_mode):
                out.gone.add(path)  # a folder became a file or link
            if kind == "file":
                out.add_file(tree, found, limits)
            elif kind == "link":
                out.add_link(tree, found, limits)
            else:
                out.left_out.append(f"{shown(path)} ({kind})")
        for found in before.walk(limits):
            if found.path not in seen and not any(found.path.startswith(g + "/") for g in out.gone):
                out.gone.add(found.path)
    return out


def _same_kind(old: os.stat_result, found: Found) -> bool:
    return stat.S_IFMT(old.st_mode) == stat.S_IFMT(found.st.st_mode)


def to_change(repo: Repo, base: str, changes: Changeset) -> Change:
    """Write the changeset's blobs into ``repo`` and make the change from ``base``:
    ignored paths and links leaving the tree are left out, never committed."""
    left = list(changes.left_out)
    candidates = sorted([*changes.files, *changes.links])
    ignored = repo.ignored(candidates)
    for path in sorted(ignored):
        left.append(f"{shown(path)} (ignored by .gitignore)")
    records: list[bytes] = []
    for folder in sorted(changes.gone):
        for path in repo.paths_under(base, folder):
            records.append(_record("0", ZERO, path))
    files = [(p, changes.files[p]) for p in candidates if p in changes.files and p not in ignored]
    shas = repo.write_blobs([data for _path, (_exe, data) in files])
    for (path, (exe, _data)), sha in zip(files, shas, strict=True):
        records.append(_record("100755" if exe else "100644", sha, path))
    links = [(p, t) for p, t in sorted(changes.links.items()) if p not in ignored]
    for path, target in links:
        if escapes(path, target):
            left.append(f"{shown(path)} (a symlink out of the repository: {shown(target)})")
            continue
        (sha,) = repo.write_blobs([target.encode("utf-8", "surrogateescape")])
        records.append(_record("120000", sha, path))
    tree = repo.tree_from(base, b"".join(records))
    return repo.change_between(base, tree, tuple(left))


def _record(mode: str, sha: str, path: str) -> bytes:
    return f"{mode} {sha}\t".encode() + path.encode("utf-8", "surrogateescape") + b"\0"


__all__ = ["Changeset", "read_copy", "read_upper", "to_change"]
