"""The words of the permission model: subjects, actions, effects, decisions, profiles.

An *action* is a string naming one object: ``instinct:<name>`` (every instinct),
``tool:<name>`` (every orchestrator tool), ``repo:<name>`` (a task on a repository),
``path:<file>`` (a changed file in a diff), ``approve`` (answering a diff),
``undo:others`` (reverting a commit made for someone else), ``talk`` (free text: the
model and the task pipeline). Rules and profiles match actions with shell patterns.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from fnmatch import fnmatchcase

OWNER = "owner"


class Effect(enum.StrEnum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


@dataclass(frozen=True, slots=True)
class Subject:
    """Who sent a message: ``id`` is ``owner``, a member's name, or the allowlist entry
    (``whatsapp:4915...``) of an unnamed sender. Memory, commits and grants use it."""

    id: str
    profile: str
    repos: tuple[str, ...] = ()

    @property
    def is_owner(self) -> bool:
        return self.profile == OWNER


@dataclass(frozen=True, slots=True)
class Decision:
    effect: Effect
    action: str
    step: str  # which step of the resolution order decided (see resolver.py)
    why: str  # the rule, grant or default, in words

    @property
    def allowed(self) -> bool:
        return self.effect is Effect.ALLOW

    def explain(self) -> str:
        return f"{self.action}: {self.effect.value} ({self.step}: {self.why})"


def matches(pattern: str, action: str) -> bool:
    """``path:secrets/**`` matches ``path:secrets/a/b``; ``tool:memory_*`` every memory
    tool. ``**`` and ``*`` both cross ``/`` (fnmatch), which is the safe reading for
    deny rules."""
    return fnmatchcase(action, pattern)


# What each profile may do when no rule and no grant speaks ("defaults", the last step).
VIEWER_ALLOWS = ("instinct:help", "instinct:commands", "instinct:status", "instinct:whoami")
COLLABORATOR_ALLOWS = (
    *VIEWER_ALLOWS,
    "instinct:stop",
    "instinct:clear",
    "instinct:undo",
    "instinct:workspace",
    "instinct:harness",
    "instinct:remember",
    "instinct:memory",
    "instinct:forget",
    # Who Fetch is and its pack (the owner's profile text too: not for viewers), and the
    # tools this sender may use.
    "instinct:identity",
    "instinct:tools",
    "tool:workspace_list",
    "tool:workspace_select",
    "tool:task_create",
    "tool:ask_user",
    "tool:memory_write",
    "tool:memory_search",
    "talk",
    # Reading the repositories it may work in (the tools check repo:<name> too), its
    # tasks, and telling the chat how things go; /stop's twin.
    "tool:workspace_status",
    "tool:task_status",
    "tool:task_cancel",
    "tool:report_progress",
    "tool:repo_list_files",
    "tool:repo_read_file",
    "tool:repo_search",
    "tool:git_log",
    "tool:git_show",
    # Skills: listing them and loading one into the chat only read shipped, owner's and
    # (for a repository it may work in) committed text. Not for viewers: a repo's skills
    # are its text.
    "instinct:skills",
    "tool:activate_skill",
)
PROFILES: dict[str, tuple[str, ...]] = {
    OWNER: ("*",),
    "collaborator": COLLABORATOR_ALLOWS,
    "viewer": VIEWER_ALLOWS,
}


def profile_allows(subject: Subject, action: str) -> bool:
    if any(matches(p, action) for p in PROFILES.get(subject.profile, ())):
        return True
    if action.startswith("repo:") and subject.profile == "collaborator":
        return any(matches(r, action[len("repo:") :]) for r in subject.repos)
    # A changed file is judged by path rules only (deny/ask); no rule, no objection.
    return action.startswith("path:") and subject.profile != "viewer"
