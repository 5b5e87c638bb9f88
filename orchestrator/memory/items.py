"""Writes and reads of memory items; synchronous, run on the memory thread (db.py)."""

from __future__ import annotations

import time
from typing import Any

from orchestrator.memory.db import write
from orchestrator.memory.models import ITEM_COLUMNS, Item, WriteResult
from orchestrator.memory.schema import is_pg, same_text, text_key
from orchestrator.memory.scope import from_kennel
from orchestrator.memory.search import nearest_memory


def _layer(kind: str) -> str:
    return "archive" if kind == "archive" else "memory"


def has_vec_index(conn: Any, vec_ok: bool) -> bool:
    """The binary index exists only once an embedding endpoint told its dimension
    (schema.ensure_vec_index): without one, there is nothing in it to keep in step.
    On PostgreSQL the vectors table itself is made then (pg_schema.py)."""
    if is_pg(conn):
        row = conn.execute("SELECT to_regclass('memory_vectors') IS NOT NULL").fetchone()
        return bool(row[0])
    return (
        vec_ok
        and conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory_vec_bits'").fetchone()
        is not None
    )


def put_vector(
    conn: Any, item_id: int, kind: str, vec: bytes, signature: str, vec_ok: bool
) -> None:
    """Store the exact vector and its binary code; call inside a write transaction."""
    if is_pg(conn):  # one table: the vector and its HNSW index (pg_schema.py)
        conn.execute(
            "INSERT INTO memory_vectors(id, layer, vec) VALUES (?, ?, ?) ON CONFLICT(id)"
            " DO UPDATE SET vec=excluded.vec, layer=excluded.layer",
            (item_id, _layer(kind), vec),
        )
        conn.execute("UPDATE memory_items SET embedded=? WHERE id=?", (signature, item_id))
        return
    conn.execute(
        "INSERT INTO memory_vectors(id, vec) VALUES (?, ?) ON CONFLICT(id) DO UPDATE"
        " SET vec=excluded.vec",
        (item_id, vec),
    )
    if vec_ok:
        conn.execute("DELETE FROM memory_vec_bits WHERE rowid = ?", (item_id,))
        conn.execute(
            "INSERT INTO memory_vec_bits(rowid, embedding, layer) VALUES"
            " (?, vec_quantize_binary(vec_f32(?)), ?)",
            (item_id, vec, _layer(kind)),
        )
    conn.execute("UPDATE memory_items SET embedded=? WHERE id=?", (signature, item_id))


def get(conn: Any, item_id: int) -> Item | None:
    row = conn.execute(f"SELECT {ITEM_COLUMNS} FROM memory_items WHERE id=?", (item_id,)).fetchone()
    return Item.from_row(row) if row else None


# INDEXED BY: the repeat check must never become a scan of the subject's rows (it was
# one: 339 ms at 1M memories); without the index this statement fails instead.
REPEAT_SQL = (
    "SELECT id, content FROM memory_items INDEXED BY memory_items_content_key"
    " WHERE subject = ? AND content_key = ? AND kind != 'archive'"
)


def repeat_of(
    conn: Any, content: str, key: int, subject: str, author: tuple[str, str | None] | None
) -> int | None:
    """The subject's memory with this very text (``author`` given: only one it wrote)."""
    # PostgreSQL has no INDEXED BY; tests/memory check its plan uses the index.
    sql = REPEAT_SQL
    if is_pg(conn):
        sql = sql.replace(" INDEXED BY memory_items_content_key", "")
    mine = " AND source = ? AND chat IS NOT DISTINCT FROM ?" if author else ""
    rows = conn.execute(f"{sql}{mine} ORDER BY id", (subject, key, *(author or ()))).fetchall()
    for row in rows:  # a hash: the text itself decides
        if same_text(str(row[1]), content):
            return int(row[0])
    return None


