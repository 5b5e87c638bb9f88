"""``fetch store copy --from <sqlite file or URL> --to <URL or sqlite file>``: every table
of the store, moved between SQLite and PostgreSQL (either way) without loss.

Both ends are opened as Fetch opens its store (so both are migrated to this Fetch's
schema), the target must be empty, every table is copied in one transaction with its
ids kept, and then checked: the row count of every table, and a sample of rows (the
first, the last and some between) compared value by value. PostgreSQL's identity
counters are moved past the copied ids, so new rows do not collide.

Memory (``orchestrator/memory/``) keeps its own database and is not part of this copy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import StoreError
from orchestrator.store.composite import open_engine
from orchestrator.store.engine import Engine
from orchestrator.store.pg import is_url, where
from orchestrator.store.pg_migrations import PG_MIGRATIONS

SAMPLE = 50  # rows compared per table, spread over its ids
BATCH = 1000


def tables() -> list[str]:
    """The store's tables in the order they were created (parents before children)."""
    found: list[str] = []
    for script in PG_MIGRATIONS:
        found += re.findall(r"CREATE TABLE (\w+)", script)
    return found


@dataclass(frozen=True, slots=True)
class Copied:
    table: str
    rows: int
    sampled: int


def _name(target: str) -> str:
    return f"PostgreSQL at {where(target)}" if is_url(target) else f"SQLite at {target}"


def _engine(target: str, *, must_exist: bool) -> Engine:
    if is_url(target):
        return open_engine(Path(), target)
    path = Path(target).expanduser()
    if must_exist and not path.is_file():
        raise StoreError(f"no SQLite database at {path}")
    return open_engine(path)


async def _columns(db: Engine, table: str) -> list[str]:
    if db.dialect == "postgresql":
        rows = await db.conn.execute_fetchall(
            "SELECT column_name FROM information_schema.columns WHERE"
            " table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position",
            (table,),
        )
        return [str(r[0]) for r in rows]
    rows = await db.conn.execute_fetchall(f"PRAGMA table_info({table})")
    return [str(r[1]) for r in rows]


async def _count(db: Engine, table: str) -> int:
    rows = list(await db.conn.execute_fetchall(f"SELECT COUNT(*) FROM {table}"))
    return int(rows[0][0])


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and float(a) == float(b)
    return bool(a == b)


async def copy_store(source: str, target: str) -> list[Copied]:
    """Copy every table from ``source`` into the empty ``target``; raise ``StoreError``
    (one line) on anything that would lose or mix data."""
    if source == target:
        raise StoreError("--from and --to name the same store")
    src = _engine(source, must_exist=True)
    dst = _engine(target, must_exist=False)
    await src.open()
    try:
        await dst.open()
        try:
            return await _copy(src, dst, target)
        finally:
            await dst.close()
    finally:
        await src.close()


async def _copy(src: Engine, dst: Engine, target: str) -> list[Copied]:
    names = tables()
    held = {t: n for t in names if (n := await _count(dst, t))}
    if held:
        listed = ", ".join(f"{t} ({n})" for t, n in held.items())
        raise StoreError(
            f"{_name(target)} already holds rows: {listed}; copy only into an empty store"
        )
    plan: list[tuple[str, list[str], list[Any]]] = []
    for table in names:
        columns = await _columns(src, table)
        if columns != await _columns(dst, table):
            raise StoreError(f"table {table} differs between the two stores; not copying")
        order = "id" if "id" in columns else ", ".join(columns[:2])
        rows = list(
            await src.conn.execute_fetchall(
                f"SELECT {', '.join(columns)} FROM {table} ORDER BY {order}"
            )
        )
        plan.append((table, columns, [tuple(r) for r in rows]))
    async with dst.transaction() as conn:
        for table, columns, rows in plan:
            marks = ",".join("?" * len(columns))
            sql = f"INSERT INTO {table}({', '.join(columns)}) VALUES ({marks})"
            for start in range(0, len(rows), BATCH):
                await conn.executemany(sql, rows[start : start + BATCH])
            if dst.dialect == "postgresql" and "id" in columns:
                # Identity counters past the copied ids: the next new row gets a fresh one.
                await conn.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'),"
                    f" COALESCE((SELECT MAX(id) FROM {table}), 0) + 1, false)"
                )
    return [await _check(dst, table, columns, rows) for table, columns, rows in plan]


async def _check(dst: Engine, table: str, columns: list[str], rows: list[Any]) -> Copied:
    count = await _count(dst, table)
    if count != len(rows):
        raise StoreError(f"table {table}: {len(rows)} rows read, {count} written")
    if not rows:
        return Copied(table, 0, 0)
    step = max(1, len(rows) // SAMPLE)
    picks = sorted({*range(0, len(rows), step), len(rows) - 1})
    # The id, or the first two columns (every other table's primary key is among them).
    key = ["id"] if "id" in columns else columns[:2]
    where_sql = " AND ".join(f"{k} = ?" for k in key)
    for i in picks:
        row = rows[i]
        ident = tuple(row[columns.index(k)] for k in key)
        got = list(
            await dst.conn.execute_fetchall(
                f"SELECT {', '.join(columns)} FROM {table} WHERE {where_sql}", ident
            )
        )
        if len(got) != 1 or not all(_same(a, b) for a, b in zip(row, got[0], strict=True)):
            raise StoreError(f"table {table}: row {ident} differs after the copy")
    return Copied(table, count, len(picks))


def describe(copied: list[Copied], source: str, target: str) -> str:
    total = sum(c.rows for c in copied)
    lines = [f"copied {total} rows from {_name(source)} to {_name(target)}:"]
    lines += [f"  {c.table}: {c.rows} rows ({c.sampled} compared)" for c in copied if c.rows]
    lines.append("checked: every table's row count, and the sampled rows value by value")
    return "\n".join(lines)


__all__ = ["Copied", "copy_store", "describe", "tables"]
