"""An /improve world: Fetch's "own repository" as a real bare git remote on disk (the
GitHub copy), the fake GitHub API over it on 127.0.0.1, and the whole app (real SQLite,
the real bwrap kennel, the demo harness) driven through the terminal channel."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from kennel.bwrap import probe
from orchestrator.config import Settings
from orchestrator.improve.checkout import package_dirs, running_checkout
from tests.conftest import Driver, git, make_repo, start_driver
from tests.fakes.github_api import FakeGitHub
from tests.fakes.require import missing

TOKEN = "ghp_SeCrEt0123456789abcdefTOKEN"
REPO = "octo/fetch"
PASSING = "def test_ok():\n    assert 1 + 1 == 2\n"
FAILING = PASSING + "\n\ndef test_broken():\n    assert 'teh' == 'the', 'still teh'\n"


@dataclass
class World:
    fetch: Driver
    github: FakeGitHub
    remote: Path  # the bare repository GitHub holds
    home: Path

    def remote_branches(self) -> dict[str, str]:
        out = git(self.remote, "for-each-ref", "--format=%(refname:short) %(objectname)")
        return dict(line.split() for line in out.splitlines() if line)

    def show(self, ref: str, path: str) -> str:
        return git(self.remote, "show", f"{ref}:{path}")


def make_remote(root: Path, tests: str) -> Path:
    source = make_repo(
        root,
        "fetch-src",
        {
            "README.md": "# Fetch\n\nTeh assistant you drive from a phone.\n",
            "tests/unit/test_ok.py": tests,
        },
    )
    bare = root / "github" / "fetch.git"
    bare.parent.mkdir(parents=True)
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(source), str(bare)], check=True, capture_output=True
    )
    return bare


def installed_fingerprint() -> dict[str, str]:
    """Every file of Fetch's installed packages (as importlib finds them) and the running
    checkout's git config, hooks and HEAD, by content: what an /improve must never change."""
    out: dict[str, str] = {}
    roots = [*package_dirs()]
    for root in roots:
        for path in sorted(root.rglob("*")):
            if "__pycache__" in path.parts or not path.is_file():
                continue
            out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    checkout = running_checkout()
    if checkout is not None:
        for rel in ("config", "HEAD", "hooks"):
            where = checkout / ".git" / rel
            for path in [where] if where.is_file() else sorted(where.rglob("*")):
                if path.is_file():
                    out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    assert len(out) > 100, "found too few of Fetch's files to prove anything"
    return out


def running_improve_refs() -> str:
    checkout = running_checkout()
    if checkout is None:
        return ""
    return subprocess.run(
        ["git", "-C", str(checkout), "for-each-ref", "refs/heads/fetch/improve-*"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()


def require_bwrap() -> None:
    why = probe()
    if why is not None:
        missing(f"the bwrap sandbox cannot run: {why}")


@pytest.fixture
def improve_env(tmp_path: Path) -> Callable[..., dict[str, str]]:
    def env(url: str, remote: Path, **extra: str) -> dict[str, str]:
        base = {
            "FETCH__IMPROVE__ENABLED": "true",
            "FETCH__IMPROVE__REPO": REPO,
            "FETCH__IMPROVE__REMOTE": str(remote),
            "FETCH__IMPROVE__API_URL": url,
            # The tests of the "own repository" run in the kennel with this Python.
            "FETCH__IMPROVE__TEST_COMMAND": (
                f"{sys.executable} -m pytest -q -p no:cacheprovider tests/unit"
            ),
            "FETCH_GITHUB_TOKEN": TOKEN,
        }
        base.update(extra)
        return {k: v for k, v in base.items() if v}

    return env


async def open_world(
    tmp_path: Path,
    make_settings: Callable[..., Settings],
    improve_env: Callable[..., dict[str, str]],
    tests: str = PASSING,
    **extra: str,
) -> AsyncIterator[World]:
    require_bwrap()
    remote = make_remote(tmp_path / "gh", tests)
    async with FakeGitHub(remote, REPO, TOKEN) as github:
        settings = make_settings(**improve_env(github.url, remote, **extra))
        app, driver = await start_driver(settings)
        try:
            yield World(driver, github, remote, settings.home_dir)
        finally:
            await app.__aexit__(None, None, None)


@pytest.fixture
async def world(
    tmp_path: Path,
    make_settings: Callable[..., Settings],
    improve_env: Callable[..., dict[str, str]],
) -> AsyncIterator[World]:
    async for w in open_world(tmp_path, make_settings, improve_env):
        yield w
