"""Benchmark: ``/remember`` and keyword search at 10k and 1M memories (issue 26, item 7),
each against the old query form timed on the same file in the same run.

The default setup has no embedding endpoint, so memory is keyword-only: a ``/remember``
is the repeat check (a word-for-word repeat of one of the subject's memories is merged
into it) and an insert; a search is FTS5 bm25. Both must stay flat as rows grow.

Data. Memories of 12 words drawn from a 30,000-word vocabulary with a Zipf law
(s = 1.15), as words in text are: a few words are in most memories (the most common in
~80 %), most in a handful. A query is three words of one memory. Rows are bulk loaded
(``executemany``, one transaction per 10,000, the FTS triggers included) and the load
time is printed.

Rows:
* ``/remember`` — ``Memory.write`` of a new text (half the writes) or of an existing
  memory's text in other case (the other half, merged), the whole path from the event
  loop; ``old repeat check`` — the scan it replaced (``lower(trim(content)) = ...`` over
  the subject's rows), timed on the same file;
* ``keyword search`` — ``Memory.search`` (keyword-only: query → memory thread → FTS5 →
  merge → items); ``old keyword query`` — bm25 over every item holding any query word
  (``ORDER BY bm25 LIMIT 50``), the form it replaced, on the same queries.

    python -m bench.memory_scale [--quick] [--sizes N ...]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from typing import Any

from bench._common import ratio, summary, table

SIZES = (10_000, 1_000_000)
QUICK_SIZES = (10_000, 100_000)
TARGET_SEARCH_P99_MS = 50.0
VOCABULARY = 30_000
WORDS_PER_MEMORY = 12
OLD_SAMPLES = 20  # the old forms take up to seconds each at 1M
OLD_REPEAT_SQL = (
    "SELECT id FROM memory_items WHERE kind != 'archive' AND subject = ?"
    " AND lower(trim(content)) = lower(trim(?))"
)
OLD_KEYWORD_SQL = (
    "SELECT rowid, bm25(memory_fts) AS b FROM memory_fts WHERE memory_fts"
    " MATCH ? ORDER BY b LIMIT 50"
)


def texts(n: int, seed: int) -> list[str]:
    import numpy as np

    rng = np.random.default_rng(seed)
    ranks = rng.zipf(1.15, size=(n, WORDS_PER_MEMORY)) % VOCABULARY
    return [" ".join(f"w{int(j)}" for j in row) for row in ranks]


def load(conn: Any, rows: list[str], subject: str = "owner") -> None:
    """Insert memories as ``items.remember`` would (text key included), in one transaction."""
    from orchestrator.memory.db import write
    from orchestrator.memory.schema import text_key

    now = time.time()

    def run() -> None:
        conn.executemany(
            "INSERT INTO memory_items(kind, content, content_key, tags, source, created,"
            " updated, subject) VALUES ('fact', ?, ?, '', 'owner', ?, ?, ?)",
            [(t, text_key(t), now, now, subject) for t in rows],
        )

    write(conn, run)


def _timed(values: list[float], started: float) -> None:
    values.append((time.perf_counter() - started) * 1000)


async def _one_size(n: int, writes: int, queries: int) -> dict[str, Any]:
    from orchestrator.config import load_settings
    from orchestrator.memory import Memory
    from orchestrator.memory.search import fts_query
    from orchestrator.supervisor import TaskSupervisor

    data = texts(n, seed=n)
    pick = random.Random(n)
    with tempfile.TemporaryDirectory(prefix="fetch-memscale-") as tmp:
        settings = load_settings(None, {"FETCH_HOME": tmp, "FETCH_WORKSPACE": tmp})
        memory = Memory(settings, TaskSupervisor())
        await memory.start()
        db = memory.db
        started = time.perf_counter()
        for start in range(0, n, 10_000):
            await db.run(load, data[start : start + 10_000])
        load_s = time.perf_counter() - started

        remember: list[float] = []
        merged = 0
        for i in range(writes):
            if i % 2:
                text = pick.choice(data).upper()  # a repeat in other case: merged
            else:
                text = f"bench write {i} " + " ".join(pick.sample(data[i % n].split(), 4))
            t0 = time.perf_counter()
            result = await memory.write(text)
            _timed(remember, t0)
            merged += result.merged
        old_repeat: list[float] = []
        for i in range(min(writes, OLD_SAMPLES)):
            t0 = time.perf_counter()
            await db.run(
                lambda c, t: c.execute(OLD_REPEAT_SQL, ("owner", t)).fetchall(),
                f"not there {i}",
            )
            _timed(old_repeat, t0)

        asked = [" ".join(pick.sample(pick.choice(data).split(), 3)) for _ in range(queries)]
        search: list[float] = []
        for q in asked:
            t0 = time.perf_counter()
            await memory.search(q, 10, 0.0)
            _timed(search, t0)
        old_search: list[float] = []
        for q in asked[:OLD_SAMPLES]:
            t0 = time.perf_counter()
            await db.run(lambda c, fq: c.execute(OLD_KEYWORD_SQL, (fq,)).fetchall(), fts_query(q))
            _timed(old_search, t0)
        await memory.stop()

    return {
        "n": n,
        "load_s": load_s,
        "remember_ms": summary(remember),
        "merged": merged,
        "old_repeat_ms": summary(old_repeat),
        "search_ms": summary(search),
        "old_search_ms": summary(old_search),
    }


def run(n: int, sizes: tuple[int, ...] | None = None) -> dict[str, Any]:
    """``n``: writes and queries per size; fewer rows in a quick run."""
    sizes = sizes or (SIZES if n >= 200 else QUICK_SIZES)
    results = [asyncio.run(_one_size(size, n, n)) for size in sizes]
    small, large = results[0], results[-1]
    return {
        "sizes": results,
        "remember_p99_growth": ratio(large["remember_ms"]["p99"], small["remember_ms"]["p99"]),
        "search_p99_target_ms": TARGET_SEARCH_P99_MS,
        "search_pass": large["search_ms"]["p99"] <= TARGET_SEARCH_P99_MS,
    }


def render(result: dict[str, Any]) -> str:
    rows = []
    for r in result["sizes"]:
        rem, old, s, olds = r["remember_ms"], r["old_repeat_ms"], r["search_ms"], r["old_search_ms"]
        rows.append(
            [
                f"{r['n']:,}",
                round(r["load_s"], 1),
                rem["p50"],
                rem["p99"],
                old["p50"],
                s["p50"],
                s["p99"],
                olds["p50"],
                olds["p99"],
            ]
        )
    verdict = "PASS" if result["search_pass"] else "MISS"
    return "\n".join(
        [
            table(
                "memory at scale, keyword-only (ms; load in s)",
                [
                    "memories",
                    "load s",
                    "/remember p50",
                    "/remember p99",
                    "old repeat check p50",
                    "search p50",
                    "search p99",
                    "old query p50",
                    "old query p99",
                ],
                rows,
            ),
            f"   /remember p99 grows {result['remember_p99_growth']:.2f}x from the smallest"
            f" to the largest size ({result['sizes'][-1]['merged']} of its writes were repeats,"
            f" merged); keyword search p99 at the largest: {verdict}"
            f" (target <= {result['search_p99_target_ms']:.0f} ms)",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("-n", type=int, default=None, help="writes and queries per size")
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help="memories")
    args = parser.parse_args()
    n = args.n or (50 if args.quick else 300)
    print(render(run(n, tuple(args.sizes) if args.sizes else None)))


if __name__ == "__main__":
    main()
