"""``prices:`` and ``budgets:`` in fetch.yaml (orchestrator/costs/)."""

from __future__ import annotations

from pydantic import Field

from core.settings import StrictSettings


class Price(StrictSettings):
    """USD per 1,000,000 tokens."""

    input: float = Field(ge=0, le=10_000)
    output: float = Field(ge=0, le=10_000)


class BudgetSettings(StrictSettings):
    """Spend limits in USD; unset = no limit. At ``warn_at`` of one the owner is told
    once (per day, per task); at 100% model calls stop until the day or the task ends."""

    daily_usd: float | None = Field(None, gt=0)  # the owner's calendar day (timezone)
    task_usd: float | None = Field(None, gt=0)  # one task: its harness calls (relay)
    warn_at: float = Field(0.8, gt=0, lt=1)
