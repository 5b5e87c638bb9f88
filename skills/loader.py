"""Discovers ``*/SKILL.md`` under the given folders; a bad file stops start-up loudly."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from core.markdown import load_markdown
from core.settings import StrictSettings


class Skill(StrictSettings):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")
    description: str = Field(min_length=1, max_length=300)
    body: str = ""


def discover(*folders: Path) -> list[Skill]:
    found: dict[str, Skill] = {}
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*/SKILL.md")):
            skill = load_markdown(path, Skill)
            found.setdefault(skill.name, skill)  # earlier folders (the owner's) win
    return list(found.values())
