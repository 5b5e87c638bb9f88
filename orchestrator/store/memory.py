"""In-memory twins of the store's ports: the same behaviour, no file.

They exist so the behaviour of a port is written down once (``tests/store``) and holds
for both implementations, and so a test of code above the store can run without SQLite.
Values go through JSON as they would through the database, so a caller never gets back
the very object it saved.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field, replace
from typing import Any

from core.events import SessionKey
from orchestrator.store.blocks import BlockVersion
from orchestrator.store.db import key_str
from orchestrator.store.messages import Line
from orchestrator.store.sessions import SessionRow
from orchestrator.store.work import ApprovalRow, CommitRow, IntentRow, TaskRow


def _copy(data: Any) -> Any:
    return json.loads(json.dumps(data))


class MemorySessions:
    def __init__(self) -> None:
        self._rows: dict[str, SessionRow] = {}

    async def load(self, key: SessionKey) -> SessionRow | None:
        row = self._rows.get(key_str(key))
        return None if row is None else SessionRow(key, row.state, _copy(row.data))

    async def save(self, key: SessionKey, state: str, data: dict[str, Any]) -> None:
        self._rows[key_str(key)] = SessionRow(key, state, _copy(data))

    async def in_states(self, states: tuple[str, ...]) -> list[SessionRow]:
        return [
            SessionRow(r.key, r.state, _copy(r.data))
            for r in self._rows.values()
            if r.state in states
        ]


class MemoryBlocks:
    """The memory blocks' versions; the current one of a block is its last."""

    def __init__(self) -> None:
        self._versions: dict[tuple[str, str], list[BlockVersion]] = {}

    async def heads(self) -> list[BlockVersion]:
        return [v[-1] for _, v in sorted(self._versions.items()) if v]

    async def commit(
        self,
        kind: str,
        scope: str,
        *,
        expected: int,
        text: str,
        author: str,
        change: str,
        restored: int | None = None,
        at: float | None = None,
    ) -> BlockVersion | None:
        versions = self._versions.setdefault((kind, scope), [])
        if len(versions) != expected:
            return None
        when = time.time() if at is None else at
        row = BlockVersion(kind, scope, expected + 1, text, author, change, when, restored)
        versions.append(row)
        return row

    async def history(self, kind: str, scope: str, limit: int = 20) -> list[BlockVersion]:
        return list(reversed(self._versions.get((kind, scope), [])))[:limit]

    async def version(self, kind: str, scope: str, number: int) -> BlockVersion | None:
        versions = self._versions.get((kind, scope), [])
        return versions[number - 1] if 1 <= number <= len(versions) else None


@dataclass(slots=True)
class _Inbound:
    payload: str
    done: bool = False


class MemoryInbox:
    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], _Inbound] = {}  # insertion order = received

    async def accept(
        self, channel: str, message_id: str, key: SessionKey, payload: dict[str, Any]
    ) -> bool:
        if (channel, message_id) in self._seen:
            return False
        self._seen[(channel, message_id)] = _Inbound(json.dumps(payload))
        return True

    async def finish(self, channel: str, message_id: str) -> None:
        row = self._seen.get((channel, message_id))
        if row is not None:
            row.done = True

    async def queued(self) -> list[dict[str, Any]]:
        return [json.loads(r.payload) for r in self._seen.values() if not r.done]

    async def adopt(self) -> list[dict[str, Any]]:
        return []  # one process: nobody else's messages to take over

    async def seen(self, channel: str, message_id: str) -> bool:
        return (channel, message_id) in self._seen


@dataclass(frozen=True, slots=True)
class _Message:
    session: str
    direction: str
    text: str
    model: str | None
    tokens_in: int
    tokens_out: int
    sender: str = ""


