"""``fetch store copy`` (orchestrator/store/copy.py) through the real command: a SQLite
home with rows in every table goes to a real PostgreSQL and back to a new SQLite file,
and the two SQLite files hold the same rows, value for value (text with quotes and
emoji, NULLs, timestamps to the microsecond). A non-empty target is refused in one line;
after a copy, PostgreSQL gives new rows fresh ids."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from core.events import SessionKey
from orchestrator.store import Store
from orchestrator.store.copy import tables

KEY = SessionKey("terminal", "owner")
T0 = 1_767_258_000.123456


def _fill(path: Path) -> dict[str, int]:
    """Three rows in every table (more in messages), every column set from its type, the
    third row's nullable columns NULL; ids 1..n so the foreign keys hold."""
    counts: dict[str, int] = {}
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA foreign_keys=ON")
        for table in tables():
            info = db.execute(f"PRAGMA table_info({table})").fetchall()
            n = 500 if table == "messages" else 3
            for i in range(1, n + 1):
                values: list[Any] = []
                for _cid, name, kind, notnull, _default, pk in info:
                    if i == 3 and not notnull and not pk:
                        values.append(None)
                    elif kind == "INTEGER":
                        values.append(i)
                    elif kind == "REAL":
                        values.append(T0 + i)
                    else:
                        values.append(f'{name} {i} ✓ it\'s "quoted" ?')
                marks = ",".join("?" * len(values))
                cols = ", ".join(str(c[1]) for c in info)
                db.execute(f"INSERT INTO {table}({cols}) VALUES ({marks})", values)
            counts[table] = n
    return counts


def _dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    with sqlite3.connect(path) as db:
        return {t: db.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in tables()}


def _fetch(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FETCH_HOME": str(home), "FETCH_HARNESS": "demo"}
    env.pop("FETCH_STORE_URL", None)
    return subprocess.run(
        [sys.executable, "-c", f"from orchestrator.cli import main; main({list(args)!r})"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


async def test_sqlite_to_postgres_and_back_loses_nothing(tmp_path: Path, pg_url: str) -> None:
    first, back = tmp_path / "first.db", tmp_path / "back.db"
    async with Store(first):  # the schema, as Fetch makes it
        pass
    counts = _fill(first)

    there = _fetch(tmp_path / "home", "store", "copy", "--from", str(first), "--to", pg_url)
    assert there.returncode == 0, there.stderr
    assert f"copied {sum(counts.values())} rows" in there.stdout
    assert "messages: 500 rows" in there.stdout

    returned = _fetch(tmp_path / "home", "store", "copy", "--from", pg_url, "--to", str(back))
    assert returned.returncode == 0, returned.stderr
    assert _dump(back) == _dump(first)

    again = _fetch(tmp_path / "home", "store", "copy", "--from", str(first), "--to", pg_url)
    assert again.returncode == 2
    assert "already holds rows" in again.stderr and "Traceback" not in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1

    async with Store(tmp_path / "unused.db", pg_url) as store:  # ids go on past the copy
        assert await store.messages.add(KEY, "in", "after the move") == 501
        assert await store.work.create_task(KEY, "demo", "p", "demo") == 4


def test_a_missing_source_is_one_line(tmp_path: Path) -> None:
    done = _fetch(
        tmp_path / "home", "store", "copy", "--from", str(tmp_path / "nope.db"), "--to", "x.db"
    )
    assert done.returncode == 2
    assert "no SQLite database at" in done.stderr and "Traceback" not in done.stderr
