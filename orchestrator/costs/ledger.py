"""The cost ledger: every paid model call priced and recorded, and the budgets kept.

Calls come from the orchestrator (``recorder``: the provider chain's attempts, with the
chat, message and task they served) and from the relay (``on_relay_call``: one
relay.jsonl entry per harness call). Each is priced (``PriceTable``), queued in the
``usage`` table (written behind: never on the reply path) and added to running sums of
today (the owner's calendar day) and of its task, so a budget check is a comparison,
not a query.

Budgets (``budgets:``): at ``warn_at`` (80%) of the daily or a task's budget the owner
gets one phone message (per day, per task); at 100% ``refusal`` names the stop, the
planner asks it before every model call and the relay before every vendor call of a
task. Commands need no model and keep working.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from core.errors import FetchError
from orchestrator.costs.prices import PriceTable
from orchestrator.costs.settings import BudgetSettings
from orchestrator.providers.chain import Attempt
from orchestrator.store.usage import UsagePort, UsageRow

log = logging.getLogger(__name__)


class BudgetReached(FetchError):
    """A budget is spent: no more model calls until the day (or the task) ends."""


def money(usd: float) -> str:
    """$0.0042, $0.42, $12.50: small sums keep their significant digits."""
    if usd and abs(usd) < 0.0001:
        return f"${usd:.6f}"
    if usd and abs(usd) < 0.01:
        return f"${usd:.4f}"
    return f"${usd:,.2f}"


def day_start(now: float, tz: str) -> float:
    """The epoch second the owner's current calendar day began."""
    local = datetime.fromtimestamp(now, ZoneInfo(tz))
    return local.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()


def week_start(now: float, tz: str) -> float:
    """Monday 00:00 of the owner's current week."""
    local = datetime.fromtimestamp(now, ZoneInfo(tz))
    monday = (local - timedelta(days=local.weekday())).date()
    return datetime(monday.year, monday.month, monday.day, tzinfo=ZoneInfo(tz)).timestamp()


