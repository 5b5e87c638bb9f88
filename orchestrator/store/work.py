"""The work a chat asked for: ``tasks`` (harness runs), ``approvals`` (the diff the
owner must answer), ``commits`` (what ``/undo`` reverts) and ``intents`` (the git
journal: a ref move Fetch is about to make, settled from git after a crash)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Protocol

from core.events import SessionKey
from orchestrator.store import once
from orchestrator.store.db import key_str
from orchestrator.store.engine import Engine

# Settling an intent closes the inbound row of the command that opened it (if any), in
# the same transaction: a /undo replayed after a kill finds its message done.
CLOSE_ASKER = (
    "UPDATE inbound SET status='done' WHERE EXISTS (SELECT 1 FROM intents i WHERE i.id=?"
    " AND i.in_message != '' AND i.in_channel=inbound.channel"
    " AND i.in_message=inbound.message_id)"
)


@dataclass(frozen=True, slots=True)
class TaskRow:
    id: int
    session: str
    repo: str
    prompt: str
    harness: str
    status: str
    requester: str = "owner"  # who the task is for (orchestrator/permissions/)


@dataclass(frozen=True, slots=True)
class ApprovalRow:
    id: int
    session: str
    task_id: int
    repo: str
    nonce: str
    diff_hash: str
    base_sha: str
    owner: str
    status: str
    expires_at: float
    # The tree the kennel's change was made into (orchestrator/boundary/changeset.py):
    # the diff is read, and committed, from git objects; "" for a row from before.
    tree_sha: str = ""


@dataclass(frozen=True, slots=True)
class CommitRow:
    id: int
    session: str
    repo: str
    sha: str
    parent: str
    task_id: int | None
    summary: str
    requester: str = "owner"  # whose task it was: /undo reverts only one's own


@dataclass(frozen=True, slots=True)
class IntentRow:
    """A ref move Fetch is about to make: written before, closed with its record."""

    id: int
    # commit (a yes or a merge: HEAD) | unasked (semi's commit: HEAD) | branch (the
    # autonomous commit: refs/heads/fetch/task-<target>) | undo (a revert: HEAD)
    kind: str
    session: str
    repo: str
    target: int  # commit: the approval id; unasked, branch: the task id; undo: the
    # commits row it reverts
    base: str  # the tip the ref moves from (for a branch: the new commit's parent)
    tree: str  # commit, unasked, branch: the tree committed; undo: "" (git computes it)
    message: str  # the new commit's message, exactly
    status: str = "open"  # open | done | void


class WorkPort(Protocol):
    # -- tasks -----------------------------------------------------------------------
    async def create_task(
        self, key: SessionKey, repo: str, prompt: str, harness: str, requester: str = "owner"
    ) -> int:
        """A new task, status ``running``; returns its id."""

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
        """Set the final status and result; token and cost figures add up."""

    async def set_task_checks(self, task_id: int, checks: list[str]) -> None: ...

    async def task_checks(self, task_id: int) -> list[str]:
        """The test commands the harness ran ([] for an unknown task)."""

    async def set_task_status(self, task_id: int, status: str) -> None: ...

    async def get_task(self, task_id: int) -> TaskRow | None: ...

    async def adopt_tasks(self) -> list[tuple[int, SessionKey]]:
        """(id, chat) of the running tasks of processes that are gone, now this
        process's to recover (PostgreSQL, several processes; each to one taker only).
        [] on SQLite: the start alone recovers every task cut short."""

    async def interrupt_orphans(self) -> int:
        """At a start alone, once the working chats are recovered: every task still
        marked running has no run (a kill between its row and its chat's state, whose
        message the inbox replays; an /improve run killed) and is marked interrupted.
        Returns how many."""

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
        """A pending approval; the session's older pending one is superseded."""

    async def get_approval(self, approval_id: int) -> ApprovalRow | None: ...

    async def task_approval(self, task_id: int) -> ApprovalRow | None:
        """The task's newest approval (for a task branch: its merge question)."""

    async def decide_approval(self, approval_id: int, status: str) -> bool:
        """Move a pending approval to ``status``; False if it was no longer pending."""

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
    ) -> None: ...

    async def last_commit(self, key: SessionKey) -> CommitRow | None:
        """The session's newest commit not yet undone."""

    async def mark_undone(self, commit_id: int, by_sha: str) -> None: ...

    # -- intents (the git journal, orchestrator/task/recovery.py) -------------------------
    async def open_intent(
        self, kind: str, key: SessionKey, repo: str, target: int, base: str, tree: str, message: str
    ) -> IntentRow:
        """Journal a ref move before making it."""

    async def open_intents(self) -> list[IntentRow]:
        """Intents neither done nor void, oldest first: what start-up settles."""

    async def void_intent(self, intent_id: int) -> None:
        """The ref did not move: nothing to record."""

    async def commit_done(self, intent_id: int, sha: str, summary: str) -> bool:
        """In one transaction: the approval approved, the commit recorded (for /undo),
        the task committed, the intent done. False (and nothing recorded, the intent
        void) if the approval was no longer pending."""

    async def undo_done(self, intent_id: int, sha: str) -> None:
        """In one transaction: the commit marked undone by ``sha``, the intent done."""

    async def unasked_done(self, intent_id: int, sha: str, summary: str) -> bool:
        """In one transaction: the commit nobody was asked for recorded (for /undo, in
        the intent's session), its task committed, the intent done. False if the intent
        was not an open ``unasked`` one."""

    async def branch_done(
        self, intent_id: int, nonce: str, diff_hash: str, owner: str, ttl_seconds: float
    ) -> int:
        """In one transaction: the task branch's merge question (a pending approval in
        the intent's session, superseding an older one), its task ``branched``, the
        intent done. Returns the approval id; 0 if the intent was not an open
        ``branch`` one."""


