"""The workspace: a folder of git repositories the owner lets Fetch work on."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from core.errors import GitError
from orchestrator.boundary.gitops import Repo

DEMO_README = """# demo

Fetch's demo repository.
Teh quick brown fox jumps over the lazy dog.

Try: fix the typo in README.md of demo
"""
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class Workspace:
    def __init__(self, root: Path) -> None:
        self.root = root

    def repos(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(
            p.name
            for p in self.root.iterdir()
            if p.is_dir() and (p / ".git").is_dir() and SAFE_NAME.match(p.name)
        )

    def path(self, name: str) -> Path:
        """The repo's folder; refuses names that could point outside the workspace."""
        if not SAFE_NAME.match(name) or name in {".", ".."}:
            raise GitError(f"{name!r} is not a repository name")
        path = (self.root / name).resolve()
        if path.parent != self.root.resolve() or not (path / ".git").is_dir():
            raise GitError(f"no repository named {name!r} in the workspace")
        return path

    def create(self, name: str) -> Path:
        """A new, empty git repository (branch main) named ``name`` in the workspace."""
        if not SAFE_NAME.match(name):
            raise GitError(f"{name!r} is not a repository name (letters, digits, . _ -)")
        path = self.root / name
        if os.path.lexists(path):
            raise GitError(f"{name!r} already exists in the workspace")
        path.mkdir(parents=True)
        subprocess.run(
            ["git", "init", "-q", "-b", "main"], cwd=path, check=True, capture_output=True
        )
        return path

    def delete(self, name: str) -> Path:
        """Remove the repository ``name``: only a real folder directly in the workspace
        (never through a symlink, never outside it), and nothing else."""
        link = self.root / name
        if SAFE_NAME.match(name) and link.is_symlink():
            raise GitError(f"{name!r} is a symlink; I only delete real folders")
        path = self.path(name)  # refuses names and resolved paths outside the workspace
        if path != self.root.resolve() / name:
            raise GitError(f"{name!r} is not a folder directly in the workspace")
        shutil.rmtree(path)
        return path

    def repo(self, name: str) -> Repo:
        return Repo(self.path(name))

    def find_in_text(self, text: str) -> str | None:
        """A repo named in free text: 'in myapp', 'of demo', or just the bare name."""
        names = self.repos()
        lowered = text.lower()
        for match in re.finditer(r"\b(?:in|of|on|for|at|inside)\s+([A-Za-z0-9._-]+)", lowered):
            for name in names:
                if name.lower() == match.group(1).strip("."):
                    return name
        words = set(re.findall(r"[A-Za-z0-9._-]+", lowered))
        hits = [n for n in names if n.lower() in words]
        return hits[0] if len(hits) == 1 else None

    def ensure_demo(self) -> None:
        """First run with no repos: make a demo repo so the loop can be seen at once."""
        self.root.mkdir(parents=True, exist_ok=True)
        if self.repos():
            return
        # Made aside and renamed into place: a start that fails half-way (a full disk)
        # leaves no half-made "demo" that later starts would take for a repository.
        staging = Path(tempfile.mkdtemp(prefix=".demo-", dir=self.root))
        try:
            (staging / "README.md").write_text(DEMO_README, encoding="utf-8")
            env_id = ["-c", "user.name=Fetch", "-c", "user.email=fetch@localhost"]
            for argv in (
                ["git", "init", "-q", "-b", "main"],
                ["git", "add", "README.md"],
                ["git", *env_id, "commit", "-q", "-m", "demo: initial commit"],
            ):
                subprocess.run(argv, cwd=staging, check=True, capture_output=True)
            staging.chmod(0o755)  # mkdtemp's 0700 is not what a plain mkdir gives
            staging.rename(self.root / "demo")
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    def describe(self, name: str) -> str:
        try:
            repo = self.repo(name)
            dirty = len(repo.status_lines())
            state = "clean" if dirty == 0 else f"{dirty} uncommitted change(s)"
            return f"{name} ({repo.branch()}, {state})"
        except GitError as err:
            return f"{name} ({err})"
