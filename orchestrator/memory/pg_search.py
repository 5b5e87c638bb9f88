"""search.py's two sides on PostgreSQL: pgvector (HNSW, cosine) and tsvector + GIN.

Vector side: ``ORDER BY vec <=> q LIMIT k`` walks the HNSW index (``hnsw.ef_search``
100, iterative scans for a one-layer search: pg.py), so no binary first stage is needed.

Keyword side: as on SQLite, at most ``RANK_BUDGET`` items are ranked in one search:
the words' items are estimated first (from the column's statistics, else counted), the
rarest words are chosen while their items fit, and when every word is common the newest
items holding any are taken. ``ts_rank`` has no corpus statistics, so the chosen items
are ranked by *every* word of the query at no extra cost. Words go
in as quoted ``websearch_to_tsquery`` terms: no tsquery syntax from a user reaches it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

TSQ = "websearch_to_tsquery('english', ?)"
RANK_BUDGET = 2_000  # candidates ranked in one search (search.py's is 4,000)


def tsquery(terms: Iterable[str]) -> str:
    return " or ".join('"' + t.replace('"', " ") + '"' for t in terms)


# How many items hold each word, from the statistics ANALYZE keeps of the tsvector
# column (its most common lexemes and their frequencies): free, where counting a common
# word's items (even up to a cap: the GIN bitmap is built whole) took 60 ms at 1M. A
# lexeme not in the list is rarer than its rarest entry, and is estimated at that.
ESTIMATE = """
WITH s AS (SELECT most_common_elems::text::text[] AS e, most_common_elem_freqs AS f
           FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'memory_items'
           AND attname = 'fts' AND most_common_elems IS NOT NULL),
     n AS (SELECT greatest(reltuples, 0) AS rows FROM pg_class
           WHERE oid = 'memory_items'::regclass)
SELECT (SELECT coalesce(min(coalesce(s.f[array_position(s.e, lx)],
                                     s.f[array_length(s.e, 1)])), 0)
        FROM unnest(tsvector_to_array(to_tsvector('english', u.t))) lx) * n.rows
FROM unnest(?::text[]) WITH ORDINALITY AS u(t, i), s, n ORDER BY u.i
"""


def matches(conn: Any, terms: list[str], cap: int) -> list[int]:
    """How many items hold each term: estimated from the statistics when the table has
    them (``ESTIMATE``), else counted up to ``cap`` (a table not analyzed yet is small,
    or was just loaded). One round trip for all the terms."""
    rows = conn.execute(ESTIMATE, (terms,)).fetchall()
    if len(rows) == len(terms):
        return [min(cap, round(float(r[0]))) for r in rows]
    rows = conn.execute(
        "SELECT (SELECT count(*) FROM (SELECT 1 FROM memory_items WHERE fts @@"
        " websearch_to_tsquery('english', u.t) LIMIT ?) s) FROM unnest(?::text[])"
        " WITH ORDINALITY AS u(t, n) ORDER BY u.n",
        (cap, [tsquery([t]) for t in terms]),
    ).fetchall()
    return [int(r[0]) for r in rows]


def keyword_rows(
    conn: Any, terms: list[str], chosen: list[str], common: bool, budget: int, k: int
) -> list[Any]:
    """(id, rank) of the best ``k`` of the bounded candidates."""
    if common:
        return list(
            conn.execute(
                f"SELECT w.id, ts_rank(w.fts, q) AS r FROM (SELECT id, fts FROM memory_items"
                f" WHERE fts @@ {TSQ} ORDER BY id DESC LIMIT ?) w, {TSQ} q"
                " ORDER BY r DESC, w.id DESC LIMIT ?",
                (tsquery(terms), budget, tsquery(terms), k),
            ).fetchall()
        )
    return list(
        conn.execute(
            f"SELECT id, ts_rank(fts, q) AS r FROM memory_items, {TSQ} sel, {TSQ} q"
            " WHERE fts @@ sel ORDER BY r DESC, id DESC LIMIT ?",
            (tsquery(chosen), tsquery(terms), k),
        ).fetchall()
    )


def vector_scores(conn: Any, qvec: bytes, k: int, layer: str | None = None) -> dict[int, float]:
    filt, args = ("", ()) if layer is None else (" WHERE layer = ?", (layer,))
    rows = conn.execute(
        f"SELECT id, vec <=> ? AS d FROM memory_vectors{filt} ORDER BY vec <=> ? LIMIT ?",
        (qvec, *args, qvec, k),
    ).fetchall()
    return {int(r[0]): max(0.0, 1.0 - float(r[1])) for r in rows}


def exact_scores(conn: Any, qvec: bytes, ids: list[int]) -> dict[int, float]:
    rows = conn.execute(
        "SELECT id, vec <=> ? FROM memory_vectors WHERE id = ANY(?)", (qvec, [int(i) for i in ids])
    ).fetchall()
    return {int(r[0]): max(0.0, 1.0 - float(r[1])) for r in rows}
