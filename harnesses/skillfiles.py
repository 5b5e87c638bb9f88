"""Skills handed to a coding CLI (``HarnessRequest.skills``) in the CLI's own format.

Claude Code has a skills folder: each skill becomes ``$CLAUDE_CONFIG_DIR/skills/<name>/
SKILL.md`` (its frontmatter: name, description), which it lists to its model and loads
when a task matches. The other CLIs have no such folder: the skills are appended to the
user-level instructions file (GEMINI.md, AGENTS.md, copilot-instructions.md) as one
clearly marked section. Everything lives under ``state_dir``, never the repository, and
is rewritten before every run, so a skill of the last run never lingers.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Sequence
from pathlib import Path

import yaml

Handed = Sequence[tuple[str, str, str]]  # (name, description, body)

# Names become folder names: the same rule as the skills' own (skills/model.py).
_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
SECTION = "# Skills from Fetch"


def valid(skills: Handed) -> list[tuple[str, str, str]]:
    """Only skills whose name is a safe folder name, one of each."""
    seen: set[str] = set()
    kept = []
    for name, description, body in skills:
        if _NAME.fullmatch(name) and name not in seen:
            seen.add(name)
            kept.append((name, description, body))
    return kept


def section(skills: Handed) -> str:
    """The skills as a markdown section of an instructions file ('' for none)."""
    kept = valid(skills)
    if not kept:
        return ""
    parts = [
        SECTION,
        "",
        "Follow a skill below when the task matches its description.",
    ]
    for name, description, body in kept:
        parts += ["", f"## Skill: {name}", f"_{description}_", "", body.strip()]
    return "\n".join(parts) + "\n"


def skill_file(name: str, description: str, body: str) -> str:
    """A ``SKILL.md`` as Claude Code reads it: YAML frontmatter, then the instructions."""
    meta = yaml.safe_dump(
        {"name": name, "description": description}, allow_unicode=True, sort_keys=False
    )
    return f"---\n{meta}---\n\n{body.strip()}\n"


def write_skill_folder(skills: Handed, folder: Path) -> list[Path]:
    """Make ``folder`` hold exactly these skills (it is Fetch's: under state_dir)."""
    kept = valid(skills)
    wanted = {name for name, _, _ in kept}
    if folder.is_dir():
        for old in folder.iterdir():
            if old.name not in wanted:
                if old.is_dir() and not old.is_symlink():
                    shutil.rmtree(old)
                else:
                    old.unlink()
    written = []
    for name, description, body in kept:
        path = folder / name / "SKILL.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name("SKILL.md.tmp")
        tmp.write_text(skill_file(name, description, body), encoding="utf-8")
        tmp.replace(path)
        written.append(path)
    return written


__all__ = ["SECTION", "section", "skill_file", "valid", "write_skill_folder"]