def remember(
    conn: Any,
    *,
    kind: str,
    content: str,
    tags: tuple[str, ...],
    source: str,
    vec: bytes | None,
    signature: str,
    threshold: float,
    vec_ok: bool,
    subject: str = "owner",
    chat: str | None = None,
) -> WriteResult:
    """Add a memory, or update the one of the same subject it nearly duplicates
    (cosine >= threshold): one subject's write never changes another's memory.

    A kennel's write (scope.py) merges only into a row of its own source and ``chat``:
    a near-duplicate of anyone else's (the owner's, the orchestrator's, another CLI's or
    another chat's) is left byte for byte as it was and the write becomes a row of its
    own, marked with the kennel's source — else a CLI steered by a repo could rewrite
    the owner's memory while it stays marked as the owner's.

    The nearest-neighbour check and the write share one transaction, so two writers
    of the same fact cannot both add it.
    """
    author = (source, chat) if from_kennel(source) else None

    key = text_key(content)

    def run() -> WriteResult:
        now = time.time()
        # A word-for-word repeat (case and spacing aside) is found through the index
        # first; only then, with an embedding, the nearest vector.
        same = repeat_of(conn, content, key, subject, author)
        twin: tuple[int, float] | None = None if same is None else (same, 1.0)
        if twin is None and vec is not None:
            near = nearest_memory(conn, vec, vec_ok, subject, author)
            if near is not None and near[1] >= threshold:
                twin = near
        if twin is not None:
            old = get(conn, twin[0])
            assert old is not None
            merged_tags = " ".join(dict.fromkeys((*old.tags, *tags)))
            conn.execute(
                "UPDATE memory_items SET content=?, content_key=?, kind=?, tags=?, updated=?"
                " WHERE id=?",
                (content, key, kind, merged_tags, now, twin[0]),
            )
            if vec is not None:
                put_vector(conn, twin[0], kind, vec, signature, vec_ok)
            new = get(conn, twin[0])
            assert new is not None
            return WriteResult(new, True, twin[1])
        cur = conn.execute(
            "INSERT INTO memory_items(kind, content, content_key, tags, source, created,"
            " updated, subject, chat) VALUES (?,?,?,?,?,?,?,?,?)",
            (kind, content, key, " ".join(dict.fromkeys(tags)), source, now, now, subject, chat),
        )
        item_id = int(cur.lastrowid)
        if vec is not None:
            put_vector(conn, item_id, kind, vec, signature, vec_ok)
        item = get(conn, item_id)
        assert item is not None
        return WriteResult(item, False)

    result: WriteResult = write(conn, run)
    return result


def forget(conn: Any, item_id: int, vec_ok: bool, subject: str | None = None) -> Item | None:
    """Delete a memory (archives are history: they are not forgotten one by one).
    ``subject`` given: only that subject's memory (another's counts as absent)."""

    def run() -> Item | None:
        item = get(conn, item_id)
        if item is None or item.kind == "archive":
            return None
        if subject is not None and item.subject != subject:
            return None
        if not is_pg(conn) and has_vec_index(conn, vec_ok):
            conn.execute("DELETE FROM memory_vec_bits WHERE rowid=?", (item_id,))
        conn.execute("DELETE FROM memory_items WHERE id=?", (item_id,))  # cascades vectors
        return item

    result: Item | None = write(conn, run)
    return result


def counts(conn: Any, subject: str = "owner") -> dict[str, int]:
    rows = conn.execute(
        "SELECT kind, COUNT(*) FROM memory_items WHERE subject = ? GROUP BY kind", (subject,)
    ).fetchall()
    return {str(r[0]): int(r[1]) for r in rows}


def newest(conn: Any, limit: int, subject: str = "owner") -> list[Item]:
    rows = conn.execute(
        f"SELECT {ITEM_COLUMNS} FROM memory_items WHERE kind != 'archive'"
        " AND subject = ? ORDER BY updated DESC, id DESC LIMIT ?",
        (subject, limit),
    ).fetchall()
    return [Item.from_row(r) for r in rows]


def unembedded(conn: Any, signature: str, limit: int) -> tuple[list[tuple[int, str, str]], int]:
    """Up to ``limit`` items whose vector is missing or from another model; and how many."""
    left = int(
        conn.execute(
            "SELECT COUNT(*) FROM memory_items WHERE embedded IS NULL OR embedded != ?",
            (signature,),
        ).fetchone()[0]
    )
    rows = conn.execute(
        "SELECT id, kind, content FROM memory_items WHERE embedded IS NULL OR"
        " embedded != ? ORDER BY id LIMIT ?",
        (signature, limit),
    ).fetchall()
    return [(int(r[0]), str(r[1]), str(r[2])) for r in rows], left


def store_vectors(
    conn: Any, batch: list[tuple[int, str, bytes]], signature: str, vec_ok: bool
) -> None:
    def run() -> None:
        for item_id, kind, vec in batch:
            if conn.execute("SELECT 1 FROM memory_items WHERE id=?", (item_id,)).fetchone():
                put_vector(conn, item_id, kind, vec, signature, vec_ok)

    write(conn, run)


def drop_vectors(conn: Any, vec_ok: bool) -> None:
    """The embedding model changed: old vectors are not comparable with new ones."""

    def run() -> None:
        if is_pg(conn):
            if has_vec_index(conn, vec_ok):
                conn.execute("DELETE FROM memory_vectors")
        else:
            if has_vec_index(conn, vec_ok):
                conn.execute("DELETE FROM memory_vec_bits")
            conn.execute("DELETE FROM memory_vectors")
        conn.execute("UPDATE memory_items SET embedded = NULL")

    write(conn, run)
