"""The skills a chat can use: the owner's and the shipped ones (read once at start-up;
a restart picks up an edited file) and the active repository's committed ones (read
from git, cached per commit, so a turn costs one ``rev-parse``)."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from core.errors import GitError
from orchestrator.skills.committed import head_of, read_committed
from skills import Catalog, SkillProblem

if TYPE_CHECKING:
    from orchestrator.workspace import Workspace

CACHED = 32  # (repo, commit) catalogs kept


class SkillBook:
    def __init__(self, base: Catalog, workspace: Workspace) -> None:
        self.base = base
        self._workspace = workspace
        self._cache: OrderedDict[tuple[str, str], Catalog] = OrderedDict()

    def digest(self) -> str:
        """Changes when the owner's or the shipped skills change: the frozen prompt,
        which lists them, is rebuilt then (and only then)."""
        text = "\0".join(f"{s.name}\0{s.description}" for s in self.base)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def for_repo(self, name: str | None) -> Catalog:
        """The base catalog plus ``name``'s committed skills (blocking: git)."""
        if not name:
            return self.base
        try:
            repo = self._workspace.repo(name)
            head = head_of(repo)
            if head is None:
                return self.base
            key = (name, head)
            known = self._cache.get(key)
            if known is None:
                known = self.base.with_repo(read_committed(repo, name, head))
                self._cache[key] = known
                while len(self._cache) > CACHED:
                    self._cache.popitem(last=False)
            else:
                self._cache.move_to_end(key)
            return known
        except GitError as err:
            problem = SkillProblem(f"{name} (repository)", "skills", f"readable ({err})")
            return Catalog(self.base.skills, (*self.base.problems, problem))

    def for_cli(
        self, active: Sequence[dict[str, str]], repo: str
    ) -> tuple[tuple[str, str, str], ...]:
        """What a coding CLI run gets (``HarnessRequest.skills``): the thread's activated
        skills (as activated), every skill marked ``cli: true``, and the repository's own
        committed skills; one of each name, in that order."""
        handed: dict[str, tuple[str, str, str]] = {}
        for a in active:
            handed.setdefault(a["name"], (a["name"], a.get("description", ""), a["body"]))
        for skill in self.for_repo(repo):
            if skill.cli or skill.source == "repo":
                handed.setdefault(skill.name, skill.handed())
        return tuple(handed.values())


__all__ = ["SkillBook"]
