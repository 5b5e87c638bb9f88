"""Bad input on the /improve path gives a clear phone message and leaves nothing
half-done: no token, a refused token (401), a pull request that already exists (422), a
spent rate limit (403 / 429). A branch pushed before the failure is deleted again."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.config import Settings
from tests.fakes.github_api import bad_credentials, pull_exists, rate_limited
from tests.improve.conftest import World, open_world

pytestmark = pytest.mark.real
TYPO = "/improve fix the typo in README.md"


def flat(text: str) -> str:
    return " ".join(text.split())


async def test_no_token_is_refused_before_anything(
    tmp_path: Path,
    make_settings: Callable[..., Settings],
    improve_env: Callable[..., dict[str, str]],
) -> None:
    async for world in open_world(tmp_path, make_settings, improve_env, FETCH_GITHUB_TOKEN=""):
        reply = flat(await world.fetch.ask(TYPO, "token"))
        assert "No GitHub token: set FETCH_GITHUB_TOKEN" in reply and "Nothing was changed" in reply
        assert world.github.requests == []
        assert set(world.remote_branches()) == {"main"}
        assert await world.fetch.services.improver.records.recent() == []


async def test_a_refused_token_stops_before_the_clone(world: World) -> None:
    world.github.token = "ghp_the_one_github_knows"  # ours is no longer valid: 401
    reply = flat(await world.fetch.ask(TYPO, "failed", 60))
    assert "GitHub refused the token (401 Bad credentials)" in reply, reply
    assert "check FETCH_GITHUB_TOKEN" in reply and "Nothing was pushed" in reply
    assert set(world.remote_branches()) == {"main"}
    assert not (world.home / "improve" / "1").exists()
    row = (await world.fetch.services.improver.records.recent())[0]
    assert row.status == "failed" and "401" in row.detail


async def test_pull_request_already_exists_takes_the_branch_back(world: World) -> None:
    world.github.script("POST", "/pulls", pull_exists("octo", "fetch/improve-1-x"))
    reply = flat(await world.fetch.ask(TYPO, "failed", 120))
    assert "A pull request already exists for octo:" in reply, reply
    assert "deleted again; nothing is left" in reply
    assert set(world.remote_branches()) == {"main"}  # pushed, then taken back
    assert not [r for r in world.github.requests if "merge" in r.path]


@pytest.mark.parametrize("status", [403, 429])
async def test_rate_limit_on_opening_says_when_and_cleans_up(world: World, status: int) -> None:
    world.github.script("POST", "/pulls", rate_limited(status))
    reply = flat(await world.fetch.ask(TYPO, "failed", 120))
    assert f"GitHub's rate limit is spent (HTTP {status})" in reply, reply
    assert "lifts at" in reply and "UTC" in reply
    assert "deleted again" in reply
    assert set(world.remote_branches()) == {"main"}


async def test_retry_after_is_read_before_anything_is_made(world: World) -> None:
    world.github.script("GET", "", rate_limited(429, retry_after=120))
    reply = flat(await world.fetch.ask(TYPO, "failed", 60))
    assert "rate limit is spent (HTTP 429)" in reply and "in about 2 min" in reply, reply
    assert "Nothing was pushed" in reply
    assert set(world.remote_branches()) == {"main"}


async def test_prs_keeps_the_last_known_states_when_github_fails(world: World) -> None:
    await world.fetch.ask(TYPO, "Pull request #1", 120)
    world.github.script("GET", "/pulls/1", bad_credentials())
    listing = flat(await world.fetch.ask("/prs", "PR #1"))
    assert "open" in listing and "Could not ask GitHub" in listing and "401" in listing
