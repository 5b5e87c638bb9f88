"""Benchmark: memory's hybrid search at 1k, 10k and 100k memories of 1536 dimensions,
against an exact numpy brute force in the same run; and write throughput.

Data. Real embeddings are clustered (texts about one thing are near each other), and
uniform random vectors are not what a search ever sees, so memories are drawn around
``N / 20`` topic centres (cosine to their centre ~0.8) and each carries a few topic words
plus filler words for FTS5. A query is a memory's vector with fresh noise and three of
its words: the search must find that memory's neighbourhood.

Rows:
* ``memory.search`` — the whole path a tool call takes (event loop → memory thread →
  FTS5 bm25 + sqlite-vec KNN over binary codes + exact cosine rerank → merge), with the
  query embedding precomputed (an embedding endpoint's latency is not memory's);
* ``numpy exact`` — ``X @ q`` over every vector + argpartition top 10: the baseline,
  interleaved sample by sample with the subject;
* ``recall@10`` — how many of the exact top 10 (by vector) the hybrid's vector stage
  returned among its top-10 vector candidates.

Write throughput: bulk load (one transaction per 1,000 rows: item, FTS row, float32
vector, binary code) and ``Memory.write`` one by one on the filled store (with its
dedup nearest-neighbour check), both in rows per second.

    python -m bench.memory_bench [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from typing import Any

from bench._common import ratio, summary, table

DIMS = 1536
SIZES = (1_000, 10_000, 100_000)
QUICK_SIZES = (1_000, 10_000)
TARGET_P99_MS = 50.0
WORDS = [f"w{i}" for i in range(5000)]


class _Vectors:
    """Stands in for the embedding endpoint: hands out precomputed vectors."""

    def __init__(self) -> None:
        self.signature = f"bench/{DIMS}"
        self.dims = DIMS
        self.next: bytes = b""

    async def embed(self, texts: list[str]) -> list[bytes]:
        return [self.next for _ in texts]

    async def query(self, text: str) -> bytes:
        return self.next

    async def close(self) -> None:
        return None


def _dataset(n: int, seed: int) -> tuple[Any, list[str]]:
    import numpy as np

    rng = np.random.default_rng(seed)
    topics = max(1, n // 20)
    centres = rng.standard_normal((topics, DIMS)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    of = rng.integers(0, topics, n)
    noise = rng.standard_normal((n, DIMS)).astype(np.float32) * (0.75 / np.sqrt(DIMS))
    x = centres[of] + noise
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    pick = random.Random(seed)
    texts = [f"topic{t} " + " ".join(pick.choices(WORDS, k=8)) for t in of]
    return x.astype(np.float32), texts


async def _one_size(n: int, queries: int, writes: int) -> dict[str, Any]:
    import numpy as np

    from orchestrator.config import load_settings
    from orchestrator.memory import Memory
    from orchestrator.memory.db import write
    from orchestrator.memory.items import put_vector
    from orchestrator.memory.schema import ensure_vec_index
    from orchestrator.supervisor import TaskSupervisor

    x, texts = _dataset(n, seed=n)
    with tempfile.TemporaryDirectory(prefix="fetch-membench-") as tmp:
        settings = load_settings(None, {"FETCH_HOME": tmp, "FETCH_WORKSPACE": tmp})
        memory = Memory(settings, TaskSupervisor())
        await memory.start()
        vectors = _Vectors()
        memory.embedder = vectors  # type: ignore[assignment]
        db = memory.db
        await db.run(ensure_vec_index, DIMS)
        sig, vec_ok = vectors.signature, db.vec_ok

        def load(conn: Any, start: int, stop: int) -> None:
            def run() -> None:
                now = time.time()
                for i in range(start, stop):
                    cur = conn.execute(
                        "INSERT INTO memory_items(kind, content, tags, source, created, updated)"
                        " VALUES ('fact', ?, '', 'bench', ?, ?)",
                        (texts[i], now, now),
                    )
                    put_vector(conn, int(cur.lastrowid), "fact", x[i].tobytes(), sig, vec_ok)

            write(conn, run)

        started = time.perf_counter()
        for start in range(0, n, 1000):
            await db.run(load, start, min(n, start + 1000))
        load_s = time.perf_counter() - started

        rng = np.random.default_rng(n + 1)
        pick = random.Random(n + 1)
        subject: list[float] = []
        baseline: list[float] = []
        recalls: list[float] = []
        for _ in range(queries):
            target = int(rng.integers(0, n))
            q = x[target] + rng.standard_normal(DIMS).astype(np.float32) * (0.5 / np.sqrt(DIMS))
            q = (q / np.linalg.norm(q)).astype(np.float32)
            text = " ".join(pick.sample(texts[target].split(), 3))
            vectors.next = q.tobytes()
            t0 = time.perf_counter()
            await memory.search(text, 10)
            subject.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            scores = x @ q
            exact = np.argpartition(-scores, 10)[:10]
            baseline.append((time.perf_counter() - t0) * 1000)
            from orchestrator.memory.search import vector_scores

            got = await db.run(vector_scores, q.tobytes(), 10)
            recalls.append(len({int(i) + 1 for i in exact} & set(got)) / 10)

        started = time.perf_counter()
        for i in range(writes):
            v = rng.standard_normal(DIMS).astype(np.float32)
            vectors.next = (v / np.linalg.norm(v)).astype(np.float32).tobytes()
            await memory.write(f"bench write {i} " + " ".join(pick.choices(WORDS, k=8)))
        write_s = time.perf_counter() - started
        await memory.stop()

    s, b = summary(subject), summary(baseline)
    return {
        "n": n,
        "dims": DIMS,
        "queries": queries,
        "search_ms": s,
        "numpy_ms": b,
        "p99_ratio": ratio(s["p99"], b["p99"]),
        "recall_at_10": sum(recalls) / len(recalls),
        "recall_min": min(recalls),
        "bulk_rows_per_s": n / load_s,
        "write_rows_per_s": writes / write_s,
        "target_p99_ms": TARGET_P99_MS,
        "pass": s["p99"] < TARGET_P99_MS if n >= 100_000 else None,
    }


def run(n: int, sizes: tuple[int, ...] | None = None) -> dict[str, Any]:
    """``n`` is the number of queries per size; fewer sizes in a quick run."""
    sizes = sizes or (SIZES if n >= 200 else QUICK_SIZES)
    results = [asyncio.run(_one_size(size, n, 200 if n >= 200 else 50)) for size in sizes]
    return {"sizes": results}


def render(result: dict[str, Any]) -> str:
    rows = []
    for r in result["sizes"]:
        s, b = r["search_ms"], r["numpy_ms"]
        verdict = {True: "PASS", False: "MISS", None: ""}[r["pass"]]
        rows.append(
            [
                f"{r['n']:,}",
                s["p50"],
                s["p99"],
                b["p50"],
                b["p99"],
                r["p99_ratio"],
                r["recall_at_10"],
                r["bulk_rows_per_s"],
                r["write_rows_per_s"],
                verdict,
            ]
        )
    return table(
        f"memory search, {DIMS}-dim (ms; target p99 < {TARGET_P99_MS:.0f} ms at 100k)",
        [
            "memories",
            "p50",
            "p99",
            "numpy p50",
            "numpy p99",
            "p99/numpy",
            "recall@10",
            "bulk rows/s",
            "write/s",
            "target",
        ],
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("-n", type=int, default=None, help="queries per size")
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help="memories")
    args = parser.parse_args()
    n = args.n or (50 if args.quick else 300)
    print(render(run(n, tuple(args.sizes) if args.sizes else None)))


if __name__ == "__main__":
    main()
