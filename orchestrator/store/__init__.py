"""Persistence: the database (the source of truth) and the per-session JSONL journal.

The engine owns the connection (``engine.py``: SQLite's ``db.py`` by default, PostgreSQL's
``pg.py`` with ``store.url``); ``sessions``, ``inbox``, ``messages`` and ``work`` each
hold one table family behind a port (a Protocol), ``memory.py`` the in-memory twins, and
``composite.py`` the ``Store`` that puts the families together; ``copy.py`` moves a
store between the engines (``fetch store copy``).
"""

from orchestrator.store.composite import Store
from orchestrator.store.journal import Journal

__all__ = ["Journal", "Store"]