class MemoryMessages:
    def __init__(self) -> None:
        self._rows: list[_Message] = []  # written, in id order (id = index + 1)
        self._queued: list[_Message] = []

    async def add(
        self,
        key: SessionKey,
        direction: str,
        text: str,
        *,
        model: str | None = None,
        tokens_in: int = 0,
        tokens_out: int = 0,
        sender: str = "",
    ) -> int:
        self._rows.append(
            _Message(key_str(key), direction, text, model, tokens_in, tokens_out, sender)
        )
        return len(self._rows)

    def log(
        self,
        key: SessionKey,
        direction: str,
        text: str,
        *,
        model: str | None = None,
        tokens_in: int = 0,
        tokens_out: int = 0,
        sender: str = "",
    ) -> None:
        self._queued.append(
            _Message(key_str(key), direction, text, model, tokens_in, tokens_out, sender)
        )

    async def flush(self) -> None:
        queued, self._queued = self._queued, []
        self._rows.extend(queued)

    async def token_totals(self, key: SessionKey) -> tuple[int, int]:
        session = key_str(key)
        mine = [m for m in itertools.chain(self._rows, self._queued) if m.session == session]
        return sum(m.tokens_in for m in mine), sum(m.tokens_out for m in mine)

    async def recent(self, key: SessionKey, limit: int) -> list[tuple[int, str, str]]:
        await self.flush()  # like SQLite: queued rows belong to the conversation, with ids
        session = key_str(key)
        mine = [
            (i + 1, m.direction, m.text)
            for i, m in enumerate(self._rows)
            if m.session == session and m.direction in ("in", "out")
        ]
        return mine[-limit:] if limit > 0 else []

    async def recent_lines(self, key: SessionKey, limit: int) -> list[Line]:
        await self.flush()
        session = key_str(key)
        mine = [
            Line(i + 1, m.direction, m.text, m.sender)
            for i, m in enumerate(self._rows)
            if m.session == session and m.direction in ("in", "out")
        ]
        return mine[-limit:] if limit > 0 else []


@dataclass(slots=True)
class _Task:
    row: TaskRow
    result: str = ""
    checks: list[str] = field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0


