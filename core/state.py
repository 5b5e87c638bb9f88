"""The five states a conversation can be in (the seed's meaning).

    ALERT     idle and listening; anything may start here
    WORKING   a harness run is in progress; chit-chat gets a short answer, /stop wins
    WAITING   Fetch asked the owner a question and waits for the answer
    GUARDING  a diff waits for approval; every other input is held until yes/no
    RESTING   paused by the owner (/pause); only commands are answered

Vocabulary shared by the application (which owns the machine that moves between them,
``orchestrator/fsm.py``) and the instincts (which read them): always the enum, never a string.
"""

from __future__ import annotations

from enum import StrEnum


class State(StrEnum):
    ALERT = "ALERT"
    WORKING = "WORKING"
    WAITING = "WAITING"
    GUARDING = "GUARDING"
    RESTING = "RESTING"
