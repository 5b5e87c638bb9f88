"""The ``blocks`` section: how long each memory block may grow, in characters.

Every block is sent on every model request, so the limits bound what the blocks cost
per turn; an edit past a limit is refused (never cut), saying the size and the limit.
"""

from __future__ import annotations

from pydantic import Field

from core.settings import StrictSettings


class BlockSettings(StrictSettings):
    persona_chars: int = Field(1_500, ge=100, le=20_000)
    owner_chars: int = Field(1_500, ge=100, le=20_000)
    project_chars: int = Field(2_000, ge=100, le=20_000)
