"""Costs in money: per day, model, task and chat (and per message on a chat's page),
with bars against the budgets (``budgets.daily_usd``, ``budgets.task_usd``) and a chart
of the last days over the daily budget's line. Money comes first and tokens in
thousands, in tables narrow enough for a phone. Sums come from the ledger's table, kept
up to date incrementally (``costcache.py``)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import date, datetime, timedelta
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


@dataclass(frozen=True, slots=True)
class Column:
    """One day's bar in the chart (SVG user units: the chart is ``CHART_W`` wide)."""

    x: float
    y: float
    width: float
    height: float
    over: bool
    label: str  # the day, for its tooltip
    cost: float


@dataclass(frozen=True, slots=True)
class Chart:
    columns: list[Column]
    budget_y: float | None  # where the daily budget's line is drawn, if there is one
    top: float  # the money the chart's full height stands for
    first: str
    last: str


CHART_W, CHART_H = 300.0, 120.0


def chart(costs: dict[str, float], today: date, days: int, budget: float | None) -> Chart:
    """The last ``days`` days (those without a call too) as columns, scaled so that the
    dearest day and the budget's line both fit."""
    keys = [(today - timedelta(days=days - 1 - i)).isoformat() for i in range(days)]
    top = max([*(costs.get(k, 0.0) for k in keys), budget or 0.0, 0.0])
    step = CHART_W / days
    columns = []
    for i, key in enumerate(keys):
        cost = costs.get(key, 0.0)
        height = CHART_H * cost / top if top > 0 else 0.0
        columns.append(
            Column(
                x=round(i * step + step * 0.15, 2),
                y=round(CHART_H - height, 2),
                width=round(step * 0.7, 2),
                height=round(height, 2),
                over=budget is not None and budget > 0 and cost >= budget,
                label=key,
                cost=cost,
            )
        )
    line = round(CHART_H - CHART_H * budget / top, 2) if budget and top > 0 else None
    return Chart(columns, line, top, keys[0], keys[-1])


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
    local_today = datetime.fromtimestamp(now, tz).date()
    drawn = chart({d.key: d.cost for d in days}, local_today, WINDOW_DAYS, budgets.daily_usd)
    return dash.page(
        request,
        "dash/costs.html",
        title="Costs",
        today=day_total,
        month=month_total,
        bars=bars,
        days=list(reversed(days)),
        top=top,
        chart=drawn,
        chart_w=CHART_W,
        chart_h=CHART_H,
        daily_budget=budgets.daily_usd,
        models=sums.dearest("models", 50),
        tasks=sums.dearest("tasks", 20, skip_none=True),
        task_budget=budgets.task_usd,
        chats=sums.dearest("sessions", 20),
        window=WINDOW_DAYS,
    )
