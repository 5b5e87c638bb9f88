"""Taking over what a gone process left, and claiming held notices (issue 25, 2).

On a real PostgreSQL: two live stores that take over a gone process's queued messages at
the same moment get disjoint shares that add up to all of them (the UPDATE is guarded by
the old holder), and two that read the same channel's held notices at once claim
disjoint ones; a claim keeps the notice from others until its lease runs out. On SQLite
(one process owns the file) there is nothing to take over and the held notices behave as
before the claim: a refused one is read again by the next start. ``TakeOver`` is started
and stopped symmetrically and replays only what it took.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from core.events import SessionKey
from orchestrator.store import Store
from orchestrator.store.outbox import CLAIM_LEASE
from orchestrator.store.processes import TakeOver
from orchestrator.supervisor import TaskSupervisor

KEY = SessionKey("terminal", "owner")
ROWS = 40


async def test_two_survivors_take_a_gone_processs_messages_once(
    tmp_path: Path, pg_url: str
) -> None:
    for gone in range(3):  # several gone holders, each taken over by exactly one side
        async with Store(tmp_path / "x.db", pg_url) as x:
            for i in range(ROWS):
                assert await x.inbox.accept("terminal", f"{gone}-{i}", KEY, {"n": f"{gone}-{i}"})
    async with Store(tmp_path / "b.db", pg_url) as b, Store(tmp_path / "c.db", pg_url) as c:
        for _ in range(3):
            got_b, got_c = await asyncio.gather(b.inbox.adopt(), c.inbox.adopt())
            if got_b or got_c:
                break
        names_b = [p["n"] for p in got_b]
        names_c = [p["n"] for p in got_c]
        assert not set(names_b) & set(names_c)
        every = sorted(f"{g}-{i}" for g in range(3) for i in range(ROWS))
        assert sorted(names_b + names_c) == every
        # Taken is taken: another pass finds nothing, and the live taker's rows stay its own.
        assert await b.inbox.adopt() == [] and await c.inbox.adopt() == []
        assert len(await b.inbox.queued()) == len(names_b)


async def test_two_processes_claim_a_channels_held_notices_once(
    tmp_path: Path, pg_url: str
) -> None:
    async with Store(tmp_path / "b.db", pg_url) as b, Store(tmp_path / "c.db", pg_url) as c:
        for i in range(ROWS):
            await b.outbox.hold(KEY, f"notice-{i}")
        got_b, got_c = await asyncio.gather(b.outbox.held("terminal"), c.outbox.held("terminal"))
        texts = [h.text for h in got_b] + [h.text for h in got_c]
        assert sorted(texts) == sorted(f"notice-{i}" for i in range(ROWS))
        assert [h.id for h in got_b] == sorted(h.id for h in got_b)  # oldest first
        assert await b.outbox.held("terminal") == [] and await c.outbox.held("terminal") == []
        # A refused one keeps its claim: tried again once the lease has run out.
        first = (got_b or got_c)[0]
        await b.outbox.failed(first.id)
        assert await c.outbox.held("terminal") == []
        await b.db.write(
            "UPDATE outbox SET claimed=? WHERE id=?", (time.time() - CLAIM_LEASE - 1, first.id)
        )
        again = await c.outbox.held("terminal")
        assert [(h.id, h.attempts) for h in again] == [(first.id, 1)]


async def test_sqlite_held_notices_and_take_over_as_before(tmp_path: Path) -> None:
    async with Store(tmp_path / "fetch.db") as store:
        assert await store.inbox.accept("terminal", "m1", KEY, {"n": 1})
        assert await store.inbox.adopt() == []
        assert await store.inbox.queued() == [{"n": 1}]
        first = await store.outbox.hold(KEY, "one")
        second = await store.outbox.hold(KEY, "two")
        held = await store.outbox.held("terminal")
        assert [(h.id, h.text) for h in held] == [(first, "one"), (second, "two")]
        await store.outbox.sent(first)
        await store.outbox.failed(second)
    async with Store(tmp_path / "fetch.db") as store:  # the next start retries the refused
        again = await store.outbox.held("terminal")
        assert [(h.id, h.attempts) for h in again] == [(second, 1)]


async def test_take_over_replays_only_what_it_took_and_stops_with_its_owner() -> None:
    taken: list[list[dict[str, Any]]] = [[{"n": 1}], []]
    replayed: list[list[dict[str, Any]]] = []
    delivered = 0

    async def adopt() -> list[dict[str, Any]]:
        return taken.pop(0) if taken else []

    async def replay(payloads: list[dict[str, Any]]) -> int:
        replayed.append(payloads)
        return len(payloads)

    async def deliver() -> int:
        nonlocal delivered
        delivered += 1
        return 0

    supervisor = TaskSupervisor()
    takeover = TakeOver(adopt, replay, deliver, supervisor, period=0.01)
    await takeover.start()
    for _ in range(200):
        if delivered >= 3:
            break
        await asyncio.sleep(0.01)
    await takeover.stop()
    assert replayed == [[{"n": 1}]]
    assert delivered >= 3
    assert supervisor.running("store:take-over") == []
    await supervisor.stop(0)


async def test_two_survivors_take_a_gone_processs_running_tasks_once(
    tmp_path: Path, pg_url: str
) -> None:
    async with Store(tmp_path / "x.db", pg_url) as x:
        ids = [await x.work.create_task(KEY, "demo", f"p{i}", "demo") for i in range(ROWS)]
        await x.work.finish_task(ids[0], "proposed")  # ended: not cut short
    async with Store(tmp_path / "b.db", pg_url) as b, Store(tmp_path / "c.db", pg_url) as c:
        mine = await b.work.create_task(KEY, "demo", "b's own", "demo")  # b lives
        got_b, got_c = await asyncio.gather(b.work.adopt_tasks(), c.work.adopt_tasks())
        taken = [t for t, _ in got_b] + [t for t, _ in got_c]
        assert sorted(taken) == ids[1:]  # each once, never b's live one or the ended one
        assert {k for _, k in got_b + got_c} == {KEY}
        assert await b.work.adopt_tasks() == [] and await c.work.adopt_tasks() == []
        assert mine not in taken
    async with Store(tmp_path / "fetch.db") as lite:
        await lite.work.create_task(KEY, "demo", "p", "demo")
        assert await lite.work.adopt_tasks() == []  # the start alone recovers on SQLite


async def test_a_vanished_hosts_liveness_runs_out_within_a_lease(
    tmp_path: Path, pg_url: str
) -> None:
    """The liveness connection asks the server to probe it (TCP keepalive): a host that
    vanished without closing its socket frees its lock in about 30 s, not two hours.
    (Over a unix socket the settings read 0: keepalive is TCP's; the fixture is TCP.)"""
    async with Store(tmp_path / "b.db", pg_url) as b:
        live = b.db._live  # type: ignore[attr-defined]
        said = [
            await live.fetchval(f"SHOW {name}")
            for name in ("tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count")
        ]
        assert said == ["10", "5", "4"]
