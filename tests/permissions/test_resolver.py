"""The one resolution order, step by step: deny rules > mode > ask rules (answered by a
grant) > allow rules > session grants > persisted grants > profile defaults; and every
decision says which step decided."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from core.events import SessionKey
from orchestrator.permissions.grants import GrantStore
from orchestrator.permissions.model import Effect, Subject
from orchestrator.permissions.resolver import ORDER, Policy, Resolver
from orchestrator.permissions.settings import RuleSettings
from orchestrator.store import Store

ALICE = Subject("alice", "collaborator", ("demo",))
OWNER = Subject("owner", "owner", ("*",))
CHAT = SessionKey("whatsapp", "4915100000001")
OTHER_CHAT = SessionKey("whatsapp", "4915100000009")
NORMAL = Policy()


@pytest.fixture
async def grants(tmp_path: Path) -> AsyncIterator[GrantStore]:
    async with Store(tmp_path / "fetch.db") as store:
        store_grants = GrantStore(store.db)
        await store_grants.load()
        yield store_grants


def rules(*entries: tuple[str, str, str]) -> list[RuleSettings]:
    return [RuleSettings(effect=e, what=w, who=who) for e, w, who in entries]


async def test_each_step_in_order(grants: GrantStore) -> None:
    resolver = Resolver(
        rules(
            ("deny", "tool:memory_write", "alice"),
            ("ask", "tool:memory_*", "*"),
            ("allow", "tool:memory_*", "profile:collaborator"),
            ("allow", "instinct:cron", "alice"),
        ),
        grants,
    )

    def step(subject: Subject, action: str, policy: Policy = NORMAL) -> tuple[Effect, str]:
        decision = resolver.decide(subject, action, CHAT, policy)
        assert decision.step in ORDER and decision.explain().startswith(action)
        return decision.effect, decision.step

    # 1. deny beats the ask and the allow that also match.
    assert step(ALICE, "tool:memory_write") == (Effect.DENY, "deny rule")
    assert step(OWNER, "path:secrets/a/b", Policy(deny=("path:secrets/**",))) == (
        Effect.DENY,
        "deny rule",
    )  # the owner too
    # 2. mode: view-only allows only what a viewer may, to everyone.
    assert step(OWNER, "instinct:undo", Policy(mode="view")) == (Effect.DENY, "mode")
    assert step(OWNER, "instinct:status", Policy(mode="view")) == (Effect.ALLOW, "default")
    # 3. ask beats allow; the owner is never asked; a grant answers it.
    assert step(ALICE, "tool:memory_search") == (Effect.ASK, "ask rule")
    assert step(OWNER, "tool:memory_search") == (Effect.ALLOW, "ask rule")
    await grants.add("alice", "tool:memory_search", "session", CHAT, "owner")
    assert step(ALICE, "tool:memory_search") == (Effect.ALLOW, "ask rule")
    assert resolver.decide(ALICE, "tool:memory_search", OTHER_CHAT).effect is Effect.ASK
    # 4. allow rules widen a profile.
    assert step(ALICE, "instinct:cron") == (Effect.ALLOW, "allow rule")
    # 5./6. grants without a rule: session (this chat only), then persisted.
    assert step(ALICE, "instinct:remind") == (Effect.DENY, "default")
    await grants.add("alice", "instinct:remind", "session", CHAT, "owner")
    assert step(ALICE, "instinct:remind") == (Effect.ALLOW, "session grant")
    assert resolver.decide(ALICE, "instinct:remind", OTHER_CHAT).effect is Effect.DENY
    persisted = await grants.add("alice", "instinct:schedule", "persisted", CHAT, "owner")
    assert resolver.decide(ALICE, "instinct:schedule", OTHER_CHAT).step == "persisted grant"
    await grants.revoke(persisted.id)
    assert step(ALICE, "instinct:schedule") == (Effect.DENY, "default")
    # 7. defaults: the profile, repositories included.
    assert step(ALICE, "repo:demo") == (Effect.ALLOW, "default")
    assert step(ALICE, "repo:other") == (Effect.DENY, "default")
    assert step(ALICE, "approve") == (Effect.DENY, "default")
    assert step(OWNER, "undo:others") == (Effect.ALLOW, "default")


async def test_grants_survive_a_restart_and_end_with_the_session(tmp_path: Path) -> None:
    async with Store(tmp_path / "fetch.db") as store:
        first = GrantStore(store.db)
        await first.load()
        await first.add("alice", "approve", "persisted", CHAT, "owner")
        await first.add("alice", "instinct:remind", "session", CHAT, "owner")
        await first.add("alice", "instinct:cron", "once", CHAT, "owner")
    async with Store(tmp_path / "fetch.db") as store:
        again = GrantStore(store.db)
        await again.load()
        assert [g.scope for g in again.active()] == ["persisted", "session", "once"]
        assert await again.end_session(CHAT) == 2
        assert [g.action for g in again.active()] == ["approve"]
