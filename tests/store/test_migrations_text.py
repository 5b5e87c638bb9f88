"""The migrator splits each migration on ';' (store/db.py): a ';' inside an SQL comment
cuts a statement in two and every new database fails to open ('incomplete input'), as
migration 14 once did. Every comment of every migration is checked here."""

from __future__ import annotations

from orchestrator.store.migrations import MIGRATIONS


def test_no_comment_in_a_migration_holds_a_semicolon() -> None:
    bad = [
        f"migration {number}: {line.strip()}"
        for number, script in enumerate(MIGRATIONS, start=1)
        for line in script.splitlines()
        if "--" in line and ";" in line.split("--", 1)[1]
    ]
    assert not bad, "a ';' in an SQL comment splits the statement:\n" + "\n".join(bad)
