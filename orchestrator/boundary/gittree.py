"""The repository on disk, checked without following a single symlink.

Host git is only as safe as the folders it is pointed at. Before it runs, the working tree
must still be the registered folder and ``.git`` the same real directory, holding nothing
that relocates git (``commondir``, alternates, a gitfile) and no symlink or hard link git
could write through. Nested repositories below the root are found here too: a ``.git`` the
sandbox left in the tree would be read by the owner's own git the next time they ``cd`` in.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from core.errors import GitError

# Files in .git that make git read objects or config from somewhere else.
RELOCATING = (
    "commondir",
    "gitdir",
    "objects/info/alternates",
    "objects/info/http-alternates",
    "config.worktree",
)


@dataclass(frozen=True, slots=True)
class Anchor:
    """The repository as Fetch registered it: the real root and its real ``.git``."""

    root: Path
    gitdir: Path
    dev: int
    ino: int

    @classmethod
    def of(cls, path: Path) -> Anchor:
        root = Path(os.path.realpath(path))
        gitdir = root / ".git"
        try:
            st = os.lstat(gitdir)
        except FileNotFoundError:
            raise GitError(f"{path.name} is not a git repository") from None
        if stat.S_ISLNK(st.st_mode):
            raise GitError(f"{path.name}/.git is a symlink; refusing to use it")
        if not stat.S_ISDIR(st.st_mode):
            raise GitError(
                f"{path.name}/.git is not a directory (a gitfile?); refusing to follow it"
            )
        return cls(root, gitdir, st.st_dev, st.st_ino)

    def verify(self, path: Path) -> None:
        """Refuse unless ``path`` still resolves to the root and ``.git`` is unchanged."""
        if Path(os.path.realpath(path)) != self.root:
            raise GitError(f"{path} no longer resolves to {self.root}; refusing to touch it")
        try:
            st = os.lstat(self.gitdir)
        except FileNotFoundError:
            raise GitError(f"{self.root.name}/.git disappeared; refusing to touch it") from None
        if not stat.S_ISDIR(st.st_mode) or (st.st_dev, st.st_ino) != (self.dev, self.ino):
            raise GitError(f"{self.root.name}/.git was replaced; refusing to touch it")
        check_gitdir(self.gitdir)


def check_gitdir(gitdir: Path) -> None:
    """No relocation files, no symlinks and no hard-linked files anywhere in ``.git``."""
    for rel in RELOCATING:
        if os.path.lexists(gitdir / rel):
            raise GitError(
                f"refusing to run git: .git/{rel} exists and would make git read "
                "from outside the repository"
            )
    objects = str(gitdir / "objects")
    pending = [str(gitdir)]
    while pending:
        folder = pending.pop()
        in_objects = folder == objects or folder.startswith(objects + os.sep)
        if in_objects and _loose_fanout(folder, objects):
            # objects/xx/ holds loose objects only, written once through a new file and
            # a rename: a link there is never written through. Its folder was checked
            # (not a link) when listed; its thousands of entries need no look.
            continue
        try:
            entries = os.scandir(folder)
        except FileNotFoundError:  # the owner's own git (a gc) removed it meanwhile
            continue
        with entries:
            for entry in entries:
                where = os.path.relpath(entry.path, gitdir)
                if entry.is_symlink():
                    raise GitError(f"refusing to run git: .git/{where} is a symlink")
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                # git appends to reflogs in place: a hard link would carry the write
                # outside. Objects are written once, never in place.
                elif not in_objects and entry.stat(follow_symlinks=False).st_nlink > 1:
                    raise GitError(f"refusing to run git: .git/{where} is hard-linked elsewhere")


def _loose_fanout(folder: str, objects: str) -> bool:
    name = os.path.basename(folder)
    return (
        os.path.dirname(folder) == objects
        and len(name) == 2
        and all(c in "0123456789abcdef" for c in name)
    )


def nested_repos(root: Path) -> list[str]:
    """Every ``.git`` entry below ``root`` (not the root's own), without following links."""
    found: list[str] = []
    for top, dirs, files in os.walk(root, followlinks=False):
        here = Path(top)
        for name in dirs + files:
            if name.lower() == ".git" and not (here == root and name == ".git"):
                found.append(str((here / name).relative_to(root)))
        # never walk into the root's own .git, nor into any nested one
        dirs[:] = [d for d in dirs if d.lower() != ".git"]
    return sorted(found)


def remove_nested_repos(root: Path) -> list[str]:
    """Delete every nested ``.git`` (dir, file or link) below ``root``; links are unlinked,
    never followed."""
    removed = nested_repos(root)
    for rel in removed:
        target = root / rel
        if Path(os.path.realpath(target.parent)) != target.parent:
            continue  # its folder is reached through a link: not ours to touch
        if target.is_symlink() or not target.is_dir():
            target.unlink()
        else:
            shutil.rmtree(target)  # rmtree unlinks symlinks inside, never follows them
    return removed


def escapes(path: str, target: str) -> bool:
    """True if a symlink at ``path`` (repo-relative) pointing to ``target`` leaves the tree
    or points into a ``.git``."""
    if target.startswith("/") or not target:
        return True
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    parts = resolved.split("/")
    return resolved == ".." or parts[0] == ".." or any(p.lower() == ".git" for p in parts)
