"""The session state machine, declared as data (``transitions`` AsyncMachine).

The states are ``core.state.State``. One machine serves every session (``add_model``):
building a machine per session costs more than the whole instinct path is allowed to take.
Nothing fires a trigger by name but ``orchestrator/session.py``: ``Session`` has one method
per trigger below (``session.propose()``), and ``settle`` for "fire it unless the session
already moved on".
"""

from __future__ import annotations

from typing import Any

from transitions.extensions.asyncio import AsyncMachine

from core.state import State

TRANSITIONS: list[dict[str, Any]] = [
    {"trigger": "start_task", "source": State.ALERT, "dest": State.WORKING},
    {"trigger": "ask", "source": [State.ALERT, State.WORKING], "dest": State.WAITING},
    {"trigger": "answered", "source": State.WAITING, "dest": State.ALERT},
    {"trigger": "propose", "source": State.WORKING, "dest": State.GUARDING},
    {"trigger": "finish", "source": State.WORKING, "dest": State.ALERT},
    {"trigger": "decide", "source": State.GUARDING, "dest": State.ALERT},
    {"trigger": "pause", "source": [State.ALERT, State.WAITING], "dest": State.RESTING},
    {"trigger": "resume", "source": State.RESTING, "dest": State.ALERT},
    {"trigger": "reset", "source": "*", "dest": State.ALERT},
]


def build_machine() -> AsyncMachine:
    return AsyncMachine(
        model=None,
        states=[s.value for s in State],
        transitions=TRANSITIONS,
        initial=State.ALERT.value,
        auto_transitions=False,
        after_state_change="persist",
        queued=False,
    )
