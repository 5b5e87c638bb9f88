"""What a conversation remembers besides its state: shared by the application (which
persists it) and the instincts (which read and adjust it through their contract)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class SessionData:
    """Everything besides the state name that a restart must restore."""

    repo: str | None = None
    harness: str | None = None
    # /model: the orchestrator's chain entry tried first (its name), and each coding
    # CLI's model (harness name -> model); unset: the configured defaults.
    model: str | None = None
    cli_models: dict[str, str] = field(default_factory=dict)
    task_id: int | None = None
    task_prompt: str | None = None
    task_agent: str | None = None  # the pack member that took the task (identity/pack.py)
    approval_id: int | None = None
    approval_message_id: str | None = None
    # The task's checklist, ticked once the diff is answered (progress.answer_marks).
    checklist: dict[str, str] = field(default_factory=dict)
    # A member's own diff handed to the owner's chat (its approval id): "withdraw" here
    # takes it back (orchestrator/task/approvals.py).
    offered_approval: int | None = None
    offered_said: str = ""  # the run's words with it, offered with it after a restart
    question: str | None = None  # what Fetch asked while WAITING
    question_context: dict[str, Any] = field(default_factory=dict)
    # The model's system prompt, frozen for this conversation so each request starts
    # byte-identical (providers cache the prefix): text, day, identity digest. /clear
    # empties it; orchestrator/agent/prompt.py rebuilds it.
    frozen_prompt: dict[str, str] = field(default_factory=dict)
    # The history window of this conversation (orchestrator/agent/window.py): where it
    # starts and what it folded, so consecutive requests share their prefix (a restart
    # too); it names its conversation, so /clear's fresh one starts a fresh window.
    history_window: dict[str, Any] = field(default_factory=dict)
    # Skills the model activated in this thread (name, source, description, body as
    # activated), sent after the system prompt on every later turn; /clear empties it.
    active_skills: list[dict[str, str]] = field(default_factory=list)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> SessionData:
        known = {k: v for k, v in raw.items() if k in cls.__dataclass_fields__}
        return cls(**known)