class CostLedger:
    def __init__(
        self,
        usage: UsagePort,
        prices: PriceTable,
        budgets: BudgetSettings,
        tz: str,
        *,
        now: Callable[[], float] = time.time,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.usage, self.prices, self.budgets, self.tz = usage, prices, budgets, tz
        self.now = now
        self.warn = warn  # sends one line to the owner's phone (set by the app)
        self._day = ""  # the owner's date the sums below belong to
        self._today = 0.0
        self._tasks: dict[int, float] = {}
        self._said: set[str] = set()  # "day:2026-03-10:80", "task:7:100": told once

    # -- start-up ----------------------------------------------------------------------
    async def load(self) -> None:
        """Today's spend so far (a restart keeps counting the same day)."""
        now = self.now()
        self._day = datetime.fromtimestamp(now, ZoneInfo(self.tz)).date().isoformat()
        self._today = (await self.usage.total(day_start(now, self.tz))).cost

    def _roll(self) -> None:
        day = datetime.fromtimestamp(self.now(), ZoneInfo(self.tz)).date().isoformat()
        if day != self._day:
            self._day, self._today = day, 0.0

    # -- recording ---------------------------------------------------------------------
    def record(self, row: UsageRow) -> UsageRow:
        """Price ``row`` (unless it has a cost), queue it and check the budgets."""
        if not row.cost and (row.tokens_in or row.tokens_out):
            cost = self.prices.cost(row.model, row.tokens_in, row.tokens_out)
            row = replace(row, cost=cost)
        if not row.at:
            row = replace(row, at=self.now())
        self.usage.record(row)
        self._roll()
        self._today += row.cost
        if row.task is not None:
            self._tasks[row.task] = self._tasks.get(row.task, 0.0) + row.cost
        if row.cost:
            self._check(row.task)
        return row

    def recorder(
        self,
        source: str,
        *,
        session: str = "",
        message: int | None = None,
        task: int | None = None,
    ) -> Callable[[Attempt], None]:
        """What the provider chain calls with each attempt of one model call."""

        def record(attempt: Attempt) -> None:
            self.record(
                UsageRow(
                    source=source,
                    session=session,
                    message=message,
                    task=task,
                    provider=attempt.provider,
                    model=attempt.model,
                    tokens_in=attempt.tokens_in,
                    tokens_out=attempt.tokens_out,
                    latency_ms=attempt.latency_ms,
                    status=attempt.status,
                    error=attempt.error,
                )
            )

        return record

    def relay_hook(self, session: str) -> Callable[[Mapping[str, Any]], None]:
        """The relay's ``on_call`` for a task of chat ``session``."""
        return lambda entry: self.on_relay_call({**entry, "session": session})

    def on_relay_call(self, entry: Mapping[str, Any]) -> None:
        """One relay.jsonl entry (kennel/relay.py): a harness's call to its vendor."""
        task = entry.get("task")
        self.record(
            UsageRow(
                source="relay",
                task=int(task) if isinstance(task, int) else None,
                session=str(entry.get("session", "")),
                provider=str(entry.get("provider", "")),
                model=str(entry.get("model", "")),
                tokens_in=int(entry.get("tokens_in", 0) or 0),
                tokens_out=int(entry.get("tokens_out", 0) or 0),
                latency_ms=float(entry.get("latency_ms", 0.0) or 0.0),
                status=int(entry.get("status", 0) or 0),
                error=str(entry.get("error", "")),
            )
        )

    # -- budgets -----------------------------------------------------------------------
    def spent_today(self) -> float:
        self._roll()
        return self._today

    def spent_on_task(self, task: int) -> float:
        return self._tasks.get(task, 0.0)

    def status_line(self) -> str:
        """/status's line: today's spend, against the daily budget when there is one."""
        spent = self.spent_today()
        daily = self.budgets.daily_usd
        if daily is None:
            return f"spent today: {money(spent)} (/cost)"
        return f"spent today: {money(spent)} of {money(daily)} ({spent / daily:.0%}; /cost)"

    def refusal(self, task: int | None = None) -> str | None:
        """Why no more model calls may be made now (for this task), or None."""
        daily = self.budgets.daily_usd
        if daily is not None and self.spent_today() >= daily:
            return (
                f"daily budget of {money(daily)} reached ({money(self._today)} spent today); "
                f"/cost for details; raise budgets.daily_usd or wait until tomorrow "
                f"({self.tz})"
            )
        limit = self.budgets.task_usd
        if task is not None and limit is not None and self.spent_on_task(task) >= limit:
            return (
                f"task budget of {money(limit)} reached for task #{task} "
                f"({money(self.spent_on_task(task))} spent); /cost for details; raise "
                "budgets.task_usd"
            )
        return None

    def check(self, task: int | None = None) -> None:
        """Raise ``BudgetReached`` when a budget is spent (before a model call)."""
        refused = self.refusal(task)
        if refused:
            raise BudgetReached(refused)

    def gate(self, task: int | None) -> Callable[[], str | None]:
        """The relay's question before each vendor call of ``task``."""
        return lambda: self.refusal(task)

    def _check(self, task: int | None) -> None:
        daily = self.budgets.daily_usd
        if daily is not None:
            self._tell(f"day:{self._day}", self._today, daily, "today's budget", "tomorrow")
        limit = self.budgets.task_usd
        if task is not None and limit is not None:
            self._tell(f"task:{task}", self._tasks[task], limit, f"task #{task}'s budget", "")

    def _tell(self, what: str, spent: float, limit: float, name: str, until: str) -> None:
        share = spent / limit
        if share >= 1 and f"{what}:100" not in self._said:
            self._said.update({f"{what}:100", f"{what}:warn"})
            after = f" until {until} ({self.tz})" if until else " for this task"
            self._say(
                f"🛑 {money(spent)} of {name} of {money(limit)} is spent: model calls are "
                f"stopped{after}. Commands still work; /cost for details."
            )
        elif share >= self.budgets.warn_at and f"{what}:warn" not in self._said:
            self._said.add(f"{what}:warn")
            self._say(
                f"⚠️ {money(spent)} of {name} of {money(limit)} spent ({share:.0%}). At "
                f"100% model calls stop; /cost for details."
            )

    def _say(self, text: str) -> None:
        log.warning("budget: %s", text)
        if self.warn is not None:
            try:
                self.warn(text)
            except Exception:  # a warning that cannot be sent must not lose the call
                log.exception("budget warning could not be sent")
