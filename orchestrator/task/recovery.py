"""Start-up recovery of the git journal: a commit or a revert a kill interrupted.

Fetch writes an intent (store ``work.open_intent``) before it moves a repository's ref
and closes it in the same transaction that records the move. An intent still open at
start-up is settled from git, idempotently:

* the ref moved to the journalled commit (parent = the intent's base, same message and,
  for a commit, the approved tree): record it as done (the commit for /undo, the revert
  as undone, a task branch's merge question) and make the index and files match HEAD,
  as the interrupted step would have;
* the ref did not move: the intent is void (a commit's approval still waits for yes).

The ref is HEAD (the owner's branch) for a yes, a merge, semi's unasked commit and a
revert; for the autonomous commit it is the task branch ``fetch/task-<id>``. A chat
left WORKING on the task whose commit was recorded gets its outcome (semi: done;
branch: waiting for merge, drop or keep), not "the task was stopped".

Lock files a killed git left behind (``index.lock``, ``HEAD.lock``, a branch's
``.lock``) are removed first, only in a repository with an open intent: Fetch was
inside git there when it died. Last, a chat still shown as waiting on a diff that was
answered is closed, and the owner is told what was recorded.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from core.errors import FetchError
from core.events import SessionKey
from core.state import State
from orchestrator.boundary.gitops import Repo
from orchestrator.boundary.gittree import Anchor
from orchestrator.messenger import Messenger
from orchestrator.session import Sessions
from orchestrator.store import Store
from orchestrator.store.work import IntentRow
from orchestrator.task import autonomy
from orchestrator.workspace import Workspace

log = logging.getLogger(__name__)
Ttl = Callable[[SessionKey, str], Awaitable[float]]


@dataclass(frozen=True, slots=True)
class Note:
    """What to tell a chat once its channel is up."""

    key: SessionKey
    text: str


def journalled_ref(intent: IntentRow) -> str:
    """The ref ``intent`` moves: the task branch for an autonomous commit, else HEAD."""
    if intent.kind == "branch":
        return f"refs/heads/{autonomy.branch_name(intent.target)}"
    return "HEAD"


def journalled_head(repo: Repo, intent: IntentRow) -> str | None:
    """The intent's ref, if it is the commit ``intent`` describes; None if the ref did
    not move (for a task branch: it does not exist)."""
    ref = journalled_ref(intent)
    if ref == "HEAD":
        head = repo.run("rev-parse", "--verify", "HEAD")
    else:
        found = repo.run("for-each-ref", "--format=%(objectname)", "--end-of-options", ref)
        if not found:
            return None
        head = found.split()[0]
    if head == intent.base:
        return None
    raw = repo.run("cat-file", "commit", head, strip=False)
    header, _, message = raw.partition("\n\n")
    fields = [line.split(" ", 1) for line in header.splitlines()]
    parents = [value for name, value in fields if name == "parent"]
    tree = next((value for name, value in fields if name == "tree"), "")
    if parents != [intent.base] or message.strip() != intent.message.strip():
        return None
    if intent.tree and tree != intent.tree:
        return None
    return head


def clear_stale_locks(gitdir: Path) -> list[str]:
    """Remove the lock files a killed git leaves (Fetch holds the home's lock, and it
    died inside git here: no live git of Fetch's holds them)."""
    found = [gitdir / "index.lock", gitdir / "HEAD.lock", gitdir / "packed-refs.lock"]
    refs = gitdir / "refs" / "heads"
    if refs.is_dir():
        found += [p for p in refs.rglob("*.lock") if p.is_file()]
    removed = []
    for lock in found:
        if lock.is_file() and not lock.is_symlink():
            lock.unlink()
            removed.append(str(lock.relative_to(gitdir)))
    return removed


def settle_files(repo: Repo, intent: IntentRow) -> None:
    """What the interrupted step did after moving the ref: a commit's index and files go
    from the base to HEAD (``follow``: only if they are not there yet, never over the
    owner's own edits); a revert's files follow HEAD (its tree was clean before); a task
    branch's change never was in the working tree."""
    if intent.kind in ("commit", "unasked"):
        repo.follow(intent.base, repo.run("rev-parse", "--verify", "HEAD"))
    elif intent.kind == "branch":
        return
    else:
        repo.run("reset", "-q", "--hard", "HEAD")


def settled_after_error(repo: Repo, intent: IntentRow) -> str | None:
    """After git failed mid-way: the journalled commit if the ref moved all the same
    (its files settled), else None (nothing moved, or git cannot even tell)."""
    try:
        head = journalled_head(repo, intent)
        if head is not None:
            settle_files(repo, intent)
    except FetchError:
        return None
    return head


def _settle_in_git(workspace: Workspace, intent: IntentRow) -> str | None:
    path = workspace.path(intent.repo)
    removed = clear_stale_locks(Anchor.of(path).gitdir)
    if removed:
        log.warning("recovery: removed stale git locks in %s: %s", intent.repo, removed)
    repo = Repo(path)
    head = journalled_head(repo, intent)
    if head is not None:
        settle_files(repo, intent)
    return head


async def recover_journal(
    store: Store,
    workspace: Workspace,
    sessions: Sessions,
    owner: str = "owner",
    ttl: Ttl | None = None,
) -> list[Note]:
    """Settle every open intent from git, then close chats left waiting on an answered
    diff. Returns what to tell each chat. ``owner`` and ``ttl`` (the chat's layered
    ``approvals.ttl_seconds`` for a repository) make a recovered task branch's merge
    question as the live path would have."""
    notes: list[Note] = []
    for intent in await store.work.open_intents():
        key = _key(intent.session)
        try:
            head = await asyncio.to_thread(_settle_in_git, workspace, intent)
        except (FetchError, OSError) as err:
            # The repository is gone or refused: nothing moved that Fetch can record.
            log.warning("recovery: intent %d in %s left void: %s", intent.id, intent.repo, err)
            head = None
        if head is None:
            await store.work.void_intent(intent.id)
            continue
        if intent.kind == "commit":
            if await store.work.commit_done(intent.id, head, intent.message.splitlines()[0]):
                notes.append(
                    Note(
                        key,
                        f"✅ Committed {head[:7]} to {intent.repo} (your yes "
                        "from before the restart). Say undo to revert.",
                    )
                )
        elif intent.kind == "unasked":  # its chat is told by _recorded_tasks
            await store.work.unasked_done(intent.id, head, intent.message.splitlines()[0])
        elif intent.kind == "branch":
            await store.work.branch_done(
                intent.id,
                secrets.token_hex(8),
                _diff_hash(intent.message),
                owner,
                await ttl(key, intent.repo) if ttl is not None else 3600.0,
            )
        else:
            await store.work.undo_done(intent.id, head)
            notes.append(
                Note(
                    key,
                    f"↩️ The undo from before the restart is done: new commit "
                    f"{head[:7]} in {intent.repo}.",
                )
            )
        log.info("recovery: %s intent %d recorded as %s", intent.kind, intent.id, head[:12])
    notes += await _recorded_tasks(store, sessions)
    await _close_answered(store, sessions)
    return notes


async def tell(messenger: Messenger, notes: list[Note]) -> None:
    """A channel that is down must not stop start-up, nor lose the note: it waits in
    the durable outbox for the channel's next start (``Messenger.notify``)."""
    for note in notes:
        await messenger.notify(note.key, note.text)


def _diff_hash(message: str) -> str:
    """The diff a task branch's commit carries (its ``Fetch-Diff:`` trailer)."""
    for line in reversed(message.splitlines()):
        if line.startswith(autonomy.DIFF_TRAILER):
            return line.removeprefix(autonomy.DIFF_TRAILER).strip()
    return ""


async def _recorded_tasks(store: Store, sessions: Sessions) -> list[Note]:
    """A chat still WORKING on a task whose commit is recorded (a kill came after the
    record, or recovery just made it) gets the outcome the kill interrupted: done (semi's
    unasked commit) or waiting for merge, drop or keep (a task branch); not "the task
    was stopped" (that is for a task that really lost its run)."""
    notes: list[Note] = []
    for row in await store.sessions.in_states((State.WORKING.value,)):
        session = await sessions.get(row.key)
        task_id = session.data.task_id
        task = None if task_id is None else await store.work.get_task(task_id)
        if task is None or task_id is None:
            continue
        if task.status == "committed":
            session.data.task_id = None
            session.data.task_prompt = None
            await session.settle(session.finish)
            notes.append(
                Note(
                    session.key,
                    f"✅ Task #{task_id} was committed to "
                    f"{task.repo} just before the restart. Say undo "
                    "to revert.",
                )
            )
            continue
        approval = await store.work.task_approval(task_id)
        if task.status != "branched" or approval is None or approval.status != "pending":
            continue
        session.data.approval_id = approval.id
        session.data.approval_message_id = None
        await session.settle(session.propose)
        branch = autonomy.branch_name(task_id)
        notes.append(
            Note(
                session.key,
                f"🌿 Task #{task_id} was committed on the branch "
                f"{branch} just before the restart; {task.repo}'s "
                "own branch is unchanged. merge · drop · keep",
            )
        )
    return notes


async def _close_answered(store: Store, sessions: Sessions) -> None:
    """A chat left GUARDING by a kill after its diff was answered waits for nothing."""
    for row in await store.sessions.in_states((State.GUARDING.value,)):
        session = await sessions.get(row.key)
        approval_id = session.data.approval_id
        approval = None if approval_id is None else await store.work.get_approval(approval_id)
        if approval is not None and approval.status == "pending":
            continue
        session.data.approval_id = None
        session.data.approval_message_id = None
        await session.settle(session.decide)


def _key(session: str) -> SessionKey:
    channel, _, chat = session.partition(":")
    return SessionKey(channel, chat)
