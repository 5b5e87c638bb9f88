"""Costs in money: per day, model, task and chat (and per message on a chat's page),
with bars against the budgets (``budgets.daily_usd``, ``budgets.task_usd``). Sums come
from the usage ledger's port (``store.usage``), which includes the rows still queued."""

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
    usage = dash.services.store.usage
    tz = dash.render.tz
    now = time.time()
    today, month = starts(now, tz)
    since = now - WINDOW_DAYS * DAY
    day_total = await usage.total(today)
    month_total = await usage.total(month)
    budgets = dash.services.settings.budgets
    bars = []
    if budgets.daily_usd:
        bars.append(Bar("today (daily budget)", day_total.cost, budgets.daily_usd))
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
        task_budget=budgets.task_usd,
        chats=(await usage.by_session(since))[:20],
        window=WINDOW_DAYS,
    )
