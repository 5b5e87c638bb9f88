"""The ``usage`` table (migration 9): the cost ledger, one row per paid model call.

Written by the orchestrator's own calls (``source`` = orchestrator for planner turns,
summarize, embed) and by the relay for each harness call (``source`` = relay). Read by
budgets, ``/cost`` and the dashboard, always through ``UsagePort``:

* ``record(row)``: queue one row (written behind, in a batch: never on the reply path).
* ``total(since, until, task=, session=)``: one sum (budgets: today, this task).
* ``by_day(since, until, tz)``: per local calendar day of ``tz`` (IANA name), oldest first.
* ``by_model`` / ``by_source`` / ``by_session`` / ``by_task`` (``since``/``until``): per
  group, dearest first. ``by_message(session)``: the chat's latest messages, newest first.
* ``recent(limit, before)``: the calls themselves, newest first, paged by id (pass the
  last row's ``id`` as ``before`` for the next page).

Every read includes the rows still queued. ``since``/``until`` are epoch seconds,
``since`` inclusive, ``until`` exclusive (``None``: no end). ``cost`` is in USD.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from orchestrator.store import sql
from orchestrator.store.engine import Engine

SOURCES = ("orchestrator", "relay", "embed", "summarize")
# by_day sums in 15-minute buckets in SQL and names each bucket's local day here: every
# UTC offset in use is a whole number of quarter hours, so a bucket never spans two days.
_BUCKET = 900


@dataclass(frozen=True, slots=True)
class UsageRow:
    """One model call. ``at`` 0 means "now" when recorded; ``id`` is set when read."""

    source: str  # orchestrator | relay | embed | summarize
    model: str = ""
    provider: str = ""  # the provider's name from settings (or the relay's vendor)
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0  # USD, 0 when the model has no price
    latency_ms: float = 0.0
    status: int = 200  # HTTP status, 0 when none came (connection refused, timeout)
    error: str = ""
    session: str = ""  # key_str of the chat, '' for none
    message: int | None = None  # messages.id of the inbound it served
    task: int | None = None  # tasks.id when it served a task
    at: float = 0.0
    id: int = 0

    @property
    def failed(self) -> bool:
        return self.status != 200 or bool(self.error)


@dataclass(frozen=True, slots=True)
class UsageTotal:
    """The sum of a group of calls. ``key`` names the group: a day (``2026-05-01``), a
    model, a source, a session, or a task or message id as text; '' for a plain total."""

    key: str
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    errors: int = 0  # calls that failed (status not 200, or an error)

    def __add__(self, other: UsageTotal) -> UsageTotal:
        """The sums of both groups, under this one's key."""
        return UsageTotal(
            self.key,
            self.calls + other.calls,
            self.tokens_in + other.tokens_in,
            self.tokens_out + other.tokens_out,
            self.cost + other.cost,
            self.errors + other.errors,
        )


class UsagePort(Protocol):
    def record(self, row: UsageRow) -> None:
        """Queue one call; it is written shortly after, in a batch."""

    async def flush(self) -> None:
        """Write every queued row now."""

    async def total(
        self,
        since: float,
        until: float | None = None,
        *,
        task: int | None = None,
        session: str | None = None,
    ) -> UsageTotal:
        """All calls in the window (of one task or chat when given), as one sum."""

    async def by_day(self, since: float, until: float | None, tz: str) -> list[UsageTotal]:
        """Per calendar day in ``tz`` (an IANA name), oldest first; days without calls
        are left out."""

    async def by_model(self, since: float, until: float | None = None) -> list[UsageTotal]:
        """Per model, dearest first (then by name)."""

    async def by_source(self, since: float, until: float | None = None) -> list[UsageTotal]:
        """Per source (orchestrator, relay, embed, summarize), dearest first."""

    async def by_session(self, since: float, until: float | None = None) -> list[UsageTotal]:
        """Per chat (``channel:chat``; '' for calls that served none), dearest first."""

    async def by_task(
        self, since: float, until: float | None = None, limit: int = 50
    ) -> list[UsageTotal]:
        """Per task (key: the task id), dearest first, at most ``limit``."""

    async def by_message(self, session: str, limit: int = 50) -> list[UsageTotal]:
        """The chat's calls per inbound message (key: the message id), newest message
        first, at most ``limit``."""

    async def recent(self, limit: int = 50, before: int | None = None) -> list[UsageRow]:
        """The calls, newest first; ``before``: only rows with a smaller id (paging)."""


COLUMNS = (
    "at, source, session, message, task, provider, model, tokens_in, tokens_out, cost,"
    " latency_ms, status, error"
)
INSERT = f"INSERT INTO usage({COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
_SUMS = (
    "COUNT(*), COALESCE(SUM(tokens_in),0), COALESCE(SUM(tokens_out),0),"
    " COALESCE(SUM(cost),0),"
    " COALESCE(SUM(CASE WHEN status != 200 OR error != '' THEN 1 ELSE 0 END),0)"
)


