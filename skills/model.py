"""What a skill is: its frontmatter (validated, unknown keys refused), its body, where it
came from; and a problem that skipped one file (file, field, what is expected)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from core.settings import StrictSettings

Source = Literal["owner", "shipped", "repo"]

NAME_PATTERN = r"^[a-z0-9][a-z0-9-]{0,63}$"
# Phase 1 sends every description on every request: short, so 50 skills stay small.
DESCRIPTION_MAX = 200
BODY_MAX = 8_000  # characters: one activated skill is a bounded part of every request
FILE_MAX = 16 * 1024  # bytes of a SKILL.md, read (or read from git) up to this and no more


class SkillMeta(StrictSettings):
    """The frontmatter of a ``SKILL.md``."""

    name: str = Field(pattern=NAME_PATTERN)
    description: str = Field(min_length=1, max_length=DESCRIPTION_MAX)
    # Handed to the coding CLI on every run (not only when the thread activated it).
    cli: bool = False
    body: str = Field(default="", max_length=BODY_MAX)


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    body: str
    source: Source
    origin: str  # the file it came from (a path, or repo:<name>@<commit>:<path>)
    cli: bool = False

    def handed(self) -> tuple[str, str, str]:
        """As ``HarnessRequest.skills`` carries it."""
        return (self.name, self.description, self.body)


@dataclass(frozen=True, slots=True)
class SkillProblem:
    """One skill file skipped: never fatal, shown in /status and ``fetch doctor``."""

    file: str
    field: str
    expected: str

    def line(self) -> str:
        return f"⚠️ skill skipped: {self.file}: {self.field}: {self.expected}"


__all__ = [
    "BODY_MAX",
    "DESCRIPTION_MAX",
    "FILE_MAX",
    "NAME_PATTERN",
    "Skill",
    "SkillMeta",
    "SkillProblem",
    "Source",
]
