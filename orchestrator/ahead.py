"""What the first message after start would otherwise pay for, done as Fetch begins to
serve. Each item is a first-call cost found on the message path (bench/model_path.py's
first message after a restart); none changes what a message does."""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Iterable

from core.events import SessionKey
from identity import Identity
from orchestrator.agent.prompt import identity_digest
from orchestrator.session import Sessions

log = logging.getLogger(__name__)


def settle(identity: Identity) -> None:
    t0 = time.perf_counter()
    # The frozen identity's digest (a repr of its models: over 1 ms the first time).
    identity_digest(identity)
    # Start-up's garbage collected once, then what it built (modules, settings, tables:
    # alive as long as the process) moved out of the collector's reach: a full
    # collection then walks only what was made since, instead of pausing every chat's
    # loop for 20-30 ms, and the first message does not meet the one start-up left due.
    # Once per process: one that builds several apps (the tests) would otherwise keep
    # freezing what each left alive.
    if not gc.get_freeze_count():
        gc.collect()
        gc.freeze()
    log.debug("settled in %.1f ms", (time.perf_counter() - t0) * 1000)


async def preload(sessions: Sessions, keys: Iterable[SessionKey]) -> int:
    """The owner's chats that have talked before, live ahead of their next message (an
    owned task: a message that comes first simply loads its session itself)."""
    loaded = 0
    for key in keys:
        try:
            loaded += await sessions.preload(key)
        except Exception as err:  # the message loads it, and says what is wrong
            log.debug("session %s not loaded ahead: %s", key, err)
    return loaded
