"""Approvals: a diff is offered once, bound to its exact hash, answered by the owner.

An approval row holds the owner, a nonce, the sha256 of the exact change and an
expiry. ``yes`` commits only if the tree still hashes to what was shown; anything
else (expired, superseded, foreign, changed files) is refused with the reason.

Who may answer is the permission model's ``approve`` (orchestrator/permissions/): the
owner, and a member only when granted and only for their own task. Before a diff is
offered, every changed file is checked against the path rules (``path:<file>``, e.g.
``permissions.deny: [path:secrets/**]``): one refused file refuses the whole change. In a
group the diff goes to the owner's direct chat and the group gets a short note (what
is posted in a group, everyone in it sees).
"""

from __future__ import annotations

import asyncio
import logging
import re
import secrets
import time
from contextlib import suppress
from dataclasses import dataclass

from core.errors import ApprovalError, FetchError, GitError
from core.events import Inbound, SessionKey
from core.state import State
from core.tasks import Spawner
from core.validate import UnsafeName, safe_relative_path
from orchestrator.boundary.gitops import Change, Repo
from orchestrator.config import Settings
from orchestrator.messenger import Messenger
from orchestrator.permissions.model import OWNER, Effect
from orchestrator.permissions.resolver import Policy
from orchestrator.permissions.service import Permissions
from orchestrator.session import Session, Sessions
from orchestrator.store import Store
from orchestrator.store.db import key_str
from orchestrator.store.work import ApprovalRow
from orchestrator.task import autonomy, diffview, recovery
from orchestrator.task.crashpoint import crash_point
from orchestrator.task.testrun import SuiteResult
from orchestrator.workspace import Workspace

log = logging.getLogger(__name__)

