"""The scheduled self-review (improve.schedule): a recurring prompt job kept in step with
the setting at every start, and, when it fires, an /improve that only proposes: a pull
request is opened, nothing is merged, the default branch does not move."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.config import Settings
from orchestrator.improve.review import REVIEW_TEXT
from orchestrator.services import Services
from tests.improve.conftest import open_world

pytestmark = pytest.mark.real


async def review_jobs(services: Services) -> list[tuple[int, str | None, str]]:
    scheduler = services.scheduler
    assert scheduler is not None
    jobs = await scheduler.jobs.listing(None, ("active", "paused"))
    return [(j.id, j.cron, j.kind) for j in jobs if j.text == REVIEW_TEXT]


async def test_the_review_job_follows_the_setting_and_only_proposes(
    tmp_path: Path,
    make_settings: Callable[..., Settings],
    improve_env: Callable[..., dict[str, str]],
) -> None:
    weekly = {"FETCH__IMPROVE__SCHEDULE": "0 9 * * 1"}
    async for world in open_world(tmp_path / "a", make_settings, improve_env, **weekly):
        services = world.fetch.services
        jobs = await review_jobs(services)
        assert [(cron, kind) for _, cron, kind in jobs] == [("0 9 * * 1", "prompt")]
        main = world.remote_branches()["main"]
        # The slot comes: the job fires as the owner typing /improve <review prompt>.
        assert services.scheduler is not None
        await services.store.db.write(
            "UPDATE jobs SET next_at=? WHERE id=?", (time.time() - 1, jobs[0][0])
        )
        assert await services.scheduler.tick() == 1
        done = await world.fetch.expect("Pull request #1", 120)
        assert "github.com/octo/fetch/pull/1" in done
        pr = next(r for r in world.github.requests if r.method == "POST").body
        assert pr["head"].startswith("fetch/improve-1-review-fetch-s-own-code")
        assert "Review Fetch's own code" in pr["body"]
        assert world.remote_branches()["main"] == main
        assert not [r for r in world.github.requests if "merge" in r.path]


async def test_a_restart_moves_or_cancels_the_review_job(
    tmp_path: Path,
    make_settings: Callable[..., Settings],
    improve_env: Callable[..., dict[str, str]],
) -> None:
    home = {"FETCH_HOME": str(tmp_path / "home")}
    async for world in open_world(
        tmp_path / "a", make_settings, improve_env, FETCH__IMPROVE__SCHEDULE="@daily", **home
    ):
        assert [c for _, c, _ in await review_jobs(world.fetch.services)] == ["0 0 * * *"]
    async for world in open_world(
        tmp_path / "b", make_settings, improve_env, FETCH__IMPROVE__SCHEDULE="0 9 * * 1", **home
    ):
        assert [c for _, c, _ in await review_jobs(world.fetch.services)] == ["0 9 * * 1"]
    async for world in open_world(tmp_path / "c", make_settings, improve_env, **home):
        assert await review_jobs(world.fetch.services) == []
