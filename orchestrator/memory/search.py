"""Hybrid search: sqlite-vec cosine + FTS5 bm25, normalised, weighted, merged by id.

Vector side. Exact cosine over every vector costs ~3-6 µs a row in SQLite (6 KB blobs
at 1536 dims), i.e. hundreds of ms at 100k. So above ``EXACT_MAX`` ids the search is
two-stage: a KNN over binary-quantized codes (``vec0`` ``bit[D]``, hamming distance, 32x
smaller than float32) picks ``COARSE_K`` candidates, then exact ``vec_distance_cosine``
on their float32 vectors ranks them. bench/memory_bench.py measures latency and recall
of this against an exact numpy brute force.

Keyword side. The query becomes an OR of quoted terms (no FTS syntax from the user ever
reaches MATCH); bm25 is negated and divided by the best hit of this search, so the best
keyword match scores 1.

Merge. Every keyword hit also gets its exact cosine, and every vector hit its keyword
score (0 when it did not match), so the sum is the same whichever side found the item.
Without vectors (no endpoint, no sqlite-vec) the keyword score alone ranks.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable
from typing import Any

from orchestrator.memory import pg_search
from orchestrator.memory.embed import cosine
from orchestrator.memory.models import ITEM_COLUMNS, Hit, Item
from orchestrator.memory.schema import is_pg

EXACT_MAX = 256
COARSE_K = 64
KEYWORD_K = 50
# At most this many items are ranked by bm25 in one search (keyword_scores): ~4 µs each.
RANK_BUDGET = 4_000
COMMON_TERMS = 8  # when every word is common, the first ones only
_WORD = re.compile(r"[\w][\w'-]*", re.UNICODE)
# Words that match nearly everything and rank nothing (bm25 would mostly ignore them,
# but they would still let unrelated rows into the result).
_STOP = (
    "a an and are as at be but by can could did do does for from had has have how i if in"
    " into is it its me my no not of on or our so that the their them then there these"
    " they this to us was we were what when where which who why will with would you your"
)
STOPWORDS = frozenset(_STOP.split())


def query_terms(text: str) -> list[str]:
    """The words of a search, lower case, without stop words and repeats (at most 32)."""
    terms: list[str] = []
    for word in _WORD.findall(text.lower()):
        word = word.strip("'-")
        if len(word) > 1 and word not in STOPWORDS and word not in terms:
            terms.append(word)
    return terms[:32]


def _quoted(terms: Iterable[str]) -> str:
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def fts_query(text: str) -> str | None:
    terms = query_terms(text)
    return _quoted(terms) if terms else None


def _marks(ids: Iterable[int]) -> str:
    return ",".join(str(int(i)) for i in ids)


def _id_in(conn: Any, ids: Iterable[int]) -> tuple[str, tuple[Any, ...]]:
    """``id`` among ``ids``: literal on SQLite; an array parameter on PostgreSQL, so the
    statement's text stays the same and asyncpg prepares it once, not every search."""
    if is_pg(conn):
        return "id = ANY(?)", ([int(i) for i in ids],)
    return f"id IN ({_marks(ids)})", ()


def vector_scores(conn: Any, qvec: bytes, k: int, layer: str | None = None) -> dict[int, float]:
    """Cosine similarity of the ~k nearest vectors (exact at small sizes, see above)."""
    if is_pg(conn):
        return pg_search.vector_scores(conn, qvec, k, layer)
    # max(rowid) bounds the count in O(log n); COUNT(*) would walk every 6 KB row.
    bound = conn.execute("SELECT max(rowid) FROM memory_vectors").fetchone()[0]
    if bound is None:
        return {}
    if int(bound) <= EXACT_MAX:
        where = ""
        if layer is not None:
            op = "=" if layer == "archive" else "!="
            where = f" WHERE id IN (SELECT id FROM memory_items WHERE kind {op} 'archive')"
        rows = conn.execute(
            f"SELECT id, vec_distance_cosine(vec_f32(vec), vec_f32(?)) AS d FROM memory_vectors"
            f"{where} ORDER BY d LIMIT ?",
            (qvec, k),
        ).fetchall()
    else:
        filt = " AND layer = ?" if layer is not None else ""
        args: tuple[Any, ...] = (qvec, max(COARSE_K, k), *((layer,) if layer else ()))
        cand = [
            r[0]
            for r in conn.execute(
                "SELECT rowid FROM memory_vec_bits WHERE embedding MATCH vec_quantize_binary("
                f"vec_f32(?)) AND k = ?{filt}",
                args,
            )
        ]
        if not cand:
            return {}
        rows = conn.execute(
            "SELECT id, vec_distance_cosine(vec_f32(vec), vec_f32(?)) AS d FROM memory_vectors"
            f" WHERE id IN ({_marks(cand)}) ORDER BY d LIMIT ?",
            (qvec, k),
        ).fetchall()
    return {int(r[0]): max(0.0, 1.0 - float(r[1])) for r in rows}


