"""Benchmark 1: instinct round trip in-process, Inbound to reply queued.

A real app (SQLite file in a temp FETCH_HOME, a temp workspace with one tiny git repo,
the demo harness) driven through the terminal channel, like the end-to-end tests.
For each message the clock runs from ``await terminal.submit(...)`` until the reply
is taken from ``terminal.outbox``. Two instincts:

* ``/help``   - a plain queued instinct: gateway -> session queue -> worker -> reply.
* ``/status`` - bypasses the queue (its own task) and reads token totals from SQLite.

``/status`` is sent on a second terminal channel (its own chat, so its own session):
its token-total query reads the session's history, and a shared history would make
each command's figure depend on how many of the *other* it ran before. The
"p50 first10%" / "p50 last10%" columns show how a figure drifts as history grows.

Each message is sent only once the previous one has *settled* (its last SQLite write,
``finish_inbound``, is done): a person on a phone never sends 10,000 messages back to
back, and without settling, message N's tail writes would queue ahead of message
N+1's and the figure would measure contention, not latency.

Baselines run interleaved with the instincts, one of each per iteration, so a noisy
neighbour slows baseline and subject alike and the ratios stay meaningful:

* a bare ``asyncio.Queue`` hop through a relay task (put -> task -> put -> get),
* a bare aiosqlite ``INSERT`` (autocommit) on a WAL file with the store's pragmas,
* a bare aiosqlite write transaction as ``Store.transaction`` does it
  (``BEGIN IMMEDIATE`` / ``INSERT`` / ``COMMIT``: three thread hops).

``python -m bench.roundtrip --profile`` adds where the time goes: a per-stage split
of each round trip (wrapping the store, journal and channel of the running app) and
a cProfile of the event-loop thread.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import pstats
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiosqlite

from bench._common import fresh_dirs, ratio, summary, table
from channels.terminal import TerminalChannel
from orchestrator.app import build_app
from orchestrator.config import load_settings
from orchestrator.store import Store

TARGET_P99_US = 1000.0  # the product's stated target: p99 under 1 ms
WARMUP = 200  # first messages create the session, warm caches and SQLite pages
SUBJECTS = {"/help": "🐕 I'm Fetch", "/status": "🐕 Fetch ·"}  # command -> reply prefix
BASELINES = ("queue hop", "aiosqlite INSERT", "aiosqlite txn")


def _us(ns: int) -> float:
    return ns / 1000.0


class Settled:
    """Set when the gateway finishes a message's last write (``inbox.finish``).

    It wraps the running inbox's method on the instance: the app's code is untouched
    and the gateway looks the method up at call time, so every message passes here.
    """

    def __init__(self, store: Store) -> None:
        self._inner = store.inbox.finish
        self.event = asyncio.Event()
        setattr(store.inbox, "finish", self._finish)  # noqa: B010 - instance shadowing

    async def _finish(self, channel: str, message_id: str) -> None:
        try:
            await self._inner(channel, message_id)
        finally:
            self.event.set()


class StatusTerminal(TerminalChannel):
    """The terminal channel under a second name: a second chat with its own session."""

    name = "terminal-status"


class QueueHop:
    """put -> relay task -> put -> get: the cheapest possible "other task answers"."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[int] = asyncio.Queue()
        self.outbox: asyncio.Queue[int] = asyncio.Queue()
        self._task = asyncio.get_running_loop().create_task(self._relay())

    async def _relay(self) -> None:
        while True:
            self.outbox.put_nowait(await self.inbox.get())

    async def once(self) -> int:
        t0 = time.perf_counter_ns()
        self.inbox.put_nowait(1)
        await self.outbox.get()
        return time.perf_counter_ns() - t0

    async def close(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


class BareSqlite:
    """One aiosqlite connection configured like ``Store.open`` (WAL, NORMAL sync)."""

    def __init__(self, db: aiosqlite.Connection) -> None:
        self.db = db

    @classmethod
    async def open(cls, path: Path) -> BareSqlite:
        db = await aiosqlite.connect(path, isolation_level=None)
        for pragma in ("busy_timeout=5000", "journal_mode=WAL", "synchronous=NORMAL"):
            await db.execute(f"PRAGMA {pragma}")
        await db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, text TEXT, ts REAL)")
        return cls(db)

    async def insert(self) -> int:
        t0 = time.perf_counter_ns()
        await self.db.execute("INSERT INTO t(text, ts) VALUES (?, ?)", ("x" * 40, time.time()))
        return time.perf_counter_ns() - t0

    async def txn(self) -> int:
        t0 = time.perf_counter_ns()
        await self.db.execute("BEGIN IMMEDIATE")
        await self.db.execute("INSERT INTO t(text, ts) VALUES (?, ?)", ("x" * 40, time.time()))
        await self.db.execute("COMMIT")
        return time.perf_counter_ns() - t0