class MemoryWork:
    def __init__(self) -> None:
        self._tasks: dict[int, _Task] = {}
        self._approvals: dict[int, ApprovalRow] = {}
        self._commits: dict[int, CommitRow] = {}
        self._undone: dict[int, str] = {}  # commit id -> the sha that reverted it
        self._intents: dict[int, IntentRow] = {}

    # -- tasks -----------------------------------------------------------------------
    async def create_task(
        self, key: SessionKey, repo: str, prompt: str, harness: str, requester: str = "owner"
    ) -> int:
        task_id = len(self._tasks) + 1
        self._tasks[task_id] = _Task(
            TaskRow(task_id, key_str(key), repo, prompt, harness, "running", requester)
        )
        return task_id

    async def adopt_tasks(self) -> list[tuple[int, SessionKey]]:
        return []  # one process: its start recovers every task cut short

    async def interrupt_orphans(self) -> int:
        orphans = [t for t in self._tasks.values() if t.row.status == "running"]
        for task in orphans:
            task.row = replace(task.row, status="interrupted")
            task.result = "Fetch restarted"
        return len(orphans)

    async def finish_task(
        self,
        task_id: int,
        status: str,
        result: str = "",
        *,
        tokens_in: int = 0,
        tokens_out: int = 0,
        cost_usd: float = 0.0,
    ) -> None:
        task = self._tasks.get(task_id)
        if task is None:
            return
        task.row = replace(task.row, status=status)
        task.result = result
        task.tokens_in += tokens_in
        task.tokens_out += tokens_out
        task.cost_usd += cost_usd

    async def set_task_checks(self, task_id: int, checks: list[str]) -> None:
        if task_id in self._tasks:
            self._tasks[task_id].checks = [str(c) for c in checks]

    async def task_checks(self, task_id: int) -> list[str]:
        task = self._tasks.get(task_id)
        return list(task.checks) if task else []

    async def set_task_status(self, task_id: int, status: str) -> None:
        if task_id in self._tasks:
            self._tasks[task_id].row = replace(self._tasks[task_id].row, status=status)

    async def get_task(self, task_id: int) -> TaskRow | None:
        task = self._tasks.get(task_id)
        return task.row if task else None

    # -- approvals -------------------------------------------------------------------
    async def create_approval(
        self,
        key: SessionKey,
        task_id: int,
        repo: str,
        nonce: str,
        diff_hash: str,
        base_sha: str,
        owner: str,
        ttl_seconds: float,
        tree_sha: str = "",
    ) -> int:
        session = key_str(key)
        for old in list(self._approvals.values()):
            if old.session == session and old.status == "pending":
                self._approvals[old.id] = replace(old, status="superseded")
        approval_id = len(self._approvals) + 1
        self._approvals[approval_id] = ApprovalRow(
            approval_id,
            session,
            task_id,
            repo,
            nonce,
            diff_hash,
            base_sha,
            owner,
            "pending",
            time.time() + ttl_seconds,
            tree_sha,
        )
        return approval_id

    async def get_approval(self, approval_id: int) -> ApprovalRow | None:
        return self._approvals.get(approval_id)

    async def task_approval(self, task_id: int) -> ApprovalRow | None:
        mine = [a for a in self._approvals.values() if a.task_id == task_id]
        return mine[-1] if mine else None

    async def decide_approval(self, approval_id: int, status: str) -> bool:
        row = self._approvals.get(approval_id)
        if row is None or row.status != "pending":
            return False
        self._approvals[approval_id] = replace(row, status=status)
        return True

    # -- commits (for /undo) ---------------------------------------------------------
    async def record_commit(
        self,
        key: SessionKey,
        repo: str,
        sha: str,
        parent: str,
        task_id: int | None,
        summary: str,
        requester: str = "owner",
    ) -> None:
        commit_id = len(self._commits) + 1
        self._commits[commit_id] = CommitRow(
            commit_id, key_str(key), repo, sha, parent, task_id, summary, requester
        )

    async def last_commit(self, key: SessionKey) -> CommitRow | None:
        session = key_str(key)
        live = [
            c for c in self._commits.values() if c.session == session and c.id not in self._undone
        ]
        return live[-1] if live else None

    async def mark_undone(self, commit_id: int, by_sha: str) -> None:
        if commit_id in self._commits:
            self._undone[commit_id] = by_sha

    # -- intents ---------------------------------------------------------------------
    async def open_intent(
        self, kind: str, key: SessionKey, repo: str, target: int, base: str, tree: str, message: str
    ) -> IntentRow:
        intent_id = len(self._intents) + 1
        self._intents[intent_id] = IntentRow(
            intent_id, kind, key_str(key), repo, target, base, tree, message
        )
        return self._intents[intent_id]

    async def open_intents(self) -> list[IntentRow]:
        return [i for i in self._intents.values() if i.status == "open"]

    async def void_intent(self, intent_id: int) -> None:
        self._settle(intent_id, "void")

    def _settle(self, intent_id: int, status: str) -> IntentRow | None:
        intent = self._intents.get(intent_id)
        if intent is None or intent.status != "open":
            return None
        self._intents[intent_id] = replace(intent, status=status)
        return intent

    async def commit_done(self, intent_id: int, sha: str, summary: str) -> bool:
        intent = self._intents.get(intent_id)
        if intent is None or intent.status != "open" or intent.kind != "commit":
            return False
        approval = self._approvals.get(intent.target)
        if approval is None or approval.status != "pending":
            self._settle(intent_id, "void")
            return False
        self._approvals[approval.id] = replace(approval, status="approved")
        task = self._tasks.get(approval.task_id)
        await self.record_commit(
            _key_of(approval.session),
            approval.repo,
            sha,
            approval.base_sha,
            approval.task_id,
            summary,
            task.row.requester if task else "owner",
        )
        await self.set_task_status(approval.task_id, "committed")
        self._settle(intent_id, "done")
        return True

    async def undo_done(self, intent_id: int, sha: str) -> None:
        intent = self._intents.get(intent_id)
        if intent is None or intent.status != "open" or intent.kind != "undo":
            return
        await self.mark_undone(intent.target, sha)
        self._settle(intent_id, "done")

    async def unasked_done(self, intent_id: int, sha: str, summary: str) -> bool:
        intent = self._intents.get(intent_id)
        if intent is None or intent.status != "open" or intent.kind != "unasked":
            return False
        task = self._tasks.get(intent.target)
        await self.record_commit(
            _key_of(intent.session),
            intent.repo,
            sha,
            intent.base,
            intent.target,
            summary,
            task.row.requester if task else "owner",
        )
        await self.set_task_status(intent.target, "committed")
        self._settle(intent_id, "done")
        return True

    async def branch_done(
        self, intent_id: int, nonce: str, diff_hash: str, owner: str, ttl_seconds: float
    ) -> int:
        intent = self._intents.get(intent_id)
        if intent is None or intent.status != "open" or intent.kind != "branch":
            return 0
        approval_id = await self.create_approval(
            _key_of(intent.session),
            intent.target,
            intent.repo,
            nonce,
            diff_hash,
            intent.base,
            owner,
            ttl_seconds,
            tree_sha=intent.tree,
        )
        await self.set_task_status(intent.target, "branched")
        self._settle(intent_id, "done")
        return approval_id


def _key_of(session: str) -> SessionKey:
    channel, _, chat = session.partition(":")
    return SessionKey(channel, chat)
