"""A scheduled prompt job's diff reaches the owner's main chat and is answered there (the
job runs in a session of its own; its diff is handed to the owner's session), and a job
that would need a model, without one, is refused when it is created."""

from __future__ import annotations

from tests.conftest import Driver, git


def flat(text: str) -> str:
    return " ".join(text.split())


async def test_a_scheduled_jobs_diff_is_answered_in_the_main_chat(fetch: Driver) -> None:
    repo = fetch.services.workspace.path("demo")
    base = git(repo, "rev-parse", "HEAD")
    await fetch.ask("/schedule fix the typo in README.md of demo in 1s", "Job #")
    await fetch.expect("🔁 Job #", timeout=15)
    card = await fetch.expect("Apply?", timeout=60)
    assert "+The quick" in card
    main = await fetch.services.sessions.get(fetch.terminal_key())
    assert main.state == "GUARDING" and main.data.approval_id is not None
    done = await fetch.ask("yes", "Committed")
    head = git(repo, "rev-parse", "HEAD")
    assert head[:7] in done and git(repo, "rev-parse", "HEAD^") == base
    assert main.state == "ALERT"
    # Every session, the job's included, is back at rest; /undo works from the main chat.
    assert all(s.state == "ALERT" for s in fetch.services.sessions.live())
    assert "Reverted" in await fetch.ask("/undo", "Reverted")


async def test_a_job_that_needs_a_model_says_so_when_created(fetch: Driver) -> None:
    refused = flat(await fetch.ask("/schedule summarise the news every day at 9", "Not scheduled"))
    assert "needs a model" in refused and "none is configured" in refused
    refused = flat(await fetch.ask("/cron 0 9 * * * tell me a joke", "Not scheduled"))
    assert "needs a model" in refused
    scheduler = fetch.services.scheduler
    assert scheduler is not None
    assert not await scheduler.jobs.listing(None, ("active",))
    # A command and a code change need no model: both are scheduled.
    assert "Job #" in await fetch.ask("/schedule /status every day at 9", "Job #")
    assert "Job #" in await fetch.ask("/cron 0 9 * * * fix the typo in README.md of demo", "Job #")
