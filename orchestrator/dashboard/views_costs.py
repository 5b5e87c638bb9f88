"""Costs in money: per day, model, task and chat (and per message on a chat's page),
with bars against the budgets (``budgets.daily_usd``, ``budgets.task_usd``). Sums come
from the ledger's table, kept up to date incrementally (``costcache.py``)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
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


def starts(now: float, tz: ZoneInfo) -> tuple[float, float]:
    """The start of today and of this month, in the owner's timezone."""
    local = datetime.fromtimestamp(now, tz)
    day = local.replace(hour=0, minute=0, second=0, microsecond=0)
    return day.timestamp(), day.replace(day=1).timestamp()


async def costs(dash: Dash, request: web.Request) -> web.Response:
    tz = dash.render.tz
    now = time.time()
    today, month = starts(now, tz)
    sums = await dash.costs.current(now)
    day_total, month_total = sums.total_since(today), sums.total_since(month)
    budgets = dash.services.settings.budgets
    bars = []
    if budgets.daily_usd:
        bars.append(Bar("today (daily budget)", day_total.cost, budgets.daily_usd))
    first = datetime.fromtimestamp(now - (WINDOW_DAYS - 1) * DAY, tz).date().isoformat()
    days = [d for d in sums.days(str(tz)) if d.key >= first]
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
        models=sums.dearest("models", 50),
        tasks=sums.dearest("tasks", 20, skip_none=True),
        task_budget=budgets.task_usd,
        chats=sums.dearest("sessions", 20),
        window=WINDOW_DAYS,
    )
