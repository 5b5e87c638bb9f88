"""The few places SQLite's and PostgreSQL's SQL must differ, in one module.

Everything else the families write is portable (``ON CONFLICT``, ``RETURNING``-free
inserts, ``CASE`` instead of summing booleans). Each helper takes the engine's
``dialect`` (``orchestrator/store/engine.py``) and returns a fragment of SQL.
"""

from __future__ import annotations

from orchestrator.store.engine import Dialect


def bucket(expr: str, size: int, dialect: Dialect) -> str:
    """``expr // size`` as an integer (SQLite's CAST truncates; PostgreSQL's rounds)."""
    if dialect == "postgresql":
        return f"CAST(FLOOR({expr} / {size}) AS BIGINT)"
    return f"CAST({expr} / {size} AS INTEGER)"


def unindexed(table: str, dialect: Dialect) -> str:
    """``table`` read without its indexes: a SQLite hint; PostgreSQL's planner decides
    from its statistics."""
    return f"{table} NOT INDEXED" if dialect == "sqlite" else table


def like(dialect: Dialect) -> str:
    """Case-insensitive LIKE (SQLite's LIKE is, for ASCII; PostgreSQL's is not)."""
    return "ILIKE" if dialect == "postgresql" else "LIKE"


def joined(expr: str, dialect: Dialect) -> str:
    """The values of ``expr`` joined with commas (an aggregate)."""
    if dialect == "postgresql":
        return f"string_agg(CAST({expr} AS TEXT), ',')"
    return f"group_concat({expr})"
