"""A "yes" in a workspace copied or restored from a backup: the owner's index still
holds the old files' times, and read-tree called every file "not uptodate" and refused
the commit. Fetch refreshes the index's stat data first (real git, real copies)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from orchestrator.boundary.gitops import Repo
from tests.conftest import git, make_repo


def test_yes_commits_in_a_restored_copy(tmp_path: Path) -> None:
    original = make_repo(tmp_path / "ws", "app", {"a.txt": "one\n", "b.txt": "two\n"})
    restored = tmp_path / "restored" / "app"
    shutil.copytree(original, restored)  # new inodes and times; the same index file
    repo = Repo(restored)
    base = repo.head()
    blob = (
        subprocess.run(
            ["git", "-C", str(restored), "hash-object", "-w", "--stdin"],
            input=b"ONE\n",
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    tree = repo.tree_from(base, f"100644 {blob}\ta.txt\0".encode())
    change = repo.change_between(base, tree)
    sha = repo.commit(change, "a.txt in capitals")
    assert git(restored, "rev-parse", "HEAD") == sha
    assert (restored / "a.txt").read_text() == "ONE\n"
    assert git(restored, "status", "--porcelain") == ""
