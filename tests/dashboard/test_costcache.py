"""The costs page's kept sums equal the ledger's own sums (store/usage.py) after any
number of catch-ups, on a real SQLite file."""

from __future__ import annotations

import random
import time
from pathlib import Path
from zoneinfo import ZoneInfo

from orchestrator.dashboard.costcache import CostSums, window_start
from orchestrator.store import Store
from orchestrator.store.usage import UsageRow, UsageTotal

DAY = 86400.0


def _rounded(totals: list[UsageTotal]) -> list[tuple[str, int, int, int, float, int]]:
    return sorted(
        (t.key, t.calls, t.tokens_in, t.tokens_out, round(t.cost, 9), t.errors) for t in totals
    )


async def test_kept_sums_match_the_ledger_after_each_catch_up(tmp_path: Path) -> None:
    rnd = random.Random(7)
    tz = ZoneInfo("Europe/Berlin")
    now = time.time()
    async with Store(tmp_path / "fetch.db") as store:
        sums = CostSums(store.db, tz)
        since = window_start(now, tz)
        for _batch in range(3):
            for _ in range(400):
                store.usage.record(
                    UsageRow(
                        rnd.choice(("relay", "orchestrator")),
                        model=rnd.choice(("a", "b", "c")),
                        task=rnd.choice((None, 1, 2, 3)),
                        session=rnd.choice(("", "terminal:owner", "webhook:x")),
                        tokens_in=rnd.randint(0, 900),
                        tokens_out=rnd.randint(0, 90),
                        cost=rnd.random() / 10,
                        status=rnd.choice((200, 200, 200, 500)),
                        at=now - rnd.random() * 70 * DAY,  # some before the window
                    )
                )
            kept = await sums.current(now)
            assert _rounded(kept.dearest("models", 99)) == _rounded(
                await store.usage.by_model(since)
            )
            assert _rounded(kept.dearest("sessions", 99)) == _rounded(
                await store.usage.by_session(since)
            )
            assert _rounded(kept.dearest("tasks", 99, skip_none=True)) == _rounded(
                await store.usage.by_task(since, None, 99)
            )
            assert _rounded(kept.days("Europe/Berlin")) == _rounded(
                await store.usage.by_day(since, None, "Europe/Berlin")
            )
            month = await store.usage.total(since)
            assert round(kept.total_since(since).cost, 9) == round(month.cost, 9)
