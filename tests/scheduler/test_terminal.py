"""Reminders and jobs end to end through the terminal channel (the ``fetch`` driver): the
whole app, a real SQLite file, the real tick loop on the real clock."""

from __future__ import annotations

import re

from tests.conftest import Driver


def flat(text: str) -> str:
    """Replies are wrapped at phone width; assertions read them as one line."""
    return " ".join(text.split())


async def test_reminder_arrives_in_the_chat(fetch: Driver) -> None:
    reply = flat(await fetch.ask("/remind stretch your legs in 2s", "Reminder #"))
    assert "“stretch your legs”" in reply and "in 2 seconds" in reply
    assert "UTC" in reply  # the local time is said with its zone
    assert "⏰ stretch your legs" in await fetch.expect("⏰ stretch", timeout=10)
    listing = await fetch.ask("/remind list", "Nothing scheduled")
    assert "Nothing scheduled" in listing


async def test_cron_create_list_pause_resume_cancel(fetch: Driver) -> None:
    made = flat(await fetch.ask("/cron 0 9 * * 1-5 check the nightly build of demo", "Job #"))
    assert "every weekday at 09:00 (UTC)" in made and "next run in" in made
    job = re.search(r"#(\d+)", made)
    assert job is not None
    number = job.group(1)
    listed = flat(await fetch.ask("/cron list", "scheduled"))
    assert f"#{number}" in listed and "every weekday at 09:00" in listed
    assert "Paused" in await fetch.ask(f"/cron pause {number}", "Paused")
    assert "⏸ paused" in await fetch.ask("/jobs", "scheduled")
    assert "next run" in await fetch.ask(f"/cron resume {number}", "next run")
    assert "Cancelled" in await fetch.ask(f"/cron cancel {number}", "Cancelled")
    assert "I have no job" in await fetch.ask(f"/cron cancel {number}", "no job")


async def test_bad_input_gets_an_example(fetch: Driver) -> None:
    bad = await fetch.ask("/cron 61 * * * * do it", "❌")
    assert "minute" in bad and "/cron 0 9 * * 1-5" in bad
    vague = await fetch.ask("/remind call mom sometime", "❌")
    assert "in 20m" in vague
    assert "What should I remind you of" in await fetch.ask("/remind in 20m", "❓")
    assert "/remind" in await fetch.ask("/remind", "/remind list")
    assert "/cron list" in await fetch.ask("/cron", "/cron list")


async def test_scheduled_prompt_runs_as_a_fresh_session_in_the_owner_chat(
    fetch: Driver,
) -> None:
    await fetch.ask("/schedule /status in 1s", "Job #")
    header = await fetch.expect("🔁 Job #", timeout=10)
    assert "/status" in header
    status = await fetch.expect("🐕 Fetch", timeout=10)  # the job's own session answered
    assert "scheduler:" in status
    key = fetch.terminal_key()
    sessions = fetch.services.journal  # the job ran in a session of its own
    assert sessions is not None and key.chat == "owner"
