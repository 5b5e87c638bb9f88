"""check_gitdir before every host git command: a link anywhere in .git is refused, a
linked loose-object folder too, while the thousands of loose objects are not listed one
by one and a folder the owner's own git (a gc) removes meanwhile is no error."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from core.errors import GitError
from orchestrator.boundary.gittree import check_gitdir


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "r"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a").write_text("a\n")
    subprocess.run(["git", "-C", str(repo), "add", "a"], check=True)
    return repo / ".git"


def test_a_linked_loose_object_folder_is_refused(tmp_path: Path) -> None:
    gitdir = _repo(tmp_path)
    victim = tmp_path / "victim"
    victim.mkdir()
    (gitdir / "objects" / "ab").symlink_to(victim)
    with pytest.raises(GitError, match="objects/ab is a symlink"):
        check_gitdir(gitdir)


def test_loose_objects_are_not_listed_and_a_vanished_folder_is_fine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gitdir = _repo(tmp_path)
    listed: list[str] = []
    real = os.scandir

    def spy(path: str) -> os._ScandirIterator[str]:
        listed.append(str(path))
        if str(path).endswith("refs/tags"):
            raise FileNotFoundError(path)  # as if a gc had just removed it
        return real(path)

    monkeypatch.setattr(os, "scandir", spy)
    check_gitdir(gitdir)
    fanout = [p for p in listed if Path(p).parent.name == "objects" and len(Path(p).name) == 2]
    assert fanout == []  # objects/xx/ are checked as entries, never listed
    assert any(p.endswith("objects") for p in listed)
