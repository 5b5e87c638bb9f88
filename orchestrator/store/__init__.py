"""Persistence: SQLite (the source of truth) and the per-session JSONL journal."""

from orchestrator.store.journal import Journal
from orchestrator.store.sqlite import Store

__all__ = ["Journal", "Store"]