def stamped(row: UsageRow, now: float) -> UsageRow:
    """The row as it is kept: its time set, its strings bounded."""
    return replace(
        row,
        at=row.at or now,
        model=row.model[:200],
        provider=row.provider[:100],
        error=row.error[:500],
    )


def day_of(at: float, tz: ZoneInfo) -> str:
    return datetime.fromtimestamp(at, tz).date().isoformat()


def days_from_buckets(rows: Iterable[tuple[int, UsageTotal]], tz: str) -> list[UsageTotal]:
    """Fold 15-minute buckets (bucket number, sums) into local days, oldest first."""
    zone = ZoneInfo(tz)
    days: dict[str, UsageTotal] = {}
    for bucket, sums in rows:
        day = day_of(bucket * _BUCKET, zone)
        days[day] = days.get(day, UsageTotal(day)) + sums
    return [days[d] for d in sorted(days)]


def _total(key: str, row: Any) -> UsageTotal:
    return UsageTotal(key, int(row[0]), int(row[1]), int(row[2]), float(row[3]), int(row[4]))


def dearest(totals: Iterable[UsageTotal]) -> list[UsageTotal]:
    return sorted(totals, key=lambda t: (-t.cost, -t.calls, t.key))


class SqliteUsage:
    def __init__(self, db: Engine) -> None:
        self._db = db

    def record(self, row: UsageRow) -> None:
        r = stamped(row, time.time())
        self._db.write_behind(
            INSERT,
            (
                r.at,
                r.source,
                r.session,
                r.message,
                r.task,
                r.provider,
                r.model,
                r.tokens_in,
                r.tokens_out,
                r.cost,
                r.latency_ms,
                r.status,
                r.error,
            ),
        )

    async def flush(self) -> None:
        await self._db.flush()

    async def _rows(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        await self._db.flush()  # queued calls count: a budget must see the last one
        return list(await self._db.conn.execute_fetchall(sql, params))

    @staticmethod
    def _window(since: float, until: float | None) -> tuple[str, tuple[Any, ...]]:
        if until is None:
            return "at >= ?", (since,)
        return "at >= ? AND at < ?", (since, until)

    async def _source(self, since: float, until: float | None) -> str:
        """``usage``, or ``usage NOT INDEXED`` when the window holds much of the table:
        reading a quarter or more of the rows through the ``at`` index costs a random
        lookup each, several times a plain scan (bench/costs.py: 300 vs 56 ms for 100,000
        rows). SQLite keeps no statistics of ranges, so the share is estimated from the
        oldest row (the index answers that at once)."""
        rows = await self._db.conn.execute_fetchall("SELECT MIN(at), MAX(at) FROM usage")
        oldest, newest = next(iter(rows), (None, None))
        if oldest is None or newest is None:
            return "usage"
        end = newest if until is None else min(until, newest)
        span = float(newest) - float(oldest)
        if span <= 0 or (end - max(since, float(oldest))) / span >= 0.25:
            return sql.unindexed("usage", self._db.dialect)
        return "usage"

    async def total(
        self,
        since: float,
        until: float | None = None,
        *,
        task: int | None = None,
        session: str | None = None,
    ) -> UsageTotal:
        where, params = self._window(since, until)
        if task is not None:
            where, params = f"task = ? AND {where}", (task, *params)
        if session is not None:
            where, params = f"session = ? AND {where}", (session, *params)
        rows = await self._rows(f"SELECT {_SUMS} FROM usage WHERE {where}", params)
        return _total("", rows[0])

    async def _grouped(
        self, column: str, since: float, until: float | None, extra: str = ""
    ) -> list[UsageTotal]:
        where, params = self._window(since, until)
        table = await self._source(since, until)
        rows = await self._rows(
            f"SELECT {column}, {_SUMS} FROM {table} WHERE {where}{extra} GROUP BY {column}",
            params,
        )
        return dearest(_total(str(r[0]), r[1:]) for r in rows)

    async def by_day(self, since: float, until: float | None, tz: str) -> list[UsageTotal]:
        where, params = self._window(since, until)
        table = await self._source(since, until)
        rows = await self._rows(
            f"SELECT {sql.bucket('at', _BUCKET, self._db.dialect)} AS b, {_SUMS} FROM {table}"
            f" WHERE {where} GROUP BY b",
            params,
        )
        return days_from_buckets(((int(r[0]), _total("", r[1:])) for r in rows), tz)

    async def by_model(self, since: float, until: float | None = None) -> list[UsageTotal]:
        return await self._grouped("model", since, until)

    async def by_source(self, since: float, until: float | None = None) -> list[UsageTotal]:
        return await self._grouped("source", since, until)

    async def by_session(self, since: float, until: float | None = None) -> list[UsageTotal]:
        return await self._grouped("session", since, until)

    async def by_task(
        self, since: float, until: float | None = None, limit: int = 50
    ) -> list[UsageTotal]:
        totals = await self._grouped("task", since, until, " AND task IS NOT NULL")
        return totals[: max(limit, 0)]

    async def by_message(self, session: str, limit: int = 50) -> list[UsageTotal]:
        rows = await self._rows(
            f"SELECT message, {_SUMS} FROM usage WHERE session = ? AND message IS NOT NULL"
            " GROUP BY message ORDER BY message DESC LIMIT ?",
            (session, max(limit, 0)),
        )
        return [_total(str(r[0]), r[1:]) for r in rows]

    async def recent(self, limit: int = 50, before: int | None = None) -> list[UsageRow]:
        where, params = ("WHERE id < ?", (before,)) if before is not None else ("", ())
        rows = await self._rows(
            f"SELECT id, {COLUMNS} FROM usage {where} ORDER BY id DESC LIMIT ?",
            (*params, max(limit, 0)),
        )
        return [
            UsageRow(
                id=int(r[0]),
                at=float(r[1]),
                source=str(r[2]),
                session=str(r[3]),
                message=None if r[4] is None else int(r[4]),
                task=None if r[5] is None else int(r[5]),
                provider=str(r[6]),
                model=str(r[7]),
                tokens_in=int(r[8]),
                tokens_out=int(r[9]),
                cost=float(r[10]),
                latency_ms=float(r[11]),
                status=int(r[12]),
                error=str(r[13]),
            )
            for r in rows
        ]


class MemoryUsage:
    """The in-memory twin (tests of code above the store)."""

    def __init__(self) -> None:
        self._rows: list[UsageRow] = []

    def record(self, row: UsageRow) -> None:
        self._rows.append(replace(stamped(row, time.time()), id=len(self._rows) + 1))

    async def flush(self) -> None:
        return None

    def _in(self, since: float, until: float | None) -> list[UsageRow]:
        return [r for r in self._rows if r.at >= since and (until is None or r.at < until)]

    @staticmethod
    def _sum(key: str, rows: Iterable[UsageRow]) -> UsageTotal:
        total = UsageTotal(key)
        for r in rows:
            total += UsageTotal(key, 1, r.tokens_in, r.tokens_out, r.cost, int(r.failed))
        return total

    def _grouped(self, rows: Iterable[UsageRow], key: Any) -> list[UsageTotal]:
        groups: dict[str, list[UsageRow]] = {}
        for r in rows:
            groups.setdefault(str(key(r)), []).append(r)
        return dearest(self._sum(k, v) for k, v in groups.items())

    async def total(
        self,
        since: float,
        until: float | None = None,
        *,
        task: int | None = None,
        session: str | None = None,
    ) -> UsageTotal:
        rows = [
            r
            for r in self._in(since, until)
            if (task is None or r.task == task) and (session is None or r.session == session)
        ]
        return self._sum("", rows)

    async def by_day(self, since: float, until: float | None, tz: str) -> list[UsageTotal]:
        buckets = ((int(r.at // _BUCKET), self._sum("", [r])) for r in self._in(since, until))
        return days_from_buckets(buckets, tz)

    async def by_model(self, since: float, until: float | None = None) -> list[UsageTotal]:
        return self._grouped(self._in(since, until), lambda r: r.model)

    async def by_source(self, since: float, until: float | None = None) -> list[UsageTotal]:
        return self._grouped(self._in(since, until), lambda r: r.source)

    async def by_session(self, since: float, until: float | None = None) -> list[UsageTotal]:
        return self._grouped(self._in(since, until), lambda r: r.session)

    async def by_task(
        self, since: float, until: float | None = None, limit: int = 50
    ) -> list[UsageTotal]:
        rows = [r for r in self._in(since, until) if r.task is not None]
        return self._grouped(rows, lambda r: r.task)[: max(limit, 0)]

    async def by_message(self, session: str, limit: int = 50) -> list[UsageTotal]:
        rows = [r for r in self._rows if r.session == session and r.message is not None]
        totals = self._grouped(rows, lambda r: r.message)
        totals.sort(key=lambda t: -int(t.key))
        return totals[: max(limit, 0)]

    async def recent(self, limit: int = 50, before: int | None = None) -> list[UsageRow]:
        rows = [r for r in reversed(self._rows) if before is None or r.id < before]
        return rows[: max(limit, 0)]


__all__ = [
    "SOURCES",
    "MemoryUsage",
    "SqliteUsage",
    "UsagePort",
    "UsageRow",
    "UsageTotal",
]
