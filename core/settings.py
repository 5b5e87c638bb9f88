"""The base every settings section (and every frontmatter document) is built on.

Strict on purpose: an unknown key is a typo to report, never a value to ignore, and a
validated value never changes afterwards. Each subsystem defines its own section on this
base next to its code; ``orchestrator/config.py`` only composes them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


__all__ = ["StrictSettings"]
