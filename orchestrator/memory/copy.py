"""Copy memory between its SQLite file and PostgreSQL, for moving a home (issue 25, 3).

``fetch store copy`` moves the store's tables; memory keeps its own (``memory.db``, or
its tables beside the store's on PostgreSQL), so this is its part: every item with its
id, text key and vector, the archive watermarks, and which embedding model made the
vectors (so the target does not re-embed). The target must be empty. Checked after the
copy by the counts of items, vectors and watermarks and by a sample of items compared
column by column. Either side is a ``memory.db`` path or a ``postgresql://`` URL.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.memory.schema import ensure_vec_index, is_pg, migrate

COLUMNS = (
    "id, kind, content, tags, source, thread, first_msg, last_msg, started, ended, path,"
    " created, updated, embedded, subject, chat, content_key"
)
SAMPLE = 50


class MemoryCopyError(Exception):
    """The copy was refused or did not check out; the message is one line."""


@dataclass(frozen=True, slots=True)
class MemoryCopied:
    items: int
    vectors: int
    watermarks: int


def _is_url(where: str | Path) -> bool:
    return isinstance(where, str) and where.startswith(("postgresql://", "postgres://"))


def open_side(where: str | Path) -> tuple[Any, bool]:
    """A connection to memory at ``where`` (migrated) and whether it has sqlite-vec."""
    if _is_url(where):
        from orchestrator.memory.pg import PgConn

        conn = PgConn(str(where))
        migrate(conn)
        return conn, True
    from orchestrator.memory.db import _driver, _load_vec

    path = Path(where)
    path.parent.mkdir(parents=True, exist_ok=True)
    driver, can_load = _driver()
    conn = driver.connect(str(path), isolation_level=None, check_same_thread=False)
    problem = _load_vec(conn, can_load)
    migrate(conn)
    return conn, problem is None


def _vectors(conn: Any) -> list[tuple[int, str, bytes]]:
    from orchestrator.memory.items import has_vec_index

    if is_pg(conn):
        if not has_vec_index(conn, True):
            return []
        rows = conn.execute("SELECT id, layer, vec FROM memory_vectors ORDER BY id").fetchall()
        return [(int(r[0]), str(r[1]), bytes(r[2])) for r in rows]
    rows = conn.execute(
        "SELECT v.id, CASE i.kind WHEN 'archive' THEN 'archive' ELSE 'memory' END, v.vec"
        " FROM memory_vectors v JOIN memory_items i ON i.id = v.id ORDER BY v.id"
    ).fetchall()
    return [(int(r[0]), str(r[1]), bytes(r[2])) for r in rows]


def _count(conn: Any, table: str) -> int:
    return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def copy(src: Any, dst: Any, dst_vec_ok: bool) -> MemoryCopied:
    """Copy everything of ``src`` into the empty ``dst`` (both migrated connections)."""
    if _count(dst, "memory_items") or _count(dst, "memory_watermarks"):
        raise MemoryCopyError("the target memory is not empty; copy only into a new one")
    items = [tuple(r) for r in src.execute(f"SELECT {COLUMNS} FROM memory_items ORDER BY id")]
    marks = [tuple(r) for r in src.execute("SELECT thread, last_msg FROM memory_watermarks")]
    vectors = _vectors(src)
    row = src.execute("SELECT value FROM memory_meta WHERE key='embedding'").fetchone()
    model = None if row is None else str(row[0])
    dims = {len(v) // 4 for _, _, v in vectors}
    if len(dims) > 1:
        raise MemoryCopyError(f"the source holds vectors of {len(dims)} dimensions; re-embed first")
    if dims and is_pg(dst):
        ensure_vec_index(dst, dims.pop())  # before the items: a new table clears 'embedded'
    dst.execute("BEGIN IMMEDIATE")
    try:
        marks_sql = ",".join("?" * len(COLUMNS.split(",")))
        dst.executemany(f"INSERT INTO memory_items({COLUMNS}) VALUES ({marks_sql})", items)
        dst.executemany("INSERT INTO memory_watermarks(thread, last_msg) VALUES (?, ?)", marks)
        # Without embeddings there are no vectors, and on PostgreSQL no vectors table
        # either (it is made with its dimension): nothing to insert, nothing to prepare.
        if is_pg(dst):
            if vectors:
                dst.executemany(
                    "INSERT INTO memory_vectors(id, layer, vec) VALUES (?, ?, ?)", vectors
                )
            if items:
                dst.execute(
                    "SELECT setval(pg_get_serial_sequence('memory_items', 'id'), ?)",
                    (max(int(r[0]) for r in items),),
                )
        elif vectors:
            dst.executemany(
                "INSERT INTO memory_vectors(id, vec) VALUES (?, ?)", [(i, v) for i, _, v in vectors]
            )
        if model is not None:
            dst.execute(
                "INSERT INTO memory_meta(key, value) VALUES ('embedding', ?) ON CONFLICT(key)"
                " DO UPDATE SET value=excluded.value",
                (model,),
            )
    except BaseException:
        dst.execute("ROLLBACK")
        raise
    dst.execute("COMMIT")
    if dims and not is_pg(dst) and dst_vec_ok:
        ensure_vec_index(dst, dims.pop())  # the binary codes, made from the vectors
    copied = MemoryCopied(len(items), len(vectors), len(marks))
    _check(src, dst, copied)
    return copied


def _check(src: Any, dst: Any, copied: MemoryCopied) -> None:
    got = MemoryCopied(
        _count(dst, "memory_items"), len(_vectors(dst)), _count(dst, "memory_watermarks")
    )
    if got != copied:
        raise MemoryCopyError(f"memory copy does not check out: copied {copied}, found {got}")
    ids = [int(r[0]) for r in src.execute("SELECT id FROM memory_items ORDER BY id")]
    step = max(1, len(ids) // SAMPLE)
    for item_id in ids[::step]:
        a = src.execute(f"SELECT {COLUMNS} FROM memory_items WHERE id=?", (item_id,)).fetchone()
        b = dst.execute(f"SELECT {COLUMNS} FROM memory_items WHERE id=?", (item_id,)).fetchone()
        if b is None or tuple(a) != tuple(b):
            raise MemoryCopyError(f"memory copy does not check out: item {item_id} differs")


async def copy_memory(source: str | Path, target: str | Path) -> MemoryCopied:
    """:func:`copy_memory_sync` on a thread of its own (PostgreSQL's side drives an event
    loop of its own, which a thread already running one cannot)."""
    return await asyncio.to_thread(copy_memory_sync, source, target)


def copy_memory_sync(source: str | Path, target: str | Path) -> MemoryCopied:
    """Open both sides, copy, check, close. Errors are :class:`MemoryCopyError` (or the
    engine's own when a side cannot be opened)."""
    if not _is_url(source) and not Path(source).is_file():
        raise MemoryCopyError(f"no memory to copy at {source}")
    src, _ = open_side(source)
    try:
        dst, vec_ok = open_side(target)
        try:
            return copy(src, dst, vec_ok)
        finally:
            dst.close()
    finally:
        src.close()
