"""A hostile working tree, a canary folder and a victim folder, all under tmp_path.

A vector plants what a rogue coding CLI could write (into the working tree, and for the
unsafe local mode into ``.git`` too); every hostile program only ever runs
``touch <canary>/<name>``. ``exercise`` then drives each host git operation Fetch has,
the way the runner, approvals and /undo call them, and collects the refusals."""

from __future__ import annotations

import functools
import hashlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from core.errors import GitError
from orchestrator.boundary.gitops import Change, Repo
from orchestrator.task import diffview
from tests.conftest import git, make_repo


@dataclass
class Scene:
    tmp: Path
    repo: Path
    canary: Path
    victim: Path
    shown: list[str] = field(default_factory=list)  # every text diffview produced

    def evil(self, name: str) -> str:
        return f"touch {self.canary}/{name}"

    def script(self, name: str) -> Path:
        """An executable that leaves a canary named ``name``."""
        path = self.tmp / "bin" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"#!/bin/sh\n{self.evil(name)}\n")
        path.chmod(0o755)
        return path

    def config(self, text: str) -> None:
        with (self.repo / ".git" / "config").open("a") as fh:
            fh.write(text)

    def fired(self) -> list[str]:
        return sorted(p.name for p in self.canary.iterdir())


def snapshot(root: Path) -> dict[str, tuple[str, ...]]:
    """Names, types, modes and bytes of everything under ``root``; links never followed."""
    out: dict[str, tuple[str, ...]] = {}
    for top, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            p = Path(top) / name
            st = os.lstat(p)
            rel = str(p.relative_to(root))
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", oct(st.st_mode))
            else:
                out[rel] = ("file", oct(st.st_mode), hashlib.sha256(p.read_bytes()).hexdigest())
    return out


@pytest.fixture
def scene(tmp_path: Path) -> Scene:
    canary = tmp_path / "canary"
    canary.mkdir()
    victim = tmp_path / "victim"
    make_repo(victim, "proj", {"secret.txt": "the owner's other project\n"})
    (victim / "notes.txt").write_text("precious\n")
    (victim / "dir").mkdir()
    (victim / "dir" / "keep.md").write_text("keep me\n")
    repo = make_repo(
        tmp_path / "ws",
        "demo",
        {"README.md": "# demo\n\nTeh quick brown fox.\n", "src/app.py": "x = 1\n"},
    )
    return Scene(tmp_path, repo, canary, victim)


def attempt(errors: list[str], fn: Callable[[], object]) -> object:
    try:
        return fn()
    except GitError as err:
        text = str(err)
        assert text and "Traceback" not in text
        errors.append(text)
        return None


def exercise(scene: Scene, answer: str) -> list[str]:
    """Every host operation on the repo: status, diff (as the phone sees it), then "no"
    (discard) or "yes" (commit, log, /undo, discard). Returns the GitErrors raised."""
    errors: list[str] = []
    repo = attempt(errors, lambda: Repo(scene.repo))
    if not isinstance(repo, Repo):
        return errors
    attempt(errors, repo.status_lines)
    attempt(errors, repo.branch)
    attempt(errors, repo.has_commits)
    change = attempt(errors, repo.change)
    if isinstance(change, Change):
        scene.shown.append(diffview.summary(change, "demo"))
        scene.shown.append(diffview.page(change, 0)[0])
        for f in change.files:
            patch = attempt(errors, functools.partial(repo.file_patch, change, f.path))
            scene.shown.append(diffview.file_view(patch if isinstance(patch, str) else "", f.path))
    if answer == "yes" and isinstance(change, Change) and not change.empty:
        sha = attempt(errors, lambda: repo.commit(change, "fetch: hostile change"))
        if isinstance(sha, str):
            attempt(errors, lambda: repo.subject(sha))
            attempt(errors, lambda: repo.revert(sha, "fetch: undo"))
    attempt(errors, repo.discard)
    return errors


__all__ = ["Scene", "attempt", "exercise", "git", "snapshot"]
