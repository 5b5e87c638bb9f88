"""Benchmark 4: the scheduler, in process, on a real SQLite file, through the real
delivery path (ChatDelivery -> Messenger -> a channel that only timestamps arrivals).

* **burst**: N one-shot reminders all due at the same second; the figure is the time from
  that second until the last one has arrived, and each one's lateness. Baseline (same run,
  same database file): N bare write transactions (``Store.transaction`` with one UPDATE),
  the floor for any scheduler that records each fire durably; the scheduler needs about
  three per job (claim share, delivering, done), so ~3x is the honest target.
* **steady**: 100 jobs per minute for a while, each due at its own moment; the figure is
  the lateness p99 (arrival minus due time). Baseline, interleaved in the same event loop
  at the same due times: a bare ``asyncio.sleep`` until the due time, i.e. what the event
  loop and the machine's noise alone cost.

``python -m bench.scheduler_bench [-n 10000] [--steady-seconds 60]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import ratio, summary, table
from channels.base import Capabilities, InboundSink
from core.clock import SystemClock
from core.events import Inbound, Outbound, SendResult, SessionKey
from core.tasks import Spawner
from orchestrator.config import load_settings
from orchestrator.messenger import Messenger
from orchestrator.scheduler import Scheduler
from orchestrator.store import Journal, Store
from orchestrator.supervisor import TaskSupervisor

OWNER = SessionKey("bench", "owner")
STEADY_PER_MINUTE = 100


class ArrivalChannel:
    """A channel that only notes when each message arrived."""

    name = "bench"
    capabilities = Capabilities(message_limit=4000, markup="plain")

    def __init__(self) -> None:
        self.arrivals: dict[str, float] = {}
        self.all_in = asyncio.Event()
        self.expected = 0

    async def start(self, sink: InboundSink, spawner: Spawner) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def send(self, message: Outbound) -> SendResult:
        self.arrivals[message.text] = time.time()
        if len(self.arrivals) >= self.expected:
            self.all_in.set()
        return SendResult(message_id=str(len(self.arrivals)))

    async def set_typing(self, chat: str, typing: bool) -> None:
        return None

    def health(self) -> str:
        return "bench"


async def _inject(inbound: Inbound) -> None:
    raise RuntimeError("reminders only")


async def _with_scheduler(root: Path, body: Any) -> Any:
    settings = load_settings(None, {"FETCH_HOME": str(root), "FETCH_TIMEZONE": "UTC"})
    async with Store(settings.db_path) as store:
        journal = Journal(root / "sessions")
        messenger = Messenger(store, journal)
        channel = ArrivalChannel()
        messenger.add_channel(channel)
        supervisor = TaskSupervisor()
        scheduler = Scheduler(settings, store, _inject, messenger, supervisor, SystemClock())
        try:
            return await body(store, scheduler, channel)
        finally:
            await scheduler.stop()
            await supervisor.stop(0.0)
            journal.close()


async def _add(store: Store, n: int, due: list[float]) -> None:
    async with store.db.transaction() as db:
        now = time.time()
        await db.executemany(
            "INSERT INTO jobs(kind, text, channel, chat, cron, tz, spec, missed, status,"
            " next_at, created, updated) VALUES ('reminder', ?, ?, ?, NULL, 'UTC', 'bench',"
            " 'run_once', 'active', ?, ?, ?)",
            [(f"r{i}", OWNER.channel, OWNER.chat, due[i], now, now) for i in range(n)],
        )


async def _burst(root: Path, n: int) -> dict[str, Any]:
    async def body(store: Store, scheduler: Scheduler, channel: ArrivalChannel) -> Any:
        due = float(int(time.time()) + 2)
        await _add(store, n, [due] * n)
        channel.expected = n
        await scheduler.start()
        await asyncio.wait_for(channel.all_in.wait(), timeout=600)
        late = sorted((t - due) * 1000 for t in channel.arrivals.values())
        # Baseline on the same file: n durable single-UPDATE transactions.
        t0 = time.perf_counter()
        for i in range(n):
            async with store.db.transaction() as db:
                await db.execute("UPDATE jobs SET updated=? WHERE id=?", (time.time(), i + 1))
        base = time.perf_counter() - t0
        return {
            "jobs": n,
            "all_fired_seconds": late[-1] / 1000,
            "jobs_per_second": n / (late[-1] / 1000),
            "lateness_ms": summary(late),
            "baseline_txn_seconds": base,
            "ratio_vs_txn": ratio(late[-1] / 1000, base),
        }

    return dict(await _with_scheduler(root, body))


async def _steady(root: Path, seconds: float) -> dict[str, Any]:
    async def body(store: Store, scheduler: Scheduler, channel: ArrivalChannel) -> Any:
        count = int(seconds * STEADY_PER_MINUTE / 60)
        start = time.time() + 2
        due = [start + i * 60 / STEADY_PER_MINUTE for i in range(count)]
        await _add(store, count, due)
        channel.expected = count
        await scheduler.start()
        base: list[float] = []

        async def bare(at: float) -> None:
            await asyncio.sleep(max(0.0, at - time.time()))
            base.append((time.time() - at) * 1000)

        waits = [asyncio.ensure_future(bare(at)) for at in due]
        await asyncio.wait_for(channel.all_in.wait(), timeout=seconds + 120)
        await asyncio.gather(*waits)
        late = sorted((channel.arrivals[f"⏰ r{i}"] - due[i]) * 1000 for i in range(count))
        s, b = summary(late), summary(base)
        return {
            "jobs": count,
            "seconds": seconds,
            "per_minute": STEADY_PER_MINUTE,
            "lateness_ms": s,
            "baseline_sleep_ms": b,
            "p99_ratio": ratio(s["p99"], b["p99"]),
            "p50_ratio": ratio(s["p50"], b["p50"]),
        }

    return dict(await _with_scheduler(root, body))


def run(n: int, steady_seconds: float | None = None) -> dict[str, Any]:
    steady_seconds = (
        steady_seconds if steady_seconds is not None else (60.0 if n >= 10_000 else 15.0)
    )
    t0 = time.perf_counter()
    roots = [Path(tempfile.mkdtemp(prefix="fetch-bench-sched-")) for _ in range(2)]
    try:
        burst = asyncio.run(_burst(roots[0], n))
        steady = asyncio.run(_steady(roots[1], steady_seconds))
    finally:
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)
    return {
        "unit": "milliseconds unless named",
        "burst": burst,
        "steady": steady,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def render(result: dict[str, Any]) -> str:
    b, s = result["burst"], result["steady"]
    bl, sl, base = b["lateness_ms"], s["lateness_ms"], s["baseline_sleep_ms"]
    return "\n".join(
        [
            table(
                f"4. scheduler: {b['jobs']:,} reminders due at the same second",
                ["", "p50", "p99", "max"],
                [["lateness (ms)", bl["p50"], bl["p99"], bl["max"]]],
            ),
            f"   all fired {b['all_fired_seconds']:.2f} s after the due second "
            f"({b['jobs_per_second']:,.0f} jobs/s); {b['jobs']:,} bare write transactions take "
            f"{b['baseline_txn_seconds']:.2f} s -> {b['ratio_vs_txn']:.2f}x",
            table(
                f"   steady {s['per_minute']} jobs/minute for {s['seconds']:.0f} s "
                f"({s['jobs']} jobs), lateness (ms)",
                ["", "p50", "p99", "max"],
                [
                    ["scheduler", sl["p50"], sl["p99"], sl["max"]],
                    ["base: asyncio.sleep to the due time", base["p50"], base["p99"], base["max"]],
                ],
            ),
            f"   p99 {s['p99_ratio']:.2f}x the bare timer (p50 {s['p50_ratio']:.2f}x)",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scheduler_bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-n", type=int, default=10_000, help="reminders in the burst")
    parser.add_argument("--steady-seconds", type=float, default=None)
    args = parser.parse_args()
    result = run(args.n, args.steady_seconds)
    print(render(result))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
