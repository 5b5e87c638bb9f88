"""A repository's own skills, read from its committed HEAD through the hardened host git.

Never from the working tree: the kennel writes there, so a task could otherwise plant
instructions for the next turn. Only ``.fetch/skills/<name>/SKILL.md`` and
``.claude/skills/<name>/SKILL.md`` are read (``.fetch`` first when both name one skill),
only regular files (a symlink is not followed), each at most ``FILE_MAX`` bytes, at most
``REPO_MAX`` of them: the text is the repository's, so it is untrusted and bounded.
"""

from __future__ import annotations

import re

from core.errors import GitError
from orchestrator.boundary.gitops import Repo
from skills import FILE_MAX, Skill, SkillProblem, collect, parse

FOLDERS = (".fetch/skills", ".claude/skills")
REPO_MAX = 20
_PATH = re.compile(r"\.(fetch|claude)/skills/[^/]+/SKILL\.md")
_REGULAR = {"100644", "100755"}


def head_of(repo: Repo) -> str | None:
    """HEAD's commit, or None for a repository without commits."""
    return repo.head() if repo.has_commits() else None


def read_committed(repo: Repo, label: str, head: str) -> list[Skill | SkillProblem]:
    """The skills committed at ``head``; ``label`` names the repository in problems."""
    listing = repo.run(
        "ls-tree", "-r", "-l", "-z", "--full-tree", head, "--", *FOLDERS, strip=False
    )
    entries: list[tuple[str, str, str, str]] = []
    for record in listing.split("\0"):
        meta, _, path = record.partition("\t")
        if not path or not _PATH.fullmatch(path):
            continue  # a skill's other files (scripts, references) are not instructions
        mode, _kind, sha, size = meta.split()
        entries.append((path, mode, sha, size))
    # .fetch/ before .claude/: the first file of a name wins.
    entries.sort(key=lambda e: (not e[0].startswith(".fetch/"), e[0]))
    found: list[Skill | SkillProblem] = []
    for n, (path, mode, sha, size) in enumerate(entries):
        origin = f"{label}@{head[:12]}:{path}"
        if n == REPO_MAX:
            found.append(SkillProblem(origin, "file", f"at most {REPO_MAX} skills per repository"))
            break
        if mode not in _REGULAR:
            found.append(SkillProblem(origin, "file", "a regular file (links are not followed)"))
            continue
        if not size.isdigit() or int(size) > FILE_MAX:
            found.append(SkillProblem(origin, "file", f"at most {FILE_MAX} bytes"))
            continue
        try:
            text, _cut = repo.read_capped("cat-file", "blob", sha, limit=FILE_MAX)
        except GitError as err:
            found.append(SkillProblem(origin, "file", f"readable from git ({err})"))
            continue
        found.append(parse(text.encode("utf-8"), origin, "repo"))
    # Two files of one repository claiming a name: the second is named as a problem.
    merged = collect(found)
    return [*merged.skills, *merged.problems]


__all__ = ["FOLDERS", "REPO_MAX", "head_of", "read_committed"]
