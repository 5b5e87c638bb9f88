"""Scheduling requests as the owner says them (commands) or the model sends them (tools),
turned into jobs and answered in words. Both surfaces share this, so they cannot drift."""

from __future__ import annotations

import re
from collections.abc import Callable

from core.events import SessionKey
from orchestrator.scheduler.cron import CronError, parse_cron
from orchestrator.scheduler.jobs import OWNER
from orchestrator.scheduler.localtime import zone
from orchestrator.scheduler.phrases import (
    EXAMPLES,
    PhraseError,
    When,
    parse_when,
    split_request,
)
from orchestrator.scheduler.replies import confirmation
from orchestrator.scheduler.service import Scheduler

CRONISH = re.compile(r"^(?:@\w+|[\d*?/,LlA-Za-z-]+(?:\s+[\d*?/,LlA-Za-z-]+){4})$")
USAGE = {
    "reminder": "/remind call mom in 20m · /remind standup at 9:30 · "
    "/remind pay rent tomorrow 9:00 · /remind stretch every 2 hours",
    "prompt": "/schedule check the nightly build of myapp at 9am · "
    "/schedule summarise open TODOs in myapp every monday at 8:30",
}


def when_of(spec: str, now: float, tz_name: str) -> When:
    """A time phrase, or a cron expression (five fields or an @alias)."""
    spec = " ".join(spec.split())
    if CRONISH.match(spec) and (
        spec.startswith("@") or any(c.isdigit() or c == "*" for c in spec.split()[0])
    ):
        return When(None, parse_cron(spec), spec)
    return parse_when(spec, now, zone(tz_name))


async def schedule_line(
    scheduler: Scheduler,
    kind: str,
    line: str,
    home: SessionKey,
    missed: str = "run_once",
    check: Callable[[str], str | None] | None = None,
    creator: str = OWNER,
) -> str:
    """ "call mom in 20m" -> a job and its confirmation, or an error with examples;
    ``check`` says why a prompt could not run when it fires (then nothing is created)."""
    now = scheduler.clock.now()
    try:
        request = split_request(line, now, zone(scheduler.settings.timezone))
    except (PhraseError, CronError) as err:
        return f"❌ {err}\nLike: {USAGE[kind]}"
    if not request.message:
        what = "What should I remind you of" if kind == "reminder" else "What should I do"
        return f"❓ {what}? Like: {USAGE[kind]}"
    refused = check(request.message) if check is not None else None
    if refused is not None:
        return refused
    job = await scheduler.create(
        kind=kind,
        text=request.message,
        when=request.when,
        home=home,
        missed=missed,
        creator=creator,
    )
    return confirmation(job, now)


async def schedule_parts(
    scheduler: Scheduler,
    kind: str,
    text: str,
    when: str,
    home: SessionKey,
    missed: str = "run_once",
    creator: str = OWNER,
) -> str:
    """The model's form: what and when given apart."""
    now = scheduler.clock.now()
    if not text.strip():
        return "error: the text to send or run is empty"
    try:
        parsed = when_of(when, now, scheduler.settings.timezone)
    except (PhraseError, CronError) as err:
        return f"error: {err} (time phrases: {EXAMPLES}; or a five-field cron expression)"
    job = await scheduler.create(
        kind=kind, text=text.strip(), when=parsed, home=home, missed=missed, creator=creator
    )
    return confirmation(job, now)
