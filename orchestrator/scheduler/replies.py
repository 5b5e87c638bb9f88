"""What the owner reads about jobs: confirmations, listings, and problem reports."""

from __future__ import annotations

from orchestrator.scheduler.cron import describe
from orchestrator.scheduler.jobs import CLOCK_JUMP, Job, Run
from orchestrator.scheduler.localtime import zone
from orchestrator.scheduler.words import next_run_words, when_words

ICONS = {"reminder": "⏰", "prompt": "🔁"}


def label(job: Job, limit: int = 60) -> str:
    text = job.text if len(job.text) <= limit else job.text[: limit - 1] + "…"
    return f"#{job.id} “{text}”"


def repeat_words(job: Job) -> str:
    return describe(job.cron) if job.cron else "once"


def confirmation(job: Job, now: float) -> str:
    """Short lines: a phone shows ~60 columns, and each line is one fact."""
    tz = zone(job.tz)
    what = "Reminder" if job.kind == "reminder" else "Job"
    head = f"{ICONS.get(job.kind, '⏰')} {what} {label(job, 120)}"
    if job.next_at is None:
        return f"{head} is set."
    when = next_run_words(job.next_at, now, tz)
    if job.cron is None:
        return f"{head}\n{when}\n/cron cancel {job.id} to drop it"
    return (
        f"{head}\n{repeat_words(job)} ({job.tz})\nnext run {when}\n"
        f"/cron pause {job.id} · /cron cancel {job.id}"
    )


def listing(jobs: list[Job], now: float) -> str:
    if not jobs:
        return (
            "Nothing scheduled. Try /remind stretch in 20m, or "
            "/cron 0 9 * * 1-5 check the nightly build of myapp"
        )
    lines = [f"📅 {len(jobs)} scheduled:"]
    for job in jobs:
        tz = zone(job.tz)
        if job.status == "paused":
            state = "⏸ paused"
        elif job.status == "failed":
            state = f"❌ failed (/cron resume {job.id})"
        elif job.next_at is None:
            state = "running now"
        else:
            state = f"next {when_words(job.next_at, now, tz)}"
        kind = "" if job.kind == "reminder" else " [runs as a prompt]"
        lines.append(
            f"{ICONS.get(job.kind, '⏰')} {label(job)}{kind} · {repeat_words(job)} · {state}"
        )
    return "\n".join(lines)


def problems_text(items: list[tuple[Job, Run]], now: float) -> str:
    """Misses, interrupted sends and failures, one block per job: every one is told."""
    lines: list[str] = []
    by_job: dict[int, list[tuple[Job, Run]]] = {}
    for job, run in items:
        by_job.setdefault(job.id, []).append((job, run))
    for runs in by_job.values():
        job = runs[0][0]
        tz = zone(job.tz)
        missed = [r for _j, r in runs if r.status == "missed"]
        if missed:
            times = ", ".join(when_words(r.slot, now, tz) for r in missed[:5])
            more = f" and {len(missed) - 5} more" if len(missed) > 5 else ""
            if any("and more" in (r.error or "") for r in missed):
                more += " (and more before I caught up)"
            then = (
                "I ran the latest one late"
                if job.missed == "run_once"
                else "skipped, as set for this job"
            )
            jumped = all((r.error or "").startswith(CLOCK_JUMP) for r in missed)
            why = (
                "Missed when the clock jumped forward (the machine slept, or its time was set)"
                if jumped
                else "Missed while I was offline"
            )
            lines.append(f"⚠️ {why}: {label(job)} at {times}{more} — {then}.")
        for _j, run in runs:
            if run.status == "interrupted":
                lines.append(
                    f"⚠️ I was stopped while sending {label(job)} (due "
                    f"{when_words(run.slot, now, tz)}); it may not have reached you."
                )
            elif run.status == "failed":
                again = (
                    f"/cron resume {job.id} starts it again"
                    if job.cron
                    else f"/cron resume {job.id} tries once more"
                )
                lines.append(
                    f"❌ {label(job)} failed {run.attempt} time"
                    f"{'s' * (run.attempt != 1)}: {run.error}. I stopped it; "
                    f"{again}."
                )
    return "\n".join(lines)