YES = {
    "yes",
    "y",
    "yep",
    "yeah",
    "apply",
    "ok",
    "okay",
    "approve",
    "approved",
    "commit",
    "ship it",
    "lgtm",
    "👍",
    "✅",
}
NO = {"no", "n", "nope", "discard", "reject", "cancel", "drop", "withdraw", "👎", "❌"}
WITHDRAW = {"withdraw", "withdraw it", "take it back"}  # a member's own diff, from their chat
MORE = {"more", "next", "show more", "rest"}
MERGE = {"merge", "merge it", *YES}  # a task branch: one word merges it...
DROP = {"drop", "drop it", "delete", *NO}  # ...or drops it
KEEP = {"keep", "keep it", "later"}  # ...or leaves it for the owner to merge by hand
BRANCHED = "branched"  # the task status of a diff committed on its own branch
SHOW = re.compile(r"^(?:show|diff|view)\s+(?P<path>\S.*)$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Answer:
    kind: str  # yes | no | more | show | branch (merge, keep) | other
    path: str = ""


def parse_answer(text: str) -> Answer:
    t = text.strip().lower().rstrip(".!")
    if t in YES:
        return Answer("yes")
    if t in NO:
        return Answer("no")
    if t in MORE:
        return Answer("more")
    m = SHOW.match(text.strip())
    if m:
        return Answer("show", m.group("path").strip())
    return Answer("other")


class Approvals:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        messenger: Messenger,
        workspace: Workspace,
        permissions: Permissions,
        sessions: Sessions | None = None,
    ) -> None:
        self._sessions = sessions  # to hand a scheduled job's diff to the owner's chat
        self._settings = settings
        self._permissions = permissions
        self._store = store
        self._messenger = messenger
        self._workspace = workspace
        self._pages: dict[int, int] = {}  # approval id -> lines already shown by "more"
        # Members' diffs kept for the owner's chat while it was busy: owner chat ->
        # (approval id, the run's words), offered in order when it comes to rest; after a
        # restart rebuilt from the members' sessions (waiting.restore_kept_diffs).
        self._waiting: dict[SessionKey, list[tuple[int, str]]] = {}

    async def policy(self, key: SessionKey, repo: str) -> Policy:
        """The layered settings for ``repo`` in this chat (autonomy, test command...)."""
        return await self._permissions.policy(key, repo)

    async def propose(
        self,
        session: Session,
        task_id: int,
        repo: str,
        change: Change,
        said: str = "",
        tests: SuiteResult | None = None,
    ) -> int:
        """Store the approval, show the diff, move to GUARDING; or, as the chat's autonomy
        allows, commit unasked or on a task branch. Caller holds the lock."""
        policy = await self._permissions.policy(session.key, repo)
        refused = await self._refused_path(session, task_id, change, policy)
        if refused is not None:
            await self._refuse(session, task_id, repo, refused)
            return 0
        task = await self._store.work.get_task(task_id)
        owner_task = self._permissions.subject_named(task.requester if task else "owner").is_owner
        git = self._workspace.repo(repo)
        deleted = await asyncio.to_thread(autonomy.deleted_paths, git, change)
        risky = autonomy.risks(change, self._settings.approvals.risky_files, deleted)
        route = autonomy.route(policy.autonomy, tests, risky, owner_task)
        notes = [tests.line()] if tests is not None else []
        if route.how == "commit":
            if await self._commit_unasked(session, task_id, repo, change, route, notes, said):
                return 0
            route = autonomy.Route("ask", "semi, but the commit failed")
        if route.how == "branch":
            return await self._branch(session, task_id, repo, change, route, notes, said)
        if risky:
            notes.append("⚠️ Risky: " + "; ".join(risky) + ".")
        if route.why != "supervised":
            notes.append(f"autonomy: {route.why}, so I ask.")
        if notes:
            said = (said.strip() + "\n" if said.strip() else "") + "\n".join(notes)
        return await self._ask(session, task_id, repo, change, said, policy)

    async def _ask(
        self, session: Session, task_id: int, repo: str, change: Change, said: str, policy: Policy
    ) -> int:
        home = await self._home_of(session)
        if home is not None:
            async with home.lock:
                if await self._hand_over(session, home, task_id, repo):
                    return await self._ask(home, task_id, repo, change, said, policy)
        task = await self._store.work.get_task(task_id)
        requester = task.requester if task is not None else OWNER
        owners = await self._owners_chat_for(session, requester)
        if owners is not None:
            async with owners.lock:
                if owners.state is State.ALERT:
                    return await self._offer_to_owner(
                        session, owners, task_id, repo, change, said, policy, requester
                    )
            # The owner's chat is busy: the diff waits for it to come to rest (``rested``),
            # and the member's chat is free meanwhile.
            return await self._queue_for_owner(
                session, owners.key, task_id, repo, change, said, policy
            )
        nonce = secrets.token_hex(8)
        approval_id = await self._store.work.create_approval(
            session.key,
            task_id,
            repo,
            nonce,
            change.digest,
            change.base_sha,
            self._settings.owner,
            policy.ttl_seconds,  # layered: repo, chat
            tree_sha=change.tree_sha,
        )
        session.data.approval_id = approval_id
        session.data.repo = repo
        await session.settle(session.propose)
        text = diffview.summary(change, repo)
        if said:
            text = said.strip() + "\n\n" + text
        owner = self._permissions.owner_chat(session.key.channel)
        asked = "" if requester == OWNER else f", {requester} asked"
        try:
            if self._permissions.is_group(session.key) and owner is not None:
                await self._messenger.send(
                    owner,
                    f"📬 From the group {session.key.chat}{asked} (answer there: yes or "
                    f"no):\n\n{text}",
                )
                text = (
                    f"📬 Task #{task_id} is ready for review: the diff went to the owner's "
                    "direct chat. Apply? The owner answers here: yes or no."
                )
            sent = await self._messenger.send(session.key, text, approval_nonce=nonce)
        except Exception as err:  # nobody saw the diff: nothing may wait for an answer
            await self._undelivered(session, approval_id, task_id, repo, err)
            return 0
        session.data.approval_message_id = sent.message_id
        await session.persist()
        self._pages[approval_id] = diffview.FIRST_HUNK_LINES
        return approval_id

    async def _home_of(self, session: Session) -> Session | None:
        """The owner's session a scheduled job's run reports to (its replies are routed
        there), or None for an ordinary chat."""
        target = self._messenger.routed_to(session.key)
        if target is None or self._sessions is None or target == session.key:
            return None
        return await self._sessions.get(target)

    async def _owners_chat_for(self, session: Session, requester: str) -> Session | None:
        """The owner's direct chat, when a member's own task ends in a chat of their own
        (not a group the owner is in): the diff is the owner's to answer, there."""
        if requester == OWNER or self._sessions is None:
            return None
        if self._permissions.is_group(session.key):
            return None  # the owner answers in the group; the diff went to their chat too
        subject = self._permissions.subject_named(requester)
        if self._permissions.decide(subject, "approve", session.key).allowed:
            return None  # the owner granted them their own diffs: answered where asked
        owner = self._permissions.owner_chat(session.key.channel)
        if owner is None or owner == session.key:
            return None
        return await self._sessions.get(owner)

    async def _offer_to_owner(
        self,
        member: Session,
        owners: Session,
        task_id: int,
        repo: str,
        change: Change,
        said: str,
        policy: Policy,
        requester: str,
    ) -> int:
        """A member's diff waits in the owner's chat (who asked, and where, on the card);
        the member's chat is free again at once, and "withdraw" there takes it back.
        Caller holds both locks; the owner's chat is at rest."""
        member.data.task_id = None
        member.data.task_prompt = None
        await member.settle(member.finish)
        owners.data.task_id, owners.data.repo = task_id, repo
        await owners.start_task()
        where = f"{member.key.channel}:{member.key.chat}"
        head = (
            f"📬 {requester} asked for this (task #{task_id}, in {where}); only you can apply it."
        )
        approval_id = await self._ask(
            owners,
            task_id,
            repo,
            change,
            head + ("\n" + said.strip() if said.strip() else ""),
            policy,
        )
        if approval_id:
            member.data.offered_approval = approval_id
            await member.persist()
            await self._tell(
                member.key,
                f"📬 Task #{task_id} is ready: the diff went to the owner to approve. I'll "
                "tell you what they say; say withdraw to take it back.",
            )
        return approval_id

    async def _queue_for_owner(
        self,
        member: Session,
        owner: SessionKey,
        task_id: int,
        repo: str,
        change: Change,
        said: str,
        policy: Policy,
    ) -> int:
        """The owner's chat is busy: the approval is kept (bound to the member's chat,
        never GUARDING there) and offered once the owner's chat is at rest. Caller holds
        the member's lock."""
        approval_id = await self._store.work.create_approval(
            member.key,
            task_id,
            repo,
            secrets.token_hex(8),
            change.digest,
            change.base_sha,
            self._settings.owner,
            policy.ttl_seconds,
            tree_sha=change.tree_sha,
        )
        self._waiting.setdefault(owner, []).append((approval_id, said))
        member.data.task_id = None
        member.data.task_prompt = None
        member.data.offered_approval = approval_id
        member.data.offered_said = said[:4000]
        await member.settle(member.finish)
        await self._tell(
            member.key,
            f"📬 Task #{task_id} is ready. The owner's chat is busy, so the diff goes to them "
            "as soon as it is free; say withdraw to take it back.",
        )
        return approval_id

    def keep_again(self, owner: SessionKey, approval_id: int, said: str = "") -> None:
        """After a restart: a member's diff that was kept for the owner's busy chat is
        kept again, with the words the run said with it (kept in the member's session)."""
        queue = self._waiting.setdefault(owner, [])
        if all(kept != approval_id for kept, _said in queue):
            queue.append((approval_id, said))

    def rested(self, key: SessionKey, spawner: Spawner) -> None:
        """A chat came to rest (``Sessions.on_idle``): a member's diff that waited for the
        owner's chat is offered there now, as an owned task."""
        if self._waiting.get(key):
            try:
                spawner.spawn(self._offer_waiting(key), name=f"offer:{key.slug}")
            except RuntimeError:  # stopping: the kept diff stays withdrawable, expires
                log.info("not offering the diffs kept for %s: stopping", key)

    async def _offer_waiting(self, key: SessionKey) -> None:
        if self._sessions is None:
            return
        owners = await self._sessions.get(key)
        async with owners.lock:
            queue = self._waiting.get(key, [])
            while queue and owners.state is State.ALERT:
                approval_id, said = queue.pop(0)
                await self._offer_kept(owners, approval_id, said)
            if not queue:
                self._waiting.pop(key, None)

    async def _offer_kept(self, owners: Session, approval_id: int, said: str) -> None:
        """A kept approval moves to the owner's chat (a new one there, the kept one
        closed), unless it was withdrawn or expired meanwhile. Caller holds the lock."""
        row = await self._store.work.get_approval(approval_id)
        task = await self._store.work.get_task(row.task_id) if row is not None else None
        if row is None or task is None or row.status != "pending":
            return
        member_key = _key_of(row.session)
        if time.time() > row.expires_at:
            await self._store.work.decide_approval(row.id, "expired")
            await self._store.work.set_task_status(row.task_id, "expired")
            await self._tell(member_key, f"⌛ Task #{row.task_id}'s diff expired unanswered.")
            return
        if not await self._store.work.decide_approval(row.id, "handed"):
            return
        change = await asyncio.to_thread(change_of, self._workspace.repo(row.repo), row)
        policy = await self._permissions.policy(owners.key, row.repo)
        owners.data.task_id, owners.data.repo = row.task_id, row.repo
        await owners.start_task()
        where = f"{member_key.channel}:{member_key.chat}"
        head = (
            f"📬 {task.requester} asked for this (task #{row.task_id}, in {where}); "
            "only you apply it."
        )
        offered = await self._ask(
            owners,
            row.task_id,
            row.repo,
            change,
            head + ("\n" + said.strip() if said.strip() else ""),
            policy,
        )
        if offered and self._sessions is not None:
            member = await self._sessions.get(member_key)
            if member.data.offered_approval == row.id:
                member.data.offered_approval = offered
                await member.persist()
            await self._tell(
                member_key,
                f"📬 Task #{row.task_id}'s diff went to the owner; say withdraw to take it back.",
            )

    async def withdraw(self, member: Session, subject_id: str) -> str | None:
        """The member's own diff, waiting in the owner's chat, taken back. None when
        nothing of theirs waits there (the words are then an ordinary message)."""
        approval_id = member.data.offered_approval
        if approval_id is None or self._sessions is None:
            return None
        row = await self._store.work.get_approval(approval_id)
        task = await self._store.work.get_task(row.task_id) if row else None
        if row is None or task is None or task.requester != subject_id:
            return None
        member.data.offered_approval, member.data.offered_said = None, ""
        await member.persist()
        if row.status != "pending":
            return f"Task #{row.task_id} was already {row.status}; nothing to withdraw."
        if row.session == key_str(member.key):  # kept until the owner's chat is free
            await self._store.work.decide_approval(row.id, "withdrawn")
            await self._store.work.set_task_status(row.task_id, "withdrawn")
            return f"↩️ Withdrawn: task #{row.task_id}'s diff will not go to the owner."
        owners = await self._sessions.get(_key_of(row.session))
        async with owners.lock:
            if not await self._store.work.decide_approval(row.id, "withdrawn"):
                return f"Task #{row.task_id} was answered meanwhile; nothing to withdraw."
            await self._store.work.set_task_status(row.task_id, "withdrawn")
            if owners.data.approval_id == row.id:
                await self._close(owners)
        await self._tell(
            owners.key, f"↩️ {subject_id} withdrew task #{row.task_id}; {row.repo} is unchanged."
        )
        return f"↩️ Withdrawn: task #{row.task_id}'s diff no longer waits for the owner."

    async def _undelivered(
        self, session: Session, approval_id: int, task_id: int, repo: str, err: Exception
    ) -> None:
        """The diff reached nobody: the approval is void, the chat is free again, whoever
        asked is told why (if they can be), and /status keeps it."""
        await self._store.work.decide_approval(approval_id, "undelivered")
        await self._store.work.set_task_status(task_id, "undelivered")
        await self._close(session)
        line = self._permissions.reach.failed_to(f"task #{task_id}'s diff", err)
        text = f"⚠️ {line}. I dropped the change; {repo} is unchanged. Try again later."
        task = await self._store.work.get_task(task_id)
        origin = _key_of(task.session) if task is not None else session.key
        for key in dict.fromkeys((origin, session.key)):
            await self._tell(key, text)

    async def _tell(self, key: SessionKey, text: str) -> None:
        """A notice that may fail (the chat it goes to may be the one that is down)."""
        try:
            await self._messenger.send(key, text)
        except Exception as err:
            log.warning("could not tell %s: %s", key, err)

    async def _tell_requester(self, row: ApprovalRow, text: str) -> None:
        """A member whose diff the owner answered in another chat hears the outcome."""
        task = await self._store.work.get_task(row.task_id)
        if task is None or task.requester == OWNER or task.session == row.session:
            return
        await self._tell(_key_of(task.session), text)
        if self._sessions is not None:
            member = await self._sessions.get(_key_of(task.session))
            if member.data.offered_approval == row.id:
                member.data.offered_approval, member.data.offered_said = None, ""
                await member.persist()

    async def _hand_over(self, run: Session, home: Session, task_id: int, repo: str) -> bool:
        """A scheduled job's diff is answered in the owner's chat: the run's session ends
        and the owner's takes the task (ALERT -> WORKING; the caller proposes there). False
        when that chat is busy: the diff stays in the run's session, and the card says so.
        Caller holds both locks."""
        if home.state is not State.ALERT:
            await self._messenger.send(
                run.key,
                f"📬 Your chat is busy ({home.state}), so this diff waits in the "
                f"job's own session ({run.key.chat}) and expires there unanswered.",
            )
            return False
        run.data.task_id = None
        run.data.task_prompt = None
        await run.settle(run.finish)
        home.data.task_id, home.data.repo = task_id, repo
        await home.start_task()
        return True

    async def _refused_path(
        self, session: Session, task_id: int, change: Change, policy: Policy
    ) -> str | None:
        """The first changed file the path rules refuse to whoever the task is for."""
        task = await self._store.work.get_task(task_id)
        subject = self._permissions.subject_named(task.requester if task else "owner")
        for entry in change.files:
            decision = self._permissions.decide(subject, f"path:{entry.path}", session.key, policy)
            if decision.effect is not Effect.ALLOW:
                return f"{entry.path} ({decision.why})"
        return None

    async def _refuse(self, session: Session, task_id: int, repo: str, why: str) -> None:
        await self._store.work.set_task_status(task_id, "refused")
        session.data.task_id = None
        session.data.task_prompt = None
        await session.settle(session.finish)
        await self._messenger.send(
            session.key,
            f"🔒 Refused: the change touches {why}. I discarded it; {repo} is unchanged.",
        )

    async def pending(self, session: Session) -> ApprovalRow | None:
        if session.data.approval_id is None:
            return None
        return await self._store.work.get_approval(session.data.approval_id)

    async def _may_answer(
        self, row: ApprovalRow, session: Session, inbound: Inbound, kind: str = "yes"
    ) -> bool:
        """The owner; or someone granted ``approve``, for their own task only. Whoever
        asked for the task may always say no to it: withdrawing applies nothing."""
        subject = self._permissions.subject_of(inbound)
        if subject.is_owner:
            return True
        if kind == "no":
            task = await self._store.work.get_task(row.task_id)
            if task is not None and task.requester == subject.id:
                return True
        decision = self._permissions.decide(subject, "approve", session.key)
        if decision.effect is Effect.ASK:
            await self._permissions.check(
                subject,
                "approve",
                session.key,
                lambda text: self._messenger.send(session.key, text),
                what="approving this diff",
            )
            return False
        if not decision.allowed:
            return False
        task = await self._store.work.get_task(row.task_id)
        return task is not None and task.requester == subject.id

    async def _check(
        self, row: ApprovalRow | None, session: Session, inbound: Inbound, kind: str = "yes"
    ) -> ApprovalRow:
        if row is None:
            raise ApprovalError("there is no change waiting for approval")
        if row.status != "pending":
            raise ApprovalError(f"that approval was already {row.status}")
        if row.session != f"{session.key.channel}:{session.key.chat}":
            raise ApprovalError("that approval belongs to another conversation")
        if not await self._may_answer(row, session, inbound, kind):
            raise ApprovalError("only the owner can approve changes")
        if (
            inbound.reply_to
            and session.data.approval_message_id
            and (inbound.reply_to != session.data.approval_message_id)
        ):
            raise ApprovalError("that answers an older diff, not the one waiting")
        if inbound.reaction and not inbound.reply_to:
            raise ApprovalError("a reaction counts only on the diff message itself")
        if inbound.approval_nonce is not None and inbound.approval_nonce != row.nonce:
            raise ApprovalError("that button belongs to another diff")
        return row

    async def answer(self, session: Session, inbound: Inbound, text: str) -> None:
        """Handle a message while GUARDING. Caller holds the session lock."""
        key = session.key
        answer = parse_answer(inbound.reaction or text)
        word = (inbound.reaction or text).strip().lower().rstrip(".!")
        if answer.kind == "other" and word in MERGE | KEEP:
            answer = Answer("branch")
        if answer.kind == "other":
            await self._messenger.send(
                key,
                "⏸ A diff is waiting for you. Answer yes or no (or more, show <file>)."
                "\nOther messages wait until then; /status and /stop still work.",
            )
            return
        row = await self.pending(session)
        try:
            row = await self._check(row, session, inbound, answer.kind)
        except ApprovalError as err:
            await self._messenger.send(key, f"⚠️ Refused: {err}.")
            if row is None or row.status != "pending":
                await self._close(session)
            return
        repo = self._workspace.repo(row.repo)
        task = await self._store.work.get_task(row.task_id)
        if task is not None and task.status == BRANCHED:
            await self._answer_branch(session, row, word)
            return
        if answer.kind == "branch":  # merge/keep, but this diff is not on a branch
            await self._messenger.send(key, "⏸ This diff waits for yes or no.")
            return
        if time.time() > row.expires_at:
            # Nothing to clean: the change lives in git objects, never in the tree.
            await self._store.work.decide_approval(row.id, "expired")
            await self._store.work.set_task_status(row.task_id, "expired")
            await self._close(session)
            await self._messenger.send(
                key,
                f"⌛ That approval expired, so I discarded the change. {row.repo} is "
                "unchanged; ask again to redo it.",
            )
            return
        if answer.kind == "more":
            change = await asyncio.to_thread(change_of, repo, row)
            text_page, offset = diffview.page(change, self._pages.get(row.id, 0))
            self._pages[row.id] = offset
            await self._messenger.send(key, text_page)
        elif answer.kind == "show":
            try:
                path = safe_relative_path(answer.path)
            except UnsafeName as err:
                await self._messenger.send(key, f"⚠️ {err}.")
                return
            answer = Answer("show", path)
            change = await asyncio.to_thread(change_of, repo, row)
            patch = await asyncio.to_thread(repo.file_patch, change, answer.path)
            await self._messenger.send(key, diffview.file_view(patch, answer.path))
        elif answer.kind == "yes":
            await self._approve(session, row)
        else:
            await self._reject(session, row)

    async def _approve(self, session: Session, row: ApprovalRow) -> None:
        key = session.key
        repo = self._workspace.repo(row.repo)
        change = await asyncio.to_thread(change_of, repo, row)
        if change.digest != row.diff_hash or change.base_sha != row.base_sha:
            await self._messenger.send(
                key,
                "⚠️ Refused: the files changed since I showed the diff, so that yes "
                "does not cover them. Here is the diff as it is now:",
            )
            await self.propose(session, row.task_id, row.repo, change)
            return
        task = await self._store.work.get_task(row.task_id)
        prompt = task.prompt if task else "change"
        message = _commit_message(prompt, row, self._settings.owner)
        # Journalled: a kill between the ref move and the record is settled from git at
        # the next start (orchestrator/task/recovery.py), so the commit is never lost.
        intent = await self._store.work.open_intent(
            "commit", key, row.repo, row.id, change.base_sha, change.tree_sha, message
        )
        crash_point("commit:intent")
        try:
            sha = await asyncio.to_thread(repo.commit, change, message)
        except GitError as err:
            moved = await asyncio.to_thread(recovery.settled_after_error, repo, intent)
            if moved is None:
                await self._store.work.void_intent(intent.id)
                await self._messenger.send(key, f"❌ Not committed: {err}. Say yes to retry or no.")
                return
            sha = moved  # the ref moved before git failed: committed all the same
        crash_point("commit:ref")
        if not await self._store.work.commit_done(intent.id, sha, message.splitlines()[0]):
            return  # a concurrent answer won; it has replied
        crash_point("commit:recorded")
        await self._tick(session, "done")
        await self._messenger.answered(session.key, row.nonce, "yes")
        await self._close(session)
        files = "\n".join(f"• {f.path} +{f.added} −{f.removed}" for f in change.files[:6])
        more = f"\n• …and {len(change.files) - 6} more" if len(change.files) > 6 else ""
        checks = await self._store.work.task_checks(row.task_id)
        tests = (
            ("tests run:\n" + "\n".join(f"• {c}" for c in checks[:4]))
            if checks
            else "tests run: none reported by the harness"
        )
        await self._messenger.send(
            key,
            f"✅ Committed {sha[:7]} to {row.repo}\n{message.splitlines()[0]}\n\n"
            f"files:\n{files}{more}\n{tests}\n\nSay undo to revert.",
        )
        await self._tell_requester(
            row, f"✅ The owner applied your task #{row.task_id}: {sha[:7]} in {row.repo}."
        )

    async def _reject(self, session: Session, row: ApprovalRow) -> None:
        # "no" drops the change: it was only ever git objects and the run's layer (gone
        # already). The owner's tree was never touched.
        await self._store.work.decide_approval(row.id, "rejected")
        await self._store.work.set_task_status(row.task_id, "rejected")
        await self._tick(session, "rejected")
        await self._messenger.answered(session.key, row.nonce, "no")
        await self._close(session)
        await self._messenger.send(
            session.key,
            f"🗑 Discarded. {row.repo} is back at {row.base_sha[:7]}, exactly as before.",
        )
        await self._tell_requester(
            row, f"🗑 The owner said no to your task #{row.task_id}; {row.repo} is unchanged."
        )

    async def _tick(self, session: Session, stage: str) -> None:
        """The task's checklist past "your review": ✅ after a yes, ❌ after a no."""
        marks, session.data.checklist = session.data.checklist, {}
        if marks.get("id") and marks.get(stage):
            with suppress(FetchError):
                await self._messenger.send(session.key, marks[stage], edit_of=marks["id"])

    async def _close(self, session: Session) -> None:
        session.data.approval_id = None
        session.data.approval_message_id = None
        await session.settle(session.decide)

    # -- autonomy: commits nobody was asked for, and task branches ----------------------
    async def _commit_unasked(
        self,
        session: Session,
        task_id: int,
        repo: str,
        change: Change,
        route: autonomy.Route,
        notes: list[str],
        said: str,
    ) -> bool:
        """``semi`` with passing tests and no risky path: commit now. False (nothing
        committed) when git refuses; the caller asks instead."""
        task = await self._store.work.get_task(task_id)
        prompt = task.prompt if task else "change"
        message = (
            f"fetch: {_subject(prompt)}\n\nTask #{task_id}: {prompt.strip()}\n\n"
            f"Fetch-Task: {task_id}\nCommitted-by: Fetch, unasked ({route.why}; "
            f"{'; '.join(n.removeprefix('🧪 ') for n in notes)})"
        )
        git = self._workspace.repo(repo)
        # A scheduled job's commit is undone from the owner's chat, where it was reported.
        undo_from = self._messenger.routed_to(session.key) or session.key
        # Journalled like a yes (orchestrator/task/recovery.py): a kill after HEAD moved is
        # recorded from git at the next start, so /undo still reaches the commit.
        intent = await self._store.work.open_intent(
            "unasked", undo_from, repo, task_id, change.base_sha, change.tree_sha, message
        )
        crash_point("unasked:intent")
        try:
            sha = await asyncio.to_thread(git.commit, change, message)
        except GitError:
            moved = await asyncio.to_thread(recovery.settled_after_error, git, intent)
            if moved is None:
                await self._store.work.void_intent(intent.id)
                return False
            sha = moved
        crash_point("unasked:ref")
        # One transaction: the commit recorded for /undo, the task committed.
        await self._store.work.unasked_done(intent.id, sha, message.splitlines()[0])
        crash_point("unasked:recorded")
        session.data.task_id = None
        session.data.task_prompt = None
        await session.settle(session.finish)
        head = f"{said.strip()}\n\n" if said.strip() else ""
        await self._messenger.send(
            session.key,
            f"{head}✅ Committed {sha[:7]} to {repo} without asking\n"
            f"({route.why}).\n{message.splitlines()[0]}\n\n"
            f"files:\n{_files(change)}\n" + "\n".join(notes) + "\n\nSay undo to revert.",
        )
        return True

    async def _branch(
        self,
        session: Session,
        task_id: int,
        repo: str,
        change: Change,
        route: autonomy.Route,
        notes: list[str],
        said: str,
    ) -> int:
        """Commit on ``fetch/task-<id>``, leave the owner's branch where it is, and wait
        for one word: merge, drop (or keep)."""
        home = await self._home_of(session)
        if home is not None:
            async with home.lock:
                if await self._hand_over(session, home, task_id, repo):
                    return await self._branch(home, task_id, repo, change, route, notes, said)
        task = await self._store.work.get_task(task_id)
        prompt = task.prompt if task else "change"
        git = self._workspace.repo(repo)
        message = autonomy.branch_message(
            f"fetch: {_subject(prompt)}\n\nTask #{task_id}: {prompt.strip()}\n\n"
            f"Fetch-Task: {task_id}\nCommitted-by: Fetch on a task branch ({route.why})",
            change,
        )
        # Journalled (orchestrator/task/recovery.py): a kill after the task branch exists is
        # recorded from git at the next start, so the merge question is never lost.
        intent = await self._store.work.open_intent(
            "branch", session.key, repo, task_id, change.base_sha, change.tree_sha, message
        )
        crash_point("branch:intent")
        try:
            sha = await asyncio.to_thread(autonomy.commit_to_branch, git, change, task_id, message)
        except GitError:
            moved = await asyncio.to_thread(recovery.settled_after_error, git, intent)
            if moved is None:
                await self._store.work.void_intent(intent.id)
                raise
            sha = moved
        crash_point("branch:ref")
        branch = autonomy.branch_name(task_id)
        mainline = await asyncio.to_thread(git.branch)
        policy = await self._permissions.policy(session.key, repo)
        # One transaction: the merge question (a pending approval), the task branched.
        approval_id = await self._store.work.branch_done(
            intent.id, secrets.token_hex(8), change.digest, self._settings.owner, policy.ttl_seconds
        )
        crash_point("branch:recorded")
        session.data.approval_id = approval_id
        session.data.repo = repo
        await session.settle(session.propose)
        row = await self._store.work.get_approval(approval_id)
        card = diffview.summary(change, repo).rsplit("\n\n", 1)[0]
        head = f"{said.strip()}\n\n" if said.strip() else ""
        text = (
            f"{head}🌿 Committed {sha[:7]} on the branch {branch}\n({route.why}); "
            f"{mainline} is unchanged.\n" + "\n".join(notes) + f"\n\n{card}\n\n"
            f"Merge into {mainline}? merge · drop · keep (leave the branch)"
        )
        sent = await self._messenger.send(
            session.key, text, approval_nonce=row.nonce if row else None
        )
        session.data.approval_message_id = sent.message_id
        await session.persist()
        return approval_id

    async def _answer_branch(self, session: Session, row: ApprovalRow, word: str) -> None:
        key = session.key
        git = self._workspace.repo(row.repo)
        branch = autonomy.branch_name(row.task_id)
        if word in KEEP or time.time() > row.expires_at:
            await self._store.work.decide_approval(
                row.id, "expired" if word not in KEEP else "kept"
            )
            await self._store.work.set_task_status(row.task_id, "kept")
            await self._close(session)
            await self._messenger.send(
                key, f"🌿 {branch} stays as it is; merge it by hand when you want it."
            )
            return
        if word in DROP:
            try:
                await asyncio.to_thread(autonomy.drop_branch, git, row.task_id)
            except GitError as err:
                await self._messenger.send(key, f"❌ Could not drop {branch}: {err}.")
                return
            await self._store.work.decide_approval(row.id, "rejected")
            await self._store.work.set_task_status(row.task_id, "rejected")
            await self._close(session)
            await self._messenger.send(
                key, f"🗑 Dropped {branch}. {row.repo} is unchanged at {row.base_sha[:7]}."
            )
            return
        if word not in MERGE:
            await self._messenger.send(key, f"⏸ {branch} waits for one word: merge, drop or keep.")
            return
        try:
            merge = await asyncio.to_thread(
                autonomy.prepare_merge, git, row.task_id, row.diff_hash, row.base_sha
            )
        except GitError as err:
            await self._messenger.send(key, f"❌ Not merged: {err}. Say drop or keep.")
            return
        # Journalled like a yes (orchestrator/task/recovery.py): a kill after the ref moved
        # is settled from git at the next start, so the merge is never lost.
        intent = await self._store.work.open_intent(
            "commit", key, row.repo, row.id, row.base_sha, merge.tree, merge.message
        )
        try:
            sha = await asyncio.to_thread(
                autonomy.finish_merge, git, row.task_id, merge, row.base_sha
            )
        except GitError as err:
            moved = await asyncio.to_thread(recovery.settled_after_error, git, intent)
            if moved is None:
                await self._store.work.void_intent(intent.id)
                await self._messenger.send(key, f"❌ Not merged: {err}. Say drop or keep.")
                return
            sha = moved
        subject = merge.message.strip().splitlines()[0]
        # One transaction: approval approved, commit recorded for /undo, task committed.
        if not await self._store.work.commit_done(intent.id, sha, subject):
            return
        await self._close(session)
        checks = await self._store.work.task_checks(row.task_id)
        tests = "\n".join(checks[:4])
        await self._messenger.send(
            key,
            f"✅ Merged {branch} into {row.repo}: {sha[:7]}\n{subject}"
            + (f"\n{tests}" if tests else "")
            + "\n\nSay undo to revert.",
        )


