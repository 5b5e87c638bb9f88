"""``fetch doctor``'s skills lines: how many of each source, each repository's committed
skills, and one line per skipped file (file, field, what is expected)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.skills.book import SkillBook
from orchestrator.workspace import Workspace
from skills import SkillProblem, discover


def report(owner: Path, shipped: Path, workspace: Workspace) -> list[str]:
    book = SkillBook(discover(owner, shipped), workspace)
    base = book.base
    counts = {src: sum(1 for s in base if s.source == src) for src in ("shipped", "owner")}
    lines = [f"skills:    {len(base)} ({counts['shipped']} shipped, {counts['owner']} in {owner})"]
    problems: list[SkillProblem] = list(base.problems)
    for name in workspace.repos():
        catalog = book.for_repo(name)
        own = [s.name for s in catalog if s.source == "repo"]
        if own:
            lines.append(f"skills:    {name} commits {len(own)}: {', '.join(own)}")
        problems += [p for p in catalog.problems if p not in base.problems]
    return lines + [p.line() for p in problems]


__all__ = ["report"]
