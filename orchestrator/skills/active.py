"""A thread's activated skills: kept in ``SessionData.active_skills`` (so a restart keeps
them and /clear drops them), each sent as one ``<activated_skill>`` message right after
the frozen system prompt on every later turn of the thread.

Why there: the history window slides and compaction folds old messages, but these sit
outside the history, so neither can lose them; and a new activation is appended after
the ones before it, so what precedes it (the system prompt and earlier skills) stays a
byte-identical prefix for the provider's cache. The body is stored as it was activated:
a file edited later, or a repository's next commit, does not change a running thread.
"""

from __future__ import annotations

from typing import Any

from core.session_data import SessionData
from skills import Skill


def wrap(name: str, source: str, body: str) -> str:
    # A repository's skill is untrusted text: it cannot close the element early.
    safe = body.replace("</activated_skill", "<\\/activated_skill")
    return f'<activated_skill name="{name}" source="{source}">\n{safe}\n</activated_skill>'


def is_active(data: SessionData, name: str) -> bool:
    return any(a.get("name") == name for a in data.active_skills)


def activate(data: SessionData, skill: Skill) -> bool:
    """Keep ``skill`` for the rest of the thread; False when it already is (a no-op)."""
    if is_active(data, skill.name):
        return False
    data.active_skills.append(
        {
            "name": skill.name,
            "source": skill.source,
            "description": skill.description,
            "body": skill.body,
        }
    )
    return True


def messages(data: SessionData) -> list[dict[str, Any]]:
    """The activated skills as request messages, in the order they were activated."""
    return [
        {"role": "user", "content": wrap(a["name"], a.get("source", ""), a.get("body", ""))}
        for a in data.active_skills
        if a.get("name")
    ]


__all__ = ["activate", "is_active", "messages", "wrap"]