def change_of(repo: Repo, row: ApprovalRow) -> Change:
    """The change an approval is about, from git objects (a row from before layers: the
    working tree, as then)."""
    if row.tree_sha:
        return repo.change_between(row.base_sha, row.tree_sha)
    return repo.change()


def _subject(prompt: str) -> str:
    subject = " ".join(prompt.split())
    return subject if len(subject) <= 60 else subject[:59] + "…"


def _files(change: Change) -> str:
    files = "\n".join(f"• {f.path} +{f.added} −{f.removed}" for f in change.files[:6])
    more = f"\n• …and {len(change.files) - 6} more" if len(change.files) > 6 else ""
    return files + more


def _commit_message(prompt: str, row: ApprovalRow, owner: str) -> str:
    subject = " ".join(prompt.split())
    if len(subject) > 60:
        subject = subject[:59] + "…"
    return (
        f"fetch: {subject}\n\nTask #{row.task_id}: {prompt.strip()}\n\n"
        f"Fetch-Task: {row.task_id}\n"
        f"Approved-by: {owner} (approval {row.id}, diff {row.diff_hash[:12]})"
    )


def _key_of(session: str) -> SessionKey:
    """A table's ``channel:chat`` back to its key."""
    channel, _, chat = session.partition(":")
    return SessionKey(channel, chat)
