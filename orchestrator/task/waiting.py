"""After a restart: tell each chat whose diff still waits for yes/no.

The diff message the owner saw before the restart may be far up the chat (or on a phone
that was off); without a word, the conversation just seems stuck, holding every other
message. The reminder shows the summary again and becomes the message to answer (its
button nonce is the approval's, and replies to it count).
"""

from __future__ import annotations

import asyncio
import logging
import time

from core.errors import FetchError
from core.state import State
from core.tasks import Spawner
from orchestrator.messenger import Messenger
from orchestrator.permissions.service import Permissions
from orchestrator.session import Sessions
from orchestrator.store import Store
from orchestrator.store.db import key_str
from orchestrator.task import diffview
from orchestrator.task.approvals import Approvals, change_of
from orchestrator.workspace import Workspace

log = logging.getLogger(__name__)


async def announce_waiting_diffs(
    store: Store,
    sessions: Sessions,
    approvals: Approvals,
    workspace: Workspace,
    messenger: Messenger,
    permissions: Permissions,
) -> int:
    """Remind every GUARDING chat of its pending diff; how many were reminded."""
    told = 0
    for row in await store.sessions.in_states((State.GUARDING.value,)):
        session = await sessions.get(row.key)
        async with session.lock:
            approval = await approvals.pending(session)
            if (
                approval is None
                or approval.status != "pending"
                or approval.expires_at < time.time()
            ):
                continue  # the next message closes it (or says it expired), as before
            head = f"⏸ A diff for {approval.repo} still waits for your yes/no."
            if permissions.is_group(session.key):  # the diff itself went to the owner only
                text = head + " The owner answers here: yes or no."
            else:
                try:
                    change = await asyncio.to_thread(
                        change_of, workspace.repo(approval.repo), approval
                    )
                except (FetchError, OSError) as err:
                    log.warning("waiting diff for %s: %s", approval.repo, err)
                    text = head
                else:
                    text = head + "\n\n" + diffview.summary(change, approval.repo)
            try:
                sent = await messenger.send(session.key, text, approval_nonce=approval.nonce)
            except FetchError as err:  # a channel that is down must not stop start-up
                log.warning("could not remind %s of its diff: %s", session.key, err)
                continue
            session.data.approval_message_id = sent.message_id
            await session.persist()
            told += 1
    return told


async def restore_kept_diffs(
    store: Store,
    sessions: Sessions,
    approvals: Approvals,
    permissions: Permissions,
    spawner: Spawner,
) -> int:
    """After a restart: members' diffs that waited for the owner's busy chat wait again,
    and are offered at once where that chat is at rest; how many."""
    kept = 0
    states = tuple(state.value for state in State)
    for row in await store.sessions.in_states(states):
        approval_id = row.data.get("offered_approval")
        if not isinstance(approval_id, int):
            continue
        approval = await store.work.get_approval(approval_id)
        if (
            approval is None
            or approval.status != "pending"
            or approval.session != key_str(row.key)  # moved to the owner's chat already
            or approval.expires_at < time.time()
        ):
            continue
        owner = permissions.owner_chat(row.key.channel)
        if owner is None or owner == row.key:
            continue
        said = row.data.get("offered_said")
        approvals.keep_again(owner, approval_id, said if isinstance(said, str) else "")
        kept += 1
        if (await sessions.get(owner)).state is State.ALERT:
            approvals.rested(owner, spawner)
    return kept
