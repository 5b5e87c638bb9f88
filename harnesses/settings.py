"""The harnesses' settings section (``harness:``): which CLI, its limits and model."""

from __future__ import annotations

from pydantic import Field

from core.settings import StrictSettings


class HarnessSettings(StrictSettings):
    default: str = "auto"  # "auto": claude-code when usable, else the offline demo harness
    timeout_seconds: float = Field(900.0, gt=0)
    stop_grace_seconds: float = Field(1.0, ge=0, le=1.5)
    model: str | None = None  # passed to the CLI's --model when set
    max_retries: int = Field(0, ge=0, le=10)


__all__ = ["HarnessSettings"]
