"""The optional scheduled self-review (``improve.schedule``): a recurring prompt job whose
text is ``/improve <review prompt>``. When it fires it runs like the owner typing it, so it
can only ever *propose* a pull request; it never merges. Kept in step with the setting at
every start: added when set, moved when the schedule changed, cancelled when removed."""

from __future__ import annotations

import logging

from core.events import SessionKey
from orchestrator.config import Settings
from orchestrator.scheduler import Scheduler
from orchestrator.scheduler.cron import describe, parse_cron
from orchestrator.scheduler.phrases import When

log = logging.getLogger(__name__)

REVIEW_PROMPT = (
    "Review Fetch's own code for one small, safe improvement (a bug, a missing check, an "
    "unclear message, a missing test) and make only that change, with a test."
)
REVIEW_TEXT = f"/improve {REVIEW_PROMPT}"


async def keep_review_job(
    scheduler: Scheduler, settings: Settings, owner: SessionKey | None
) -> str:
    """Make the scheduler's review job match ``improve.schedule``; what was done, in words
    (for the log). Never raises for the scheduler's sake: start-up goes on without it."""
    wanted = settings.improve.schedule if settings.improve.enabled else None
    try:
        jobs = await scheduler.jobs.listing(None, ("active", "paused"))
        current = [j for j in jobs if j.kind == "prompt" and j.text == REVIEW_TEXT]
        keep = next((j for j in current if wanted and j.cron == parse_cron(wanted).expr), None)
        for job in current:
            if job is not keep:
                await scheduler.cancel(job)
        if keep is not None or not wanted:
            return "self-review: unchanged" if keep else "self-review: off"
        if owner is None:
            return "self-review: no owner chat to report to; not scheduled"
        cron = parse_cron(wanted)
        when = When(None, cron, f"self-review {describe(cron.expr)}")
        job = await scheduler.create(kind="prompt", text=REVIEW_TEXT, when=when, home=owner)
        return f"self-review: job #{job.id}, {describe(cron.expr)}"
    except Exception as err:  # the review is optional; Fetch starts without it
        log.warning("the self-review job could not be kept in step: %s", err)
        return f"self-review: not scheduled ({err})"


__all__ = ["REVIEW_PROMPT", "REVIEW_TEXT", "keep_review_job"]
