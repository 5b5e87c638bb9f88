"""Who the CLI runs as, and handing the working tree to that uid.

A sandboxed CLI never runs as root: when Fetch is root it runs as the repository's owner,
or as 1000:1000 when root owns the repository, and the tree is chowned to that uid before
each run (``.git`` stays the owner's: the CLI must not be able to change it).
"""

from __future__ import annotations

import os
from pathlib import Path


def user_for(repo: Path, setting: str) -> str:
    """``"uid:gid"``: the setting, or (``"auto"``) the repo's owner unless that is root."""
    if setting != "auto":
        return setting
    st = repo.stat()
    return f"{st.st_uid}:{st.st_gid}" if st.st_uid != 0 else "1000:1000"


def parse_user(user: str) -> tuple[int, int]:
    uid, _, gid = user.partition(":")
    return int(uid), int(gid or uid)


def hand_over(repo: Path, user: str, *, skip_git: bool = True) -> None:
    """Make ``repo`` writable by ``user``; with ``skip_git`` its top ``.git`` stays as is.
    Symlinks are never followed (their own owner does not matter), and entries already
    owned by the uid cost one ``lstat``."""
    uid, gid = parse_user(user)
    for root, dirs, files in os.walk(repo):
        if skip_git and Path(root) == repo and ".git" in dirs:
            dirs.remove(".git")
        for path in (root, *(os.path.join(root, name) for name in files)):
            st = os.lstat(path)
            if (st.st_uid, st.st_gid) != (uid, gid) and not os.path.islink(path):
                os.chown(path, uid, gid, follow_symlinks=False)


__all__ = ["hand_over", "parse_user", "user_for"]
