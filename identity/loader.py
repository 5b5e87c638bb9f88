"""COLLAR.md and ALPHA.md: frontmatter parsed into frozen models that reject unknown keys."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from core.markdown import load_markdown
from core.settings import StrictSettings


class Collar(StrictSettings):
    """Fetch's personality and standing directives."""

    name: str = Field(min_length=1, max_length=40)
    version: int = Field(ge=1)
    tone: str = "brief, friendly, precise"
    directives: tuple[str, ...] = ()
    body: str = ""


class Alpha(StrictSettings):
    """The owner's profile."""

    name: str = Field(min_length=1, max_length=80)
    timezone: str = "UTC"
    languages: tuple[str, ...] = ()
    preferences: tuple[str, ...] = ()
    body: str = ""


@dataclass(frozen=True, slots=True)
class Identity:
    collar: Collar
    alpha: Alpha


def load_identity(folder: Path) -> Identity:
    return Identity(
        collar=load_markdown(folder / "COLLAR.md", Collar),
        alpha=load_markdown(folder / "ALPHA.md", Alpha),
    )