def exact_scores(conn: Any, qvec: bytes, ids: Iterable[int], vec_ok: bool) -> dict[int, float]:
    ids = list(ids)
    if not ids:
        return {}
    if is_pg(conn):
        return pg_search.exact_scores(conn, qvec, ids)
    if vec_ok:
        rows = conn.execute(
            "SELECT id, vec_distance_cosine(vec_f32(vec), vec_f32(?)) FROM memory_vectors WHERE"
            f" id IN ({_marks(ids)}) AND length(vec) = ?",
            (qvec, len(qvec)),
        ).fetchall()
        return {int(r[0]): max(0.0, 1.0 - float(r[1])) for r in rows}
    rows = conn.execute(f"SELECT id, vec FROM memory_vectors WHERE id IN ({_marks(ids)})")
    return {int(r[0]): max(0.0, cosine(qvec, bytes(r[1]))) for r in rows}


def _matches(conn: Any, term: str, cap: int) -> int:
    """How many items hold ``term``, counted up to ``cap`` (O(min(count, cap)): no
    ranking, the doclist only)."""
    row = conn.execute(
        "SELECT count(*) FROM (SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? LIMIT ?)",
        (_quoted([term]), cap),
    ).fetchone()
    return int(row[0])


def ranked_terms(conn: Any, terms: list[str]) -> tuple[list[str], bool]:
    """The terms ranked by, rarest first, while the items holding them stay within the
    budget; and whether even the rarest is over it (every term common)."""
    budget = _budget(conn)
    if is_pg(conn):
        counts = dict(zip(terms, pg_search.matches(conn, terms, budget + 1), strict=True))
    else:
        counts = {t: _matches(conn, t, budget + 1) for t in terms}
    chosen: list[str] = []
    total = 0
    for term in sorted(terms, key=lambda t: counts[t]):
        if chosen and total + counts[term] > budget:
            break
        chosen.append(term)
        total += counts[term]
    return chosen, counts[chosen[0]] > budget


def _budget(conn: Any) -> int:
    # PostgreSQL reads each candidate's tsvector from the table (a random page each);
    # FTS5 has what bm25 needs in its index. So fewer there.
    return pg_search.RANK_BUDGET if is_pg(conn) else RANK_BUDGET


def _newest_by_coverage(conn: Any, terms: list[str], k: int) -> dict[int, float]:
    """Every word is common: not bm25, whose idf alone reads each word's whole doclist
    (35 ms for a word in 800k items), but how many of the words each of the newest
    ``RANK_BUDGET`` items holding any of them has (newer first on a tie)."""
    window = conn.execute(
        "SELECT min(rowid) FROM (SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?"
        " ORDER BY rowid DESC LIMIT ?)",
        (_quoted(terms), RANK_BUDGET),
    ).fetchone()[0]
    if window is None:
        return {}
    held: Counter[int] = Counter()
    for term in terms:
        held.update(
            int(r[0])
            for r in conn.execute(
                "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? AND rowid >= ?",
                (_quoted([term]), window),
            )
        )
    top = sorted(held.items(), key=lambda kv: (-kv[1], -kv[0]))[:k]
    best = max((n for _, n in top), default=1)
    return {i: n / best for i, n in top}


def keyword_scores(conn: Any, text: str, k: int = KEYWORD_K) -> dict[int, float]:
    """bm25 over the query's words, at a cost bounded whatever the table's size.

    bm25 costs ~4 µs per matching item, and an OR of words matches every item that
    holds any of them: at 1M memories a common word alone is 800k items, seconds. So the
    words are counted first (cheaply, up to ``RANK_BUDGET``) and ranked rarest first
    while their items fit the budget; a commoner word left out would add little (its
    idf is low) to items the rarer ones already found. When every word is that common,
    the newest ``RANK_BUDGET`` items holding any are ranked by how many words they
    hold (``_newest_by_coverage``). When all the
    words' items fit (any small store), this is plain bm25 over all of them.
    """
    terms = query_terms(text)
    if not terms:
        return {}
    chosen, common = ranked_terms(conn, terms)
    if is_pg(conn):
        found = pg_search.keyword_rows(conn, terms, chosen, common, _budget(conn), k)
        return _relative({int(r[0]): float(r[1]) for r in found})
    if common:
        return _newest_by_coverage(conn, terms[:COMMON_TERMS], k)
    rows = conn.execute(
        "SELECT rowid, bm25(memory_fts) AS b FROM memory_fts WHERE memory_fts"
        " MATCH ? ORDER BY b LIMIT ?",
        (_quoted(chosen), k),
    ).fetchall()
    return _relative({int(r[0]): -float(r[1]) for r in rows})


