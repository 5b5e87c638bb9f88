"""What a SIGKILL in the middle of an /improve leaves, and what the next start makes of
it. The kill can land after the push and before the pull request (a branch on the
remote, nothing proposed) or after GitHub opened the pull request and before Fetch wrote
it down. The state is built as the kill leaves it (a 'running' row, the scratch clone,
the pushed branch, maybe the PR), then Fetch starts: the branch alone is deleted again;
a pull request is recorded as proposed, its branch kept."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import aiohttp
import pytest

from core.events import SessionKey
from orchestrator.config import Settings
from tests.conftest import git, start_driver
from tests.fakes.github_api import FakeGitHub
from tests.improve.conftest import PASSING, REPO, TOKEN, make_remote, require_bwrap

pytestmark = pytest.mark.real

BRANCH = "fetch/improve-1-fix-the-readme"


def _push_branch(remote: Path, scratch: Path) -> str:
    """What the killed run had done: its clone, a commit, the branch pushed."""
    scratch.parent.mkdir(parents=True, exist_ok=True)
    git(scratch.parent, "clone", "-q", str(remote), scratch.name)
    (scratch / "README.md").write_text("# Fetch\n\nThe assistant you drive from a phone.\n")
    git(scratch, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "fix")
    git(scratch, "push", "-q", "origin", f"HEAD:refs/heads/{BRANCH}")
    return git(scratch, "rev-parse", "HEAD").strip()


async def _killed_run(settings: Settings, remote: Path) -> str:
    """A first start writes the row as a run does before its push; the 'kill' is that
    the row stays 'running' while the branch is pushed behind its back."""
    app, driver = await start_driver(settings)
    try:
        records = driver.services.improver.records
        run_id = await records.create(SessionKey("terminal", "owner"), "owner", "fix", "fetch")
        await records.update(run_id, base="main", branch=BRANCH)
    finally:
        await app.__aexit__(None, None, None)
    return _push_branch(remote, settings.home_dir / "improve" / str(run_id))


def _branches(remote: Path) -> set[str]:
    out = git(remote, "for-each-ref", "--format=%(refname:short)")
    return set(out.split())


async def test_a_branch_pushed_before_the_kill_is_deleted_at_the_next_start(
    tmp_path: Path,
    make_settings: Callable[..., Settings],
    improve_env: Callable[..., dict[str, str]],
) -> None:
    require_bwrap()
    remote = make_remote(tmp_path / "gh", PASSING)
    async with FakeGitHub(remote, REPO, TOKEN) as github:
        settings = make_settings(**improve_env(github.url, remote))
        await _killed_run(settings, remote)
        assert _branches(remote) == {"main", BRANCH}
        app, driver = await start_driver(settings)
        try:
            assert _branches(remote) == {"main"}  # nothing half-done is left
            rows = await driver.services.improver.records.recent()
            assert [r.status for r in rows] == ["interrupted"]
            assert "deleted again" in rows[0].detail
            assert not (settings.home_dir / "improve" / "1").exists()
            listing = " ".join((await driver.ask("/prs", "improve #1")).split())
            assert "interrupted" in listing
        finally:
            await app.__aexit__(None, None, None)
        assert not [r for r in github.requests if r.path.endswith("/merge")]


async def test_a_pull_request_opened_before_the_kill_is_recorded_not_deleted(
    tmp_path: Path,
    make_settings: Callable[..., Settings],
    improve_env: Callable[..., dict[str, str]],
) -> None:
    require_bwrap()
    remote = make_remote(tmp_path / "gh", PASSING)
    async with FakeGitHub(remote, REPO, TOKEN) as github:
        settings = make_settings(**improve_env(github.url, remote))
        await _killed_run(settings, remote)
        # GitHub opened it; Fetch died before writing that down.
        async with (
            aiohttp.ClientSession() as http,
            http.post(
                f"{github.url}/repos/{REPO}/pulls",
                json={"title": "Fix the README", "head": BRANCH, "base": "main"},
                headers={"Authorization": f"Bearer {TOKEN}"},
            ) as answer,
        ):
            assert answer.status == 201, await answer.text()
        app, driver = await start_driver(settings)
        try:
            assert _branches(remote) == {"main", BRANCH}  # the PR's branch is kept
            rows = await driver.services.improver.records.recent()
            assert [(r.status, r.pr_number, r.pr_state) for r in rows] == [("proposed", 1, "open")]
            listing = " ".join((await driver.ask("/prs", "#1")).split())
            assert "open" in listing
        finally:
            await app.__aexit__(None, None, None)