@dataclass
class StageClock:
    """Wraps named methods of the live app's objects and splits each round trip into
    the time those calls took before the reply reached the outbox, and after it.

    Only used with ``--profile``: wrapping adds a little time of its own.
    """

    calls: list[tuple[str, int, int]] = field(default_factory=list)
    before: dict[str, list[float]] = field(default_factory=dict)
    after: dict[str, list[float]] = field(default_factory=dict)

    def wrap(self, obj: object, method: str, label: str) -> None:
        inner = getattr(obj, method)
        calls = self.calls
        if asyncio.iscoroutinefunction(inner):

            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                t0 = time.perf_counter_ns()
                try:
                    return await inner(*args, **kwargs)
                finally:
                    calls.append((label, t0, time.perf_counter_ns()))

            setattr(obj, method, timed_async)
        else:

            def timed_sync(*args: Any, **kwargs: Any) -> Any:
                t0 = time.perf_counter_ns()
                try:
                    return inner(*args, **kwargs)
                finally:
                    calls.append((label, t0, time.perf_counter_ns()))

            setattr(obj, method, timed_sync)

    def close_message(self, subject: str, replied_ns: int) -> None:
        """Attribute the calls of one settled message to before/after its reply."""
        for label, t0, t1 in self.calls:
            side = self.before if t1 <= replied_ns else self.after
            side.setdefault(f"{subject} {label}", []).append(_us(t1 - t0))
        self.calls.clear()


async def _one_message(
    terminal: TerminalChannel, settled: Settled, command: str
) -> tuple[int, int]:
    """One settled round trip; returns (latency ns, reply timestamp ns)."""
    settled.event.clear()
    t0 = time.perf_counter_ns()
    await terminal.submit(command)
    reply = await terminal.outbox.get()
    replied = time.perf_counter_ns()
    await settled.event.wait()
    if not reply.text.startswith(SUBJECTS[command]) or not terminal.outbox.empty():
        raise RuntimeError(f"bench: unexpected reply to {command}: {reply.text[:80]!r}")
    return replied - t0, replied


async def _measure(n: int, stages: StageClock | None) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in (*SUBJECTS, *BASELINES)}
    with fresh_dirs("roundtrip") as (home, workspace):
        settings = load_settings(
            None,
            {"FETCH_HOME": str(home), "FETCH_WORKSPACE": str(workspace), "FETCH_HARNESS": "demo"},
        )
        terminals = {
            "/help": TerminalChannel(settings.terminal.chat),
            "/status": StatusTerminal(settings.terminal.chat),
        }
        bare = await BareSqlite.open(home.parent / "baseline.db")
        hop = QueueHop()
        try:
            async with build_app(settings, channels=list(terminals.values())) as app:
                assert app.services is not None
                settled = Settled(app.services.store)
                if stages is not None:
                    s = app.services
                    for family, method in (
                        ("inbox", "accept"),
                        ("messages", "add"),
                        ("messages", "token_totals"),
                        ("sessions", "load"),
                        ("sessions", "save"),
                        ("inbox", "finish"),
                    ):
                        stages.wrap(getattr(s.store, family), method, f"store.{family}.{method}")
                    stages.wrap(s.journal, "append", "journal.append")
                    # Every aiosqlite call is one round trip to its thread; counting them
                    # shows how many a message pays. Private API, so only if present.
                    if hasattr(s.store.db.conn, "_execute"):
                        stages.wrap(
                            s.store.db.conn,
                            "_execute",
                            "(aiosqlite thread round trips, inside the above)",
                        )
                    for terminal in terminals.values():
                        stages.wrap(terminal, "send", "terminal.send")
                steps: list[tuple[str, Callable[[], Awaitable[int]]]] = [
                    ("queue hop", hop.once),
                    ("aiosqlite INSERT", bare.insert),
                    ("aiosqlite txn", bare.txn),
                ]
                for i in range(WARMUP + n):
                    for name, step in steps:
                        took = await step()
                        if i >= WARMUP:
                            samples[name].append(_us(took))
                    for command in SUBJECTS:
                        took, replied = await _one_message(terminals[command], settled, command)
                        if i >= WARMUP:
                            samples[command].append(_us(took))
                            if stages is not None:
                                stages.close_message(command, replied)
                        elif stages is not None:
                            stages.calls.clear()
        finally:
            await hop.close()
            await bare.db.close()
    return samples


