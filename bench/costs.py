"""The cost ledger's queries (orchestrator/store/usage.py) behind /cost and the dashboard,
on a real SQLite file holding 100,000 usage rows over 30 days (orchestrator, relay,
summarize and embed calls, 12 models, 40 chats, 2,000 tasks). Each query is timed N
times, interleaved with the baseline: ``SELECT 1`` through the same connection (the
trip to aiosqlite's thread, the floor of any query). The whole /cost report is timed too.

``python -m bench.costs [N]`` (N rounds, default 200).
"""

from __future__ import annotations

import asyncio
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench._common import ratio, summary, table
from orchestrator.app import SHIPPED_DATA
from orchestrator.costs.ledger import CostLedger, day_start
from orchestrator.costs.prices import PriceTable, load_defaults
from orchestrator.costs.report import cost_report
from orchestrator.costs.settings import BudgetSettings
from orchestrator.store import Store
from orchestrator.store.usage import COLUMNS

ROWS, DAYS = 100_000, 30
TZ = "Europe/Berlin"
MODELS = [
    "gpt-4o",
    "gpt-4o-mini",
    "gpt-4.1",
    "o3-mini",
    "claude-sonnet-4-5-20250929",
    "claude-opus-4-1",
    "claude-haiku-4-5",
    "gemini-2.5-pro",
    "gemini-2.5-flash",
    "text-embedding-3-small",
    "llama3:8b",
    "qwen2.5-coder",
]
SOURCES = ["relay"] * 6 + ["orchestrator"] * 3 + ["summarize", "embed"]


def _fill(path: Path, now: float) -> None:
    """100,000 rows written directly (the fill is not what is measured)."""
    rng = random.Random(15)
    rows = []
    for i in range(ROWS):
        source = rng.choice(SOURCES)
        task = rng.randrange(1, 2001) if source == "relay" else None
        session = f"telegram:{rng.randrange(40)}"
        rows.append(
            (
                now - rng.random() * DAYS * 86400,
                source,
                session,
                i if source == "orchestrator" else None,
                task,
                "openai",
                rng.choice(MODELS),
                rng.randrange(100, 20_000),
                rng.randrange(10, 2_000),
                rng.random() / 10,
                rng.random() * 3000,
                200 if rng.random() > 0.02 else 500,
                "",
            )
        )
    conn = sqlite3.connect(path)
    conn.executemany(f"INSERT INTO usage({COLUMNS}) VALUES ({','.join('?' * 13)})", rows)
    conn.commit()
    conn.close()


async def _measure(n: int) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="fetch-bench-costs-"))
    try:
        async with Store(home / "fetch.db") as store:  # migrations
            pass
        now = time.time()
        _fill(home / "fetch.db", now)
        async with Store(home / "fetch.db") as store:
            usage = store.usage
            prices = PriceTable(load_defaults(SHIPPED_DATA / "prices.yaml"), {})
            ledger = CostLedger(
                usage, prices, BudgetSettings(daily_usd=50, task_usd=5), TZ, now=lambda: now
            )
            await ledger.load()
            today = day_start(now, TZ)
            month = now - DAYS * 86400
            queries: dict[str, Callable[[], Awaitable[Any]]] = {
                "total today (budget)": lambda: usage.total(today),
                "total of a task": lambda: usage.total(0, task=1234),
                "by day, 30 days": lambda: usage.by_day(month, None, TZ),
                "by model, 30 days": lambda: usage.by_model(month),
                "by source, today": lambda: usage.by_source(today),
                "by session, 30 days": lambda: usage.by_session(month),
                "by task, 30 days (top 50)": lambda: usage.by_task(month),
                "by message, one chat": lambda: usage.by_message("telegram:7"),
                "recent, a page of 50": lambda: usage.recent(50),
                "/cost report": lambda: cost_report(ledger, usage, now=lambda: now, task=1234),
            }

            async def floor() -> Any:
                return await store.db.conn.execute_fetchall("SELECT 1")

            times: dict[str, list[float]] = {name: [] for name in queries}
            base: list[float] = []
            for _ in range(n):
                for name, query in queries.items():
                    started = time.perf_counter()
                    await floor()
                    base.append((time.perf_counter() - started) * 1000)
                    started = time.perf_counter()
                    await query()
                    times[name].append((time.perf_counter() - started) * 1000)
        base_p50 = summary(base)["p50"]
        return {
            "rows": ROWS,
            "rounds": n,
            "baseline_ms": summary(base),
            "queries": {
                name: {**summary(t), "p50_vs_baseline": ratio(summary(t)["p50"], base_p50)}
                for name, t in times.items()
            },
        }
    finally:
        shutil.rmtree(home, ignore_errors=True)


def run(n: int = 200) -> dict[str, Any]:
    return asyncio.run(_measure(n))


def render(result: dict[str, Any]) -> str:
    rows = [
        (name, q["p50"], q["p99"], q["p50_vs_baseline"]) for name, q in result["queries"].items()
    ]
    base = result["baseline_ms"]
    rows.append(("baseline: SELECT 1 (aiosqlite trip)", base["p50"], base["p99"], 1.0))
    return table(
        f"cost ledger queries, {result['rows']:,} usage rows, {result['rounds']} rounds (ms)",
        ("query", "p50", "p99", "p50 x baseline"),
        rows,
    )


if __name__ == "__main__":
    print(render(run(int(sys.argv[1]) if len(sys.argv) > 1 else 200)))
