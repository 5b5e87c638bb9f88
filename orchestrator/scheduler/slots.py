"""Which slot of a due job runs now, which were missed, and when it is due next.

Pure: no clock, no database. ``up_since`` is when this scheduler started; a slot older
than that (minus a grace) came due while no scheduler was running, so it is a miss and the
job's policy decides: ``run_once`` runs the latest missed slot now (late), ``skip`` only
records them. Slots that come due while the scheduler runs are never misses, however late
a busy tick claims them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

from orchestrator.scheduler.cron import Cron

MISS_GRACE_SECONDS = 60.0  # a restart within a minute is not worth a "late" notice
MAX_MISSES_RECORDED = 1000  # one row per missed slot, up to this many per catch-up


@dataclass(frozen=True, slots=True)
class Plan:
    run_slot: float | None
    late: bool
    missed: list[float] = field(default_factory=list)
    next_at: float | None = None
    more_missed: bool = False  # past MAX_MISSES_RECORDED (a minutely job, down for days)


def plan(slot: float, cron: str | None, tz: ZoneInfo, missed_policy: str, up_since: float) -> Plan:
    cutoff = up_since - MISS_GRACE_SECONDS
    if cron is None:
        if slot >= cutoff:
            return Plan(slot, late=False)
        if missed_policy == "run_once":
            return Plan(slot, late=True)
        return Plan(None, late=False, missed=[slot])
    expr = Cron(cron)
    if slot >= cutoff:
        return Plan(slot, late=False, next_at=expr.next_after(slot, tz))
    overdue = [slot]
    upcoming = expr.next_after(slot, tz)
    more = False
    while upcoming < cutoff:
        if len(overdue) >= MAX_MISSES_RECORDED:
            more = True
            upcoming = expr.next_after(cutoff, tz)
            break
        overdue.append(upcoming)
        upcoming = expr.next_after(upcoming, tz)
    if missed_policy == "run_once":
        return Plan(overdue[-1], late=True, missed=overdue[:-1], next_at=upcoming, more_missed=more)
    return Plan(None, late=False, missed=overdue, next_at=upcoming, more_missed=more)
