"""``Permissions``: the application's one door to the model. Who sent a message (a
``Subject``), what the layers say for a chat and a repository (a ``Policy``), and the
decision for one action (resolver.py has the order), with the ask flow and the grants.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from core.errors import GitError
from core.events import Inbound, SessionKey
from orchestrator.permissions.asks import Asks
from orchestrator.permissions.committed import committed_layer, committed_values
from orchestrator.permissions.grants import SCOPES, GrantStore, Scope
from orchestrator.permissions.layers import (
    Layer,
    Resolved,
    chat_layer,
    global_layer,
    home_repo_layers,
    looks_like_group,
    resolve,
)
from orchestrator.permissions.model import OWNER, Decision, Effect, Subject
from orchestrator.permissions.overrides import ChatOverrides
from orchestrator.permissions.reach import OwnerReach
from orchestrator.permissions.resolver import Policy, Resolver

if TYPE_CHECKING:
    from orchestrator.config import Settings
    from orchestrator.messenger import Messenger
    from orchestrator.store import Store
    from orchestrator.workspace import Workspace

log = logging.getLogger(__name__)
OWNER_SUBJECT = Subject(OWNER, OWNER, ("*",))
NOBODY = "nobody"  # the profile of a sender the gate would not have let in


class Permissions:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        messenger: Messenger,
        workspace: Workspace,
        owner_chats: dict[str, str],
    ) -> None:
        self._settings = settings
        self._messenger = messenger
        self._workspace = workspace
        self._owner_chats = owner_chats  # channel -> the owner's direct chat on it
        self.grants = GrantStore(store.db)
        self.resolver = Resolver(settings.permissions.rules, self.grants)
        self.asks = Asks(settings.permissions.ask_ttl_seconds, store.db)
        self.reach = OwnerReach()  # sends to the owner that failed (/status says why)
        self._groups: set[SessionKey] = set()
        self._committed: dict[tuple[str, str], dict[str, Any]] = {}
        self.chat_overrides = ChatOverrides(settings.home_dir / "chats.yaml")
        self._ids: dict[str, Subject] = {}
        for name, member in settings.members.items():
            for sender in member.ids:
                self._ids[sender] = Subject(name, member.profile, member.repos)

    async def start(self) -> None:
        await self.grants.load()
        await self.asks.load()

    # -- who ----------------------------------------------------------------------------
    def subject_of(self, inbound: Inbound) -> Subject:
        """The sender's own authority, never the chat's (in a group too)."""
        if inbound.from_owner:
            return OWNER_SUBJECT
        sender = f"{inbound.channel}:{inbound.sender}"
        member = self._ids.get(sender)
        if member is not None:
            return member
        if sender in self._settings.allowlist:
            return Subject(sender, self._settings.permissions.allowlist_profile, ("*",))
        return Subject(sender, NOBODY)

    def subject_named(self, subject_id: str) -> Subject:
        """The subject a task or commit was recorded for."""
        if subject_id == OWNER:
            return OWNER_SUBJECT
        for subject in self._ids.values():
            if subject.id == subject_id:
                return subject
        if subject_id in self._settings.allowlist:
            return Subject(subject_id, self._settings.permissions.allowlist_profile, ("*",))
        return Subject(subject_id, NOBODY)

    def note(self, inbound: Inbound) -> None:
        """Remember which chats are groups (what is posted there, everyone in it sees)."""
        if inbound.is_group:
            self._groups.add(inbound.key)

    def is_group(self, key: SessionKey) -> bool:
        return key in self._groups or looks_like_group(key.chat)

    def owner_chat(self, channel: str) -> SessionKey | None:
        chat = self._owner_chats.get(channel)
        if chat is not None:
            return SessionKey(channel, chat)
        for name, chat in self._owner_chats.items():
            return SessionKey(name, chat)
        return None

    # -- the layers -----------------------------------------------------------------------
    def _layers(self, key: SessionKey | None, repo_layers: list[Layer]) -> list[Layer]:
        group = key is not None and self.is_group(key)
        chat = f"{key.channel}:{key.chat}" if key is not None else None
        return (
            global_layer(self._settings, group)
            + repo_layers
            + chat_layer(self._settings, chat)
            + (self.chat_overrides.layer(chat) if chat is not None else [])
        )

    async def repo_layers(self, repo: str) -> list[Layer]:
        layers = home_repo_layers(self._settings.home_dir, repo, self._settings.repos, "config")
        committed = await asyncio.to_thread(self._committed_layer, repo)
        if committed is not None:
            layers.append(committed)
        return layers

    def _committed_layer(self, repo: str) -> Layer | None:
        """``.fetch.yaml`` at HEAD (committed.py), cached per commit."""
        try:
            git = self._workspace.repo(repo)
            head = git.head()
        except (GitError, KeyError, ValueError):
            return None
        values = self._committed.get((repo, head))
        if values is None:
            values = committed_values(git, repo, head)
            self._committed[(repo, head)] = values
        return committed_layer(values, repo, head)

    def _policy(self, layers: list[Layer]) -> Policy:
        mode = resolve("permissions.mode", layers)
        deny = resolve("permissions.deny", layers)
        ttl = resolve("approvals.ttl_seconds", layers)
        autonomy = resolve("approvals.autonomy", layers)  # the committed cap binds (CAPPED)
        tests = resolve("test_command", layers)
        return Policy(
            str(mode.value),
            tuple(deny.value),
            mode.source,
            int(ttl.value),
            str(autonomy.value),
            str(tests.value),
        )

    def chat_policy(self, key: SessionKey | None) -> Policy:
        return self._policy(self._layers(key, []))

    async def policy(self, key: SessionKey | None, repo: str | None) -> Policy:
        repo_layers = await self.repo_layers(repo) if repo else []
        return self._policy(self._layers(key, repo_layers))

    async def explain_value(
        self, setting: str, key: SessionKey | None, repo: str | None
    ) -> Resolved:
        repo_layers = await self.repo_layers(repo) if repo else []
        return resolve(setting, self._layers(key, repo_layers))

    # -- decisions ------------------------------------------------------------------------
    def decide(
        self, subject: Subject, action: str, key: SessionKey | None, policy: Policy | None = None
    ) -> Decision:
        if subject.profile == NOBODY:
            return Decision(
                Effect.DENY, action, "gate", "not the owner, a member or on the allowlist"
            )
        return self.resolver.decide(
            subject, action, key, policy if policy is not None else self.chat_policy(key)
        )

    def may(
        self, subject: Subject, action: str, key: SessionKey | None, policy: Policy | None = None
    ) -> bool:
        """For listings (/help, /commands, the tool list): an action that would ask the
        owner is shown, one that is denied is not."""
        return self.decide(subject, action, key, policy).effect is not Effect.DENY

    def visible(
        self, subject: Subject, key: SessionKey | None, actions: Iterable[str]
    ) -> list[str]:
        # One chat policy for the whole listing: resolving the layers per action was
        # most of /help's time once there were thirty instincts.
        policy = self.chat_policy(key)
        return [a for a in actions if self.may(subject, a, key, policy)]

    async def check(
        self,
        subject: Subject,
        action: str,
        key: SessionKey,
        reply: Callable[[str], Awaitable[object]],
        *,
        policy: Policy | None = None,
        what: str | None = None,
    ) -> bool:
        """Allowed: True (a ``once`` grant is used up). Otherwise say why, ask the owner
        when a rule says ask, and return False."""
        decision = self.decide(subject, action, key, policy)
        shown = what or action
        if decision.allowed:
            used = self.resolver.once_grant(subject, action, key)
            if used is not None and decision.step in ("ask rule", "session grant"):
                await self.grants.revoke(used)
            return True
        if decision.effect is Effect.ASK:
            await self.ask_owner(subject, action, key, reply, shown)
            return False
        log.info("permission: %s %s", subject.id, decision.explain())
        await reply(f"🔒 You can't use {shown} here ({decision.why}).")
        return False

    async def ask_owner(
        self,
        subject: Subject,
        action: str,
        key: SessionKey,
        reply: Callable[[str], Awaitable[object]],
        shown: str,
    ) -> None:
        """Ask the owner for ``action``: a rule says ask, or (orchestrator/agent/confirm.py)
        the auto-approve table says this tool asks first although a rule allows it."""
        owner = self.owner_chat(key.channel)
        if owner is None:
            await reply(f"🔒 {shown} needs the owner's yes, and I cannot reach them.")
            return
        ask = await self.asks.open(subject.id, action, key)
        try:
            await self._messenger.send(
                owner,
                (
                    f"🔐 {subject.id} asks to use {shown} ({action}) in "
                    f"{key.channel}:{key.chat}.\n"
                    f"/grants yes {ask.nonce} once|session|always — or /grants no {ask.nonce}"
                ),
            )
        except Exception as err:  # the owner never saw it: no question is left open
            await self.asks.take(ask.nonce)
            line = self.reach.failed_to(f"{subject.id}'s question about {shown}", err)
            await reply(f"🔒 {shown} needs the owner's yes, and {line}. Nothing was asked.")
            return
        await reply(f"🔐 {shown} needs the owner's yes; I asked them. Try again once they answer.")

    # -- the owner's side (/grants) ------------------------------------------------------
    async def answer(self, nonce: str, yes: bool, scope: str) -> str:
        ask = self.asks.peek(nonce)
        if ask is None:
            return f"No open question {nonce!r} (it expired, or was answered)."
        expired = ask.expired(time.time())
        if not yes or expired:
            await self.asks.take(ask.nonce)  # answered once, whatever the answer
        if expired:
            return (
                f"No open question {nonce!r}: it expired unanswered "
                f"({_ago(ask.expires_at)} ago), so nothing was allowed. {ask.subject} "
                "can ask again."
            )
        if not yes:
            await self._messenger.send(ask.key, f"🔒 The owner said no to {ask.action}.")
            return f"Refused {ask.subject}: {ask.action}."
        chosen = _scope(scope, "once")
        grant = await self.grants.add(
            ask.subject, ask.action, chosen, ask.key, OWNER, answers=ask.nonce
        )
        self.asks.taken(ask.nonce)
        await self._messenger.send(
            ask.key, f"✅ The owner allowed {ask.action} ({chosen}). Send it again."
        )
        return f"✅ Granted {grant.describe()}. /grants revoke {grant.id} takes it back."

    async def grant(self, who: str, action: str, scope: str, key: SessionKey) -> str:
        chosen = _scope(scope, "persisted")
        grant = await self.grants.add(who, action, chosen, key, OWNER)
        return f"✅ Granted {grant.describe()}. /grants revoke {grant.id} takes it back."

    def listing(self) -> str:
        grants = self.grants.active()
        asks = self.asks.pending()
        lines = ["🔐 Grants:" if grants else "🔐 No grants."]
        lines += [f"  {g.describe()}" for g in grants]
        if asks:
            lines.append("Waiting for your answer:")
            lines += [f"  {a.nonce}: {a.subject} asks for {a.action}" for a in asks]
        if grants:
            lines.append("/grants revoke <id> takes one back.")
        return "\n".join(lines)

    async def revoke(self, grant_id: int) -> str:
        grant = await self.grants.revoke(grant_id)
        return f"Revoked {grant.describe()}." if grant else f"No active grant #{grant_id}."

    async def end_session(self, key: SessionKey) -> None:
        await self.grants.end_session(key)


def _ago(moment: float) -> str:
    seconds = max(0, int(time.time() - moment))
    if seconds < 120:
        return f"{seconds} s"
    return f"{seconds // 60} min" if seconds < 7200 else f"{seconds // 3600} h"


def _scope(word: str, default: Scope) -> Scope:
    if word in ("always", "persisted"):
        return "persisted"
    return next((s for s in SCOPES if s == word), default)
