"""/improve end to end through the real parts: the terminal channel, SQLite, the bwrap
kennel running the demo harness and the test command, host git pushing to a real bare
remote, and the fake GitHub API on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.config import Settings
from tests.improve.conftest import (
    FAILING,
    TOKEN,
    World,
    installed_fingerprint,
    open_world,
    running_improve_refs,
)

pytestmark = pytest.mark.real


async def test_improve_opens_a_pull_request_and_never_merges(world: World) -> None:
    before = installed_fingerprint()
    main = world.remote_branches()["main"]
    done = await world.fetch.ask("/improve fix the typo in README.md", "Pull request #1", 120)
    assert "https://github.com/octo/fetch/pull/1" in done
    assert "1 file changed, +1 −1" in done and "passing" in done, done
    # The checklist names /improve's steps: no yes/no is asked of the owner here.
    seen = "\n".join(world.fetch.seen)
    assert "pull request (a person merges it)" in seen and "your review" not in seen

    branches = world.remote_branches()
    branch = "fetch/improve-1-fix-the-typo-in-readme-md"
    assert set(branches) == {"main", branch}, branches
    assert branches["main"] == main  # the default branch never moves
    assert "The assistant you drive" in world.show(branch, "README.md")
    assert "Teh assistant" in world.show("main", "README.md")
    parent = world.show(branch, "README.md")  # the branch is one commit on main
    assert parent and world.remote_branches()[branch] != main

    opened = [r for r in world.github.requests if r.method == "POST"]
    assert [r.path for r in opened] == ["/repos/octo/fetch/pulls"]
    pr = opened[0].body
    assert pr["head"] == branch and pr["base"] == "main" and pr["draft"] is False
    assert "1 file changed, +1 −1" in pr["body"] and "`README.md` | +1 −1" in pr["body"]
    assert "✅ passed" in pr["body"] and "1 passed" in pr["body"], pr["body"]
    assert "never merges" in pr["body"]
    # Fetch never merges and never writes a ref through the API.
    assert not [r for r in world.github.requests if "merge" in r.path]
    assert not [r for r in world.github.requests if "/git/refs" in r.path]
    assert all(r.auth == f"Bearer {TOKEN}" for r in world.github.requests)
    # The scratch checkout is gone; the running installation is byte-identical.
    assert not any((world.home / "improve").iterdir())
    assert installed_fingerprint() == before
    assert running_improve_refs() == ""

    listing = await world.fetch.ask("/prs", "PR #1")
    assert "open" in listing and "fix the typo" in listing
    world.github.merge(1)  # a person merges on GitHub
    listing = await world.fetch.ask("/prs", "PR #1")
    assert "merged" in listing, listing
    rows = await world.fetch.services.improver.records.recent()
    assert rows[0].pr_state == "merged" and rows[0].status == "proposed"


async def test_failing_tests_open_a_draft_with_the_failure(
    tmp_path: Path,
    make_settings: Callable[..., Settings],
    improve_env: Callable[..., dict[str, str]],
) -> None:
    async for world in open_world(tmp_path, make_settings, improve_env, tests=FAILING):
        done = await world.fetch.ask("/improve fix the typo in README.md", "Pull request #1", 120)
        assert "draft" in done and "failing" in done, done
        pr = next(r for r in world.github.requests if r.method == "POST").body
        assert pr["draft"] is True
        assert "❌ failed" in pr["body"] and "test_broken" in pr["body"], pr["body"]
        assert "still teh" in pr["body"]  # the tail of the test output


async def test_nothing_changed_pushes_nothing(world: World) -> None:
    reply = await world.fetch.ask(
        "/improve fix the typo in tests/unit/test_ok.py", "changed no", 120
    )
    assert "No branch was pushed" in " ".join(reply.split())
    assert set(world.remote_branches()) == {"main"}
    assert not world.github.writes()
