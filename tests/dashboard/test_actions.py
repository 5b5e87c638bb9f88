"""The dashboard's changes, through real HTTP into the real store: forget a memory (the
owner's only), pause, resume and cancel a job; each refused without the CSRF token."""

from __future__ import annotations

from core.events import SessionKey
from tests.dashboard.conftest import Web

EVIL = "<script>alert('m')</script>"


async def test_memory_search_and_forget(web: Web) -> None:
    memory = web.services.memory
    assert memory.enabled, memory.status_line()
    kept = (await memory.write(f"the deploy key lives in vault {EVIL}")).item
    other = (await memory.write("prefers tabs over spaces")).item
    theirs = (await memory.write("alice's private note about vaults", subject="alice")).item
    status, body = await web.get("/memory?q=vault")
    assert status == 200
    assert "the deploy key lives in vault" in body and "<script>alert" not in body
    assert "alice&#39;s private note" not in body  # the dashboard is the owner's view
    assert "tabs over spaces" in body  # in the newest list
    status, _loc, _ = await web.post(f"/memory/{kept.id}/forget", {})
    assert status == 403
    assert await memory.get(kept.id) is not None
    status, location, _ = await web.post(f"/memory/{kept.id}/forget", {"csrf": web.csrf()})
    assert status == 303 and location.startswith("/memory?note=forgot")
    assert await memory.get(kept.id) is None
    assert await memory.get(other.id) is not None
    status, location, _ = await web.post(f"/memory/{theirs.id}/forget", {"csrf": web.csrf()})
    assert "no%20memory" in location
    assert await memory.get(theirs.id) is not None  # not the owner's to forget here
    status, body = await web.get("/memory?q=vault")
    assert "the deploy key lives in vault" not in body


async def test_jobs_pause_resume_cancel_change_the_store(web: Web) -> None:
    scheduler = web.services.scheduler
    assert scheduler is not None
    job = await scheduler.jobs.add(
        kind="reminder",
        text=f"stand up {EVIL}",
        key=SessionKey("terminal", "owner"),
        cron="0 9 * * 1-5",
        tz="UTC",
        spec="every weekday at 9",
        missed="skip",
        next_at=4102444800.0,
    )
    status, body = await web.get("/jobs")
    assert status == 200 and f"#{job.id}" in body and "<script>alert" not in body
    assert "every weekday at 9" in body and body.count("2100-01-") >= 1
    for verb, expected in (("pause", "paused"), ("resume", "active"), ("cancel", "cancelled")):
        status, location, _ = await web.post(f"/jobs/{job.id}/{verb}", {"csrf": web.csrf()})
        assert status == 303, verb
        now = await scheduler.jobs.get(job.id)
        assert now is not None and now.status == expected, (verb, location)
    status, location, _ = await web.post(f"/jobs/{job.id}/pause", {"csrf": web.csrf()})
    assert "not%20paused" in location  # a cancelled job stays cancelled
    status, location, _ = await web.post(f"/jobs/{job.id}/explode", {"csrf": web.csrf()})
    assert "unknown%20action" in location
    status, location, _ = await web.post("/jobs/999999/pause", {"csrf": web.csrf()})
    assert "no%20job" in location
