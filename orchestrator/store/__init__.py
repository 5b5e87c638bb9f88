"""Persistence: SQLite (the source of truth) and the per-session JSONL journal.

``db.py`` owns the connection; ``sessions``, ``inbox``, ``messages`` and ``work`` each
hold one table family behind a port (a Protocol), ``memory.py`` the in-memory twins, and
``composite.py`` the ``Store`` that puts the families together.
"""

from orchestrator.store.composite import Store
from orchestrator.store.journal import Journal

__all__ = ["Journal", "Store"]