def run(n: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    samples = asyncio.run(_measure(n, None))
    stats = {name: summary(values) for name, values in samples.items()}
    tenth = max(1, n // 10)
    for name in SUBJECTS:
        # Drift: the DB grows by ~4 rows per message; a scan would show up here.
        stats[name]["p50_first_10pct"] = summary(samples[name][:tenth])["p50"]
        stats[name]["p50_last_10pct"] = summary(samples[name][-tenth:])["p50"]
    ratios = {
        name: {
            f"{q}_vs_{base}": ratio(stats[name][q], stats[base][q])
            for base in BASELINES
            for q in ("p50", "p99")
        }
        for name in SUBJECTS
    }
    verdicts = {name: "PASS" if stats[name]["p99"] < TARGET_P99_US else "MISS" for name in SUBJECTS}
    return {
        "unit": "microseconds",
        "messages_per_command": n,
        "warmup": WARMUP,
        "target_p99_us": TARGET_P99_US,
        "stats": stats,
        "ratios": ratios,
        "verdict": verdicts,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def render(result: dict[str, Any]) -> str:
    stats, ratios = result["stats"], result["ratios"]
    label = {
        "/help": "/help (queued)",
        "/status": "/status (bypass)",
        "queue hop": "base: asyncio.Queue hop",
        "aiosqlite INSERT": "base: aiosqlite INSERT",
        "aiosqlite txn": "base: aiosqlite txn (3 awaits)",
    }
    rows = [
        [
            label[name],
            s["p50"],
            s["p90"],
            s["p99"],
            s["max"],
            s.get("p50_first_10pct", ""),
            s.get("p50_last_10pct", ""),
        ]
        for name, s in stats.items()
    ]
    out = [
        table(
            f"1. instinct round trip, submit -> reply in outbox "
            f"({result['messages_per_command']:,} msgs each, µs)",
            ["", "p50", "p90", "p99", "max", "p50 first10%", "p50 last10%"],
            rows,
        )
    ]
    out.append(
        table(
            "ratios: instinct / baseline, same run",
            ["", "p50/txn", "p99/txn", "p50/INSERT", "p50/hop", "p99/hop"],
            [
                [
                    name,
                    r["p50_vs_aiosqlite txn"],
                    r["p99_vs_aiosqlite txn"],
                    r["p50_vs_aiosqlite INSERT"],
                    r["p50_vs_queue hop"],
                    r["p99_vs_queue hop"],
                ]
                for name, r in ratios.items()
            ],
        )
    )
    target = result["target_p99_us"]
    out.append(
        "   target p99 < {:,.0f} µs: {}".format(
            target,
            ", ".join(
                f"{name} {stats[name]['p99']:,.0f} µs {result['verdict'][name]}" for name in ratios
            ),
        )
    )
    return "\n".join(out)


def _stage_rows(command: str, stages: StageClock, n: int, mean: float) -> list[list[Any]]:
    """Rows for one command: each wrapped call before the reply, what is left of the
    trip (event loop, queue hop, dispatch, the handler itself), then the tail."""

    def rows_for(side: dict[str, list[float]], side_name: str) -> list[list[Any]]:
        rows: list[list[Any]] = []
        for label, values in sorted(side.items()):
            if label.startswith(command + " "):
                per_msg = sum(values) / n
                share = 100 * per_msg / mean if side is stages.before else ""
                rows.append(
                    [
                        f"{side_name}: {label[len(command) + 1 :]}",
                        len(values) / n,
                        summary(values)["p50"],
                        per_msg,
                        share,
                    ]
                )
        return rows

    before = rows_for(stages.before, "before reply")
    # Round trips happen inside the store calls: listed, but not added up twice.
    accounted = sum(r[3] for r in before if not r[0].endswith(")"))
    rest = mean - accounted
    return [
        *before,
        [
            "before reply: the rest (loop, queue hop, dispatch, handler)",
            "",
            "",
            rest,
            100 * rest / mean,
        ],
        *rows_for(stages.after, "after reply"),
    ]


def profile(n: int) -> str:
    """Where the time goes, for when the target is missed: first a stage split (no
    profiler running, so the split adds up to real figures), then a separate, shorter
    cProfile of the event-loop thread (which roughly doubles every figure)."""
    stages = StageClock()
    samples = asyncio.run(_measure(n, stages))
    out: list[str] = []
    for command in SUBJECTS:
        total = summary(samples[command])
        out.append(
            table(
                f"{command}: where the time goes (mean round trip {total['mean']:,.0f} µs, "
                f"p99 {total['p99']:,.0f} µs, {n:,} msgs)",
                ["stage", "calls/msg", "p50 µs/call", "µs/msg", "% of trip"],
                _stage_rows(command, stages, n, total["mean"]),
            )
        )

    profiler = cProfile.Profile()

    async def profiled() -> None:
        profiler.enable()
        try:
            await _measure(max(500, n // 4), None)
        finally:
            profiler.disable()

    asyncio.run(profiled())
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).strip_dirs().sort_stats("tottime").print_stats(18)
    out.append(
        "== cProfile of the event-loop thread, by tottime (aiosqlite's own thread is "
        "not profiled:\n   the loop waiting for it shows as epoll)"
    )
    lines = text.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    out.append("\n".join(line for line in lines[start:] if line.strip()))
    return "\n\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.roundtrip",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-n", type=int, default=10_000, help="messages per command")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="split each round trip into stages and cProfile the loop",
    )
    args = parser.parse_args()
    if args.profile:
        print(profile(args.n))
        return
    result = run(args.n)
    print(render(result))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
