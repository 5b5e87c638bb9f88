"""Whether a prompt job can run when it fires, decided when it is created.

A fired prompt job is a message in a fresh session with no one there to ask. With a
model, the planner decides what to do with it. Without one, only what needs no model
can run: a command (``/status``) or a code change the intent patterns recognise and that
names its repository (or the workspace has only one). Anything else would fail at
2 a.m. with "I'm not sure what you'd like": it is refused now, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable

from orchestrator.intent import Intent, classify

EXAMPLE = "/schedule fix the typo in README.md of demo every day at 9"


def problem(
    text: str, has_model: bool, repos: list[str], find_repo: Callable[[str], str | None]
) -> str | None:
    """Why the job would not run when it fires; None when it will."""
    text = text.strip()
    if has_model or text.startswith("/"):
        return None
    if classify(text).intent is not Intent.TASK:
        return (
            "⚠️ Not scheduled: that job needs a model to think with, and none is "
            "configured (model.base_url). Without one a job can run a command or a "
            f"code change, e.g.\n{EXAMPLE}"
        )
    if find_repo(text) is None and len(repos) != 1:
        return (
            '⚠️ Not scheduled: say which repository the job works in ("… of '
            f'{repos[0] if repos else "myapp"}"); when it fires there is no one to ask.'
        )
    return None
