"""A repository's state in one string, for the result cache: HEAD's sha plus a cheap
fingerprint of the working tree (git's status list, and the size and mtime of every
file it names). Any commit, edit, new or deleted file changes it."""

from __future__ import annotations

import hashlib

from core.errors import GitError
from orchestrator.boundary.gitops import Repo


def repo_state(repo: Repo) -> str:
    digest = hashlib.sha256()
    try:
        digest.update(repo.head().encode())
    except GitError:
        digest.update(b"(no commits)")
    for line in repo.status_lines():
        digest.update(line.encode() + b"\0")
        path = repo.path / line[3:].split(" -> ")[-1].strip('"')
        try:
            st = path.lstat()
        except OSError:
            continue
        digest.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
    return digest.hexdigest()[:24]