def _relative(raw: dict[int, float]) -> dict[int, float]:
    """Scores over the best of this search: the best keyword match scores 1."""
    best = max(raw.values(), default=0.0)
    if best <= 0:
        return dict.fromkeys(raw, 1.0)
    return {i: max(0.0, s) / best for i, s in raw.items()}


def items(conn: Any, ids: Iterable[int]) -> dict[int, Item]:
    ids = list(ids)
    if not ids:
        return {}
    where, args = _id_in(conn, ids)
    rows = conn.execute(f"SELECT {ITEM_COLUMNS} FROM memory_items WHERE {where}", args)
    return {int(r[0]): Item.from_row(r) for r in rows}


def _of_subject(
    conn: Any, ids: Iterable[int], subject: str, threads: Collection[str] | None = None
) -> set[int]:
    """Those of ``ids`` that are ``subject``'s; ``threads`` given, archives only of those
    threads (a kennel sees only its own chat's conversations, scope.py).

    Looked up by id and filtered here: with ``subject = ?`` in the SQL, SQLite's planner
    walked the subject index (every row of the owner: 17 ms of a 18 ms search at 300k)
    instead of the ids' primary keys."""
    ids = list(ids)
    if not ids:
        return set()
    where, args = _id_in(conn, ids)
    rows = conn.execute(f"SELECT id, subject, kind, thread FROM memory_items WHERE {where}", args)
    return {
        int(r[0])
        for r in rows
        if r[1] == subject and (threads is None or r[2] != "archive" or r[3] in threads)
    }


def hybrid(
    conn: Any,
    text: str,
    qvec: bytes | None,
    *,
    limit: int,
    vector_weight: float,
    min_score: float,
    vec_ok: bool,
    subject: str = "owner",
    threads: Collection[str] | None = None,
) -> list[Hit]:
    """Only ``subject``'s items take part (a member never sees the owner's); with
    ``threads``, archives only of those threads (None: of every thread)."""
    keyword = keyword_scores(conn, text)
    vector: dict[int, float] = {}
    if qvec is not None:
        if vec_ok:
            vector = vector_scores(conn, qvec, max(limit * 4, 20))
        vector |= exact_scores(conn, qvec, set(keyword) - set(vector), vec_ok)
    mine = _of_subject(conn, set(keyword) | set(vector), subject, threads)
    keyword = {i: s for i, s in keyword.items() if i in mine}
    vector = {i: s for i, s in vector.items() if i in mine}
    if qvec is not None:
        w_vec, w_kw = vector_weight, 1.0 - vector_weight
    else:
        w_vec, w_kw = 0.0, 1.0
    scored = []
    for item_id in set(keyword) | set(vector):
        v, k = vector.get(item_id, 0.0), keyword.get(item_id, 0.0)
        score = w_vec * v + w_kw * k
        if score >= min_score:
            scored.append((score, item_id, v, k))
    scored.sort(key=lambda s: (-s[0], -s[1]))  # ties: the newer item first
    top = scored[:limit]
    found = items(conn, (s[1] for s in top))
    return [Hit(found[i], score, v, k) for score, i, v, k in top if i in found]


def nearest_memory(
    conn: Any,
    qvec: bytes,
    vec_ok: bool,
    subject: str = "owner",
    author: tuple[str, str | None] | None = None,
) -> tuple[int, float] | None:
    """The most similar memory (not archive) of ``subject`` and its cosine, for dedup.
    ``author`` (source, chat): only rows it wrote count (a kennel's write, scope.py)."""
    if author is not None:
        # A kennel's own rows are few (writes are capped per run): compare them all,
        # so a crowd of other rows nearer the query cannot hide one.
        own = [
            int(r[0])
            for r in conn.execute(
                "SELECT id FROM memory_items WHERE kind != 'archive' AND subject = ?"
                " AND source = ? AND chat IS NOT DISTINCT FROM ?",
                (subject, *author),
            )
        ]
        scores = exact_scores(conn, qvec, own, vec_ok)
    elif vec_ok:
        scores = vector_scores(conn, qvec, 20, layer="memory")
        scores = (
            exact_scores(conn, qvec, _of_subject(conn, scores, subject), vec_ok) if scores else {}
        )
    else:
        # Without sqlite-vec: memories are few (hundreds), so Python can compare them all.
        rows = conn.execute(
            "SELECT v.id, v.vec FROM memory_vectors v JOIN memory_items i ON"
            " i.id = v.id WHERE i.kind != 'archive' AND i.subject = ?",
            (subject,),
        )
        scores = {int(r[0]): cosine(qvec, bytes(r[1])) for r in rows}
    if not scores:
        return None
    best = max(scores, key=lambda i: scores[i])
    return best, scores[best]