class SqliteWork:
    def __init__(self, db: Engine) -> None:
        self._db = db

    # -- tasks -----------------------------------------------------------------------
    async def create_task(
        self, key: SessionKey, repo: str, prompt: str, harness: str, requester: str = "owner"
    ) -> int:
        cur = await self._db.write(
            "INSERT INTO tasks(session, repo, prompt, harness, status, created, requester,"
            " holder) VALUES (?,?,?,?, 'running', ?, ?, ?)",
            (key_str(key), repo, prompt, harness, time.time(), requester, self._db.holder),
        )
        return int(cur.lastrowid or 0)

    async def adopt_tasks(self) -> list[tuple[int, SessionKey]]:
        """One UPDATE per gone holder, guarded by it: of two live processes only one
        takes each task (the other's waits on the row locks, then finds another holder)."""
        if self._db.dialect != "postgresql":
            return []
        me = self._db.holder
        rows = await self._db.conn.execute_fetchall(
            "SELECT DISTINCT holder FROM tasks WHERE status='running' AND holder<>?", (me,)
        )
        taken: list[tuple[int, SessionKey]] = []
        for (holder,) in rows:
            if not await self._db.gone(str(holder)):
                continue
            async with self._db.transaction(rows_locked=True) as conn:
                cur = await conn.execute(
                    "UPDATE tasks SET holder=? WHERE status='running' AND holder=?"
                    " RETURNING id, session",
                    (me, holder),
                )
                for task_id, session in await cur.fetchall():
                    channel, _, chat = str(session).partition(":")
                    taken.append((int(task_id), SessionKey(channel, chat)))
        return sorted(taken)

    async def interrupt_orphans(self) -> int:
        cur = await self._db.write(
            "UPDATE tasks SET status='interrupted', result='Fetch restarted', finished=?"
            " WHERE status='running'",
            (time.time(),),
        )
        return max(0, int(cur.rowcount or 0))

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
        await self._db.write(
            "UPDATE tasks SET status=?, result=?, finished=?, tokens_in=tokens_in+?,"
            " tokens_out=tokens_out+?, cost_usd=cost_usd+? WHERE id=?",
            (status, result, time.time(), tokens_in, tokens_out, cost_usd, task_id),
        )

    async def set_task_checks(self, task_id: int, checks: list[str]) -> None:
        await self._db.write("UPDATE tasks SET checks=? WHERE id=?", (json.dumps(checks), task_id))

    async def task_checks(self, task_id: int) -> list[str]:
        rows = list(
            await self._db.conn.execute_fetchall("SELECT checks FROM tasks WHERE id=?", (task_id,))
        )
        return [str(c) for c in json.loads(rows[0][0])] if rows else []

    async def set_task_status(self, task_id: int, status: str) -> None:
        await self._db.write("UPDATE tasks SET status=? WHERE id=?", (status, task_id))

    async def get_task(self, task_id: int) -> TaskRow | None:
        async with self._db.conn.execute(
            "SELECT id, session, repo, prompt, harness, status, requester FROM tasks WHERE id=?",
            (task_id,),
        ) as cur:
            r = await cur.fetchone()
        return TaskRow(int(r[0]), r[1], r[2], r[3], r[4], r[5], r[6]) if r else None

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
        now = time.time()
        async with self._db.transaction() as conn:
            # Only one approval may be open per session: older ones can never be answered.
            await conn.execute(
                "UPDATE approvals SET status='superseded', decided=? WHERE session=? AND"
                " status='pending'",
                (now, key_str(key)),
            )
            cur = await conn.execute(
                "INSERT INTO approvals(session, task_id, repo, nonce, diff_hash, base_sha,"
                " owner, status, created, expires_at, tree_sha)"
                " VALUES (?,?,?,?,?,?,?, 'pending', ?, ?, ?)",
                (
                    key_str(key),
                    task_id,
                    repo,
                    nonce,
                    diff_hash,
                    base_sha,
                    owner,
                    now,
                    now + ttl_seconds,
                    tree_sha,
                ),
            )
            return int(cur.lastrowid or 0)

    async def get_approval(self, approval_id: int) -> ApprovalRow | None:
        async with self._db.conn.execute(
            "SELECT id, session, task_id, repo, nonce, diff_hash, base_sha, owner, status,"
            " expires_at, tree_sha FROM approvals WHERE id=?",
            (approval_id,),
        ) as cur:
            r = await cur.fetchone()
        if r is None:
            return None
        return ApprovalRow(
            int(r[0]), r[1], int(r[2]), r[3], r[4], r[5], r[6], r[7], r[8], float(r[9]), r[10]
        )

    async def task_approval(self, task_id: int) -> ApprovalRow | None:
        rows = list(
            await self._db.conn.execute_fetchall(
                "SELECT id FROM approvals WHERE task_id=? ORDER BY id DESC LIMIT 1", (task_id,)
            )
        )
        return await self.get_approval(int(rows[0][0])) if rows else None

    async def decide_approval(self, approval_id: int, status: str) -> bool:
        cur = await self._db.write(
            "UPDATE approvals SET status=?, decided=? WHERE id=? AND status='pending'",
            (status, time.time(), approval_id),
        )
        return cur.rowcount == 1

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
        await self._db.write(
            "INSERT INTO commits(session, repo, sha, parent, task_id, summary, created,"
            " requester) VALUES (?,?,?,?,?,?,?,?)",
            (key_str(key), repo, sha, parent, task_id, summary, time.time(), requester),
        )

    async def last_commit(self, key: SessionKey) -> CommitRow | None:
        async with self._db.conn.execute(
            "SELECT id, session, repo, sha, parent, task_id, summary, requester FROM commits"
            " WHERE session=? AND undone_by IS NULL ORDER BY id DESC LIMIT 1",
            (key_str(key),),
        ) as cur:
            r = await cur.fetchone()
        if r is None:
            return None
        return CommitRow(int(r[0]), r[1], r[2], r[3], r[4], r[5], r[6], r[7])

    async def mark_undone(self, commit_id: int, by_sha: str) -> None:
        await self._db.write("UPDATE commits SET undone_by=? WHERE id=?", (by_sha, commit_id))

    # -- intents ---------------------------------------------------------------------
    async def open_intent(
        self, kind: str, key: SessionKey, repo: str, target: int, base: str, tree: str, message: str
    ) -> IntentRow:
        # The command that asked (a /undo) rides on the intent: settling it closes that
        # message's inbound row, so a replay never does it twice (store/once.py).
        in_channel, in_message = once.current() or ("", "")
        cur = await self._db.write(
            "INSERT INTO intents(kind, session, repo, target, base, tree, message, status,"
            " created, in_channel, in_message) VALUES (?,?,?,?,?,?,?, 'open', ?,?,?)",
            (
                kind,
                key_str(key),
                repo,
                target,
                base,
                tree,
                message,
                time.time(),
                in_channel,
                in_message,
            ),
        )
        return IntentRow(
            int(cur.lastrowid or 0), kind, key_str(key), repo, target, base, tree, message
        )

    async def open_intents(self) -> list[IntentRow]:
        rows = await self._db.conn.execute_fetchall(
            "SELECT id, kind, session, repo, target, base, tree, message, status"
            " FROM intents WHERE status='open' ORDER BY id"
        )
        return [
            IntentRow(int(r[0]), r[1], r[2], r[3], int(r[4]), r[5], r[6], r[7], r[8]) for r in rows
        ]

    async def void_intent(self, intent_id: int) -> None:
        await self._db.write(
            "UPDATE intents SET status='void' WHERE id=? AND status='open'", (intent_id,)
        )

    async def commit_done(self, intent_id: int, sha: str, summary: str) -> bool:
        now = time.time()
        async with self._db.transaction() as conn:
            rows = list(
                await conn.execute_fetchall(
                    "SELECT i.target, a.session, a.repo, a.base_sha, a.task_id,"
                    " coalesce(t.requester, 'owner') FROM intents i JOIN approvals a"
                    " ON a.id = i.target LEFT JOIN tasks t ON t.id = a.task_id"
                    " WHERE i.id=? AND i.status='open' AND i.kind='commit'",
                    (intent_id,),
                )
            )
            if not rows:
                return False
            approval, session, repo, base, task_id, requester = rows[0]
            decided = await conn.execute(
                "UPDATE approvals SET status='approved', decided=? WHERE id=? AND status='pending'",
                (now, approval),
            )
            if decided.rowcount != 1:
                await conn.execute("UPDATE intents SET status='void' WHERE id=?", (intent_id,))
                return False
            await conn.execute(
                "INSERT INTO commits(session, repo, sha, parent, task_id, summary, created,"
                " requester) VALUES (?,?,?,?,?,?,?,?)",
                (session, repo, sha, base, task_id, summary, now, requester),
            )
            await conn.execute("UPDATE tasks SET status='committed' WHERE id=?", (task_id,))
            await conn.execute(CLOSE_ASKER, (intent_id,))
            await conn.execute("UPDATE intents SET status='done' WHERE id=?", (intent_id,))
            return True

    async def undo_done(self, intent_id: int, sha: str) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE commits SET undone_by=? WHERE id=(SELECT target FROM intents"
                " WHERE id=? AND kind='undo' AND status='open')",
                (sha, intent_id),
            )
            await conn.execute(CLOSE_ASKER, (intent_id,))
            await conn.execute(
                "UPDATE intents SET status='done' WHERE id=? AND status='open'", (intent_id,)
            )

    async def unasked_done(self, intent_id: int, sha: str, summary: str) -> bool:
        async with self._db.transaction() as conn:
            rows = list(
                await conn.execute_fetchall(
                    "SELECT i.session, i.repo, i.base, i.target, coalesce(t.requester, 'owner')"
                    " FROM intents i LEFT JOIN tasks t ON t.id = i.target"
                    " WHERE i.id=? AND i.status='open' AND i.kind='unasked'",
                    (intent_id,),
                )
            )
            if not rows:
                return False
            session, repo, base, task_id, requester = rows[0]
            await conn.execute(
                "INSERT INTO commits(session, repo, sha, parent, task_id, summary, created,"
                " requester) VALUES (?,?,?,?,?,?,?,?)",
                (session, repo, sha, base, task_id, summary, time.time(), requester),
            )
            await conn.execute("UPDATE tasks SET status='committed' WHERE id=?", (task_id,))
            await conn.execute(CLOSE_ASKER, (intent_id,))
            await conn.execute("UPDATE intents SET status='done' WHERE id=?", (intent_id,))
            return True

    async def branch_done(
        self, intent_id: int, nonce: str, diff_hash: str, owner: str, ttl_seconds: float
    ) -> int:
        now = time.time()
        async with self._db.transaction() as conn:
            rows = list(
                await conn.execute_fetchall(
                    "SELECT session, repo, base, target, tree FROM intents"
                    " WHERE id=? AND status='open' AND kind='branch'",
                    (intent_id,),
                )
            )
            if not rows:
                return 0
            session, repo, base, task_id, tree = rows[0]
            await conn.execute(
                "UPDATE approvals SET status='superseded', decided=? WHERE session=? AND"
                " status='pending'",
                (now, session),
            )
            cur = await conn.execute(
                "INSERT INTO approvals(session, task_id, repo, nonce, diff_hash, base_sha,"
                " owner, status, created, expires_at, tree_sha)"
                " VALUES (?,?,?,?,?,?,?, 'pending', ?, ?, ?)",
                (
                    session,
                    task_id,
                    repo,
                    nonce,
                    diff_hash,
                    base,
                    owner,
                    now,
                    now + ttl_seconds,
                    tree,
                ),
            )
            await conn.execute("UPDATE tasks SET status='branched' WHERE id=?", (task_id,))
            await conn.execute("UPDATE intents SET status='done' WHERE id=?", (intent_id,))
            return int(cur.lastrowid or 0)
