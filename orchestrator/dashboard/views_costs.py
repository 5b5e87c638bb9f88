"""Costs in money: per day, model, task and chat (and per message on a chat's page),
with budget bars when the settings carry budgets. Sums come from the usage ledger's port
(``store.usage``), which includes the rows still queued."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from aiohttp import web

from orchestrator.dashboard.context import Dash

DAY = 86400.0
WINDOW_DAYS = 30


@dataclass(frozen=True, slots=True)
class Bar:
    label: str
    spent: float
    limit: float

    @property
    def percent(self) -> int:
        return min(100, round(100 * self.spent / self.limit)) if self.limit > 0 else 0

    @property
    def over(self) -> bool:
        return self.spent >= self.limit


def _limits(budgets: Any) -> dict[str, float]:
    """Daily and monthly USD limits from a ``budgets`` settings section, whatever its
    exact field names (``daily_usd``, ``day``, ``per_day``, ``monthly_usd``, ...)."""
    found: dict[str, float] = {}
    fields = budgets.model_dump() if hasattr(budgets, "model_dump") else budgets
    if not isinstance(fields, dict):
        return found
    for name, value in fields.items():
        if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
            continue
        lowered = str(name).lower()
        if "day" in lowered or "daily" in lowered:
            found.setdefault("day", float(value))
        elif "month" in lowered:
            found.setdefault("month", float(value))
    return found


def starts(now: float, tz: ZoneInfo) -> tuple[float, float]:
    """The start of today and of this month, in the owner's timezone."""
    local = datetime.fromtimestamp(now, tz)
    day = local.replace(hour=0, minute=0, second=0, microsecond=0)
    return day.timestamp(), day.replace(day=1).timestamp()


async def costs(dash: Dash, request: web.Request) -> web.Response:
    usage = dash.services.store.usage
    tz = dash.render.tz
    now = time.time()
    today, month = starts(now, tz)
    since = now - WINDOW_DAYS * DAY
    day_total = await usage.total(today)
    month_total = await usage.total(month)
    limits = _limits(getattr(dash.services.settings, "budgets", None))
    bars = []
    if "day" in limits:
        bars.append(Bar("today", day_total.cost, limits["day"]))
    if "month" in limits:
        bars.append(Bar("this month", month_total.cost, limits["month"]))
    days = await usage.by_day(since, None, str(tz))
    top = max((d.cost for d in days), default=0.0)
    return dash.page(
        request,
        "dash/costs.html",
        title="Costs",
        today=day_total,
        month=month_total,
        bars=bars,
        days=list(reversed(days)),
        top=top,
        models=await usage.by_model(since),
        tasks=await usage.by_task(since, None, 20),
        chats=(await usage.by_session(since))[:20],
        window=WINDOW_DAYS,
    )
