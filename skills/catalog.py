"""The skills Fetch knows, in precedence order, and the files it skipped.

Precedence: the owner's ``FETCH_HOME/skills`` over the shipped ``data/skills``
(an owner's skill of the same name replaces the shipped one: that is how the owner edits
a shipped skill). A repository's committed skills come last and can never shadow either:
a repo skill named like an owner or shipped skill is skipped with a problem, so a
repository cannot rewrite what "commit-style" means for the owner."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from skills.model import FILE_MAX, Skill, SkillProblem, Source
from skills.parse import parse


@dataclass(frozen=True, slots=True)
class Catalog:
    skills: tuple[Skill, ...] = ()
    problems: tuple[SkillProblem, ...] = ()

    def __iter__(self) -> Iterator[Skill]:
        return iter(self.skills)

    def __len__(self) -> int:
        return len(self.skills)

    def get(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)

    def names(self) -> list[str]:
        return [s.name for s in self.skills]

    def with_repo(self, found: Iterable[Skill | SkillProblem]) -> Catalog:
        """This catalog plus a repository's skills, which never replace one of ours."""
        skills, problems = list(self.skills), list(self.problems)
        for item in found:
            if isinstance(item, SkillProblem):
                problems.append(item)
            elif (known := next((s for s in skills if s.name == item.name), None)) is not None:
                problems.append(
                    SkillProblem(
                        item.origin,
                        "name",
                        f"a name no {known.source} skill uses (a repo skill never replaces one)",
                    )
                )
            else:
                skills.append(item)
        return Catalog(tuple(skills), tuple(problems))


def read_folder(folder: Path, source: Source) -> list[Skill | SkillProblem]:
    """Every ``<folder>/*/SKILL.md``, parsed; a file that cannot be read is a problem."""
    if not folder.is_dir():
        return []
    found: list[Skill | SkillProblem] = []
    for path in sorted(folder.glob("*/SKILL.md")):
        try:
            with path.open("rb") as f:
                raw = f.read(FILE_MAX + 1)
        except OSError as err:
            found.append(SkillProblem(str(path), "file", f"a readable file ({err.strerror})"))
            continue
        found.append(parse(raw, str(path), source))
    return found


def collect(found: Iterable[Skill | SkillProblem]) -> Catalog:
    """Skills in order, the first of a name kept; later ones of the same source are
    problems (two files claiming one name), of a later source silently replaced."""
    skills: dict[str, Skill] = {}
    problems: list[SkillProblem] = []
    for item in found:
        if isinstance(item, SkillProblem):
            problems.append(item)
            continue
        first = skills.get(item.name)
        if first is None:
            skills[item.name] = item
        elif first.source == item.source:
            problems.append(
                SkillProblem(item.origin, "name", f"a name no other skill uses ({first.origin})")
            )
    return Catalog(tuple(skills.values()), tuple(problems))


def discover(owner: Path | None, shipped: Path | None) -> Catalog:
    """The owner's skills, then the shipped ones; bad files skipped and listed."""
    found: list[Skill | SkillProblem] = []
    if owner is not None:
        found += read_folder(owner, "owner")
    if shipped is not None:
        found += read_folder(shipped, "shipped")
    return collect(found)


__all__ = ["Catalog", "collect", "discover", "read_folder"]
