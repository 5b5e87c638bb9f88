"""The owner is always reachable on their configured number, and a send that fails
leaves nothing behind (issue 22): a group's diff reaches the owner's WhatsApp DM though
they never wrote there; when it cannot, no approval waits unseen, whoever asked is told,
and /status says why. A member's own diff goes to the owner, who answers it in their
chat; the member's chat stays free and the member may withdraw it. Through the real
WhatsApp adapter, real SQLite, real git (the demo harness in the bwrap kennel)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from core.events import SessionKey
from core.state import State
from tests.conftest import git
from tests.fakes.model_server import Text, ToolCall
from tests.permissions.wa_team import (
    ALICE,
    ALICE_DM,
    GROUP_CHAT,
    OWNER,
    OWNER_DM,
    OwnerUnreachable,
    WaTeam,
)
from tests.permissions.wa_team import wa_team_factory as wa_team_factory  # the fixture

FIX = ToolCall("task_create", {"repo": "demo", "instruction": "fix the typo in README.md"})
GROUP_KEY = SessionKey("whatsapp", GROUP_CHAT)
ALICE_KEY = SessionKey("whatsapp", ALICE_DM)
OWNER_KEY = SessionKey("whatsapp", OWNER_DM)


async def state_of(team: WaTeam, key: SessionKey) -> State:
    return State((await team.services.sessions.get(key)).state)


async def approvals(team: WaTeam) -> list[tuple[str, str]]:
    rows = await team.services.store.db.conn.execute_fetchall(
        "SELECT session, status FROM approvals ORDER BY id"
    )
    return [(str(r[0]), str(r[1])) for r in rows]


async def test_a_groups_diff_reaches_the_owner_who_never_wrote_directly(
    wa_team_factory: Callable[..., Any],
) -> None:
    team: WaTeam = await wa_team_factory()
    repo = team.services.workspace.path("demo")
    base = git(repo, "rev-parse", "HEAD")
    team.model.script(FIX)
    await team.say(ALICE, "fix the typo in README.md of demo", group=True, wait_for="ready")
    card = await team.expect(OWNER_DM, "+The quick")
    assert any("From the group" in m and "alice asked" in m for m in card)
    assert await state_of(team, GROUP_KEY) is State.GUARDING
    await team.say(OWNER, "yes", group=True, wait_for="Committed")
    assert git(repo, "rev-parse", "HEAD^") == base


async def test_a_diff_the_owner_cannot_get_leaves_nothing_waiting(
    wa_team_factory: Callable[..., Any],
) -> None:
    team: WaTeam = await wa_team_factory(OwnerUnreachable())
    repo = team.services.workspace.path("demo")
    base = git(repo, "rev-parse", "HEAD")
    team.model.script(FIX)
    said = await team.say(
        ALICE, "fix the typo in README.md of demo", group=True, wait_for="could not reach"
    )
    told = next(m for m in said if "could not reach" in m)
    assert "not on WhatsApp" in told and "unchanged" in told
    await team.idle()
    assert await state_of(team, GROUP_KEY) is State.ALERT
    assert await approvals(team) == [(f"whatsapp:{GROUP_CHAT}", "undelivered")]
    status = await team.say(ALICE, "/status", group=True, wait_for="Fetch ·")
    assert any("📵 I could not reach the owner with task #" in m for m in status)
    assert git(repo, "rev-parse", "HEAD") == base


async def test_a_members_question_the_owner_cannot_get_is_not_left_open(
    wa_team_factory: Callable[..., Any],
) -> None:
    rules = [{"effect": "ask", "what": "instinct:remind", "who": "alice"}]
    team: WaTeam = await wa_team_factory(
        OwnerUnreachable(), FETCH__PERMISSIONS__RULES=json.dumps(rules)
    )
    said = await team.say(ALICE, "/remind stretch in 20m", wait_for="could not reach")
    assert any("needs the owner's yes" in m and "Nothing was asked" in m for m in said)
    assert team.services.permissions.asks.pending() == []
    status = await team.say(ALICE, "/status", wait_for="Fetch ·")
    assert any("📵 I could not reach the owner with alice's question" in m for m in status)


async def test_a_members_own_diff_goes_to_the_owner_and_the_member_stays_free(
    wa_team_factory: Callable[..., Any],
) -> None:
    team: WaTeam = await wa_team_factory()
    repo = team.services.workspace.path("demo")
    base = git(repo, "rev-parse", "HEAD")
    team.model.script(FIX)
    said = await team.say(ALICE, "fix the typo in README.md of demo", wait_for="went to the owner")
    assert not any("+The quick" in m for m in said)  # the diff is the owner's to answer
    card = await team.expect(OWNER_DM, "+The quick")
    assert any("alice asked for this" in m for m in card)
    assert await state_of(team, ALICE_KEY) is State.ALERT
    assert await state_of(team, OWNER_KEY) is State.GUARDING
    status = await team.say(ALICE, "/status", wait_for="Fetch ·")
    assert any("your diff waits for the owner" in m for m in status)
    # Alice's chat is not locked for the approval's hour.
    team.model.script(Text("happy to chat"))
    await team.say(ALICE, "what does demo's app.py do", wait_for="happy to chat")
    await team.say(OWNER, "yes", wait_for="Committed")
    assert git(repo, "rev-parse", "HEAD^") == base
    applied = await team.expect(ALICE_DM, "The owner applied your task")
    assert any(git(repo, "rev-parse", "--short=7", "HEAD") in m for m in applied)


async def test_a_member_withdraws_their_diff_from_the_owners_chat(
    wa_team_factory: Callable[..., Any],
) -> None:
    team: WaTeam = await wa_team_factory()
    repo = team.services.workspace.path("demo")
    base = git(repo, "rev-parse", "HEAD")
    team.model.script(FIX)
    await team.say(ALICE, "fix the typo in README.md of demo", wait_for="went to the owner")
    await team.expect(OWNER_DM, "+The quick")
    said = await team.say(ALICE, "withdraw", wait_for="Withdrawn")
    assert any("no longer waits" in m for m in said)
    await team.expect(OWNER_DM, "alice withdrew task")
    assert await state_of(team, OWNER_KEY) is State.ALERT
    assert [s for _k, s in await approvals(team)] == ["withdrawn"]
    # The owner's yes now finds nothing to apply.
    team.model.script(Text("nothing waits"))
    await team.say(OWNER, "yes", wait_for=None)
    await team.idle()
    assert git(repo, "rev-parse", "HEAD") == base


async def test_a_diff_kept_while_the_owners_chat_is_busy_goes_to_them_when_it_rests(
    wa_team_factory: Callable[..., Any],
) -> None:
    team: WaTeam = await wa_team_factory()
    repo = team.services.workspace.path("demo")
    base = git(repo, "rev-parse", "HEAD")
    team.model.script(ToolCall("ask_user", {"question": "Which release?"}))
    await team.say(OWNER, "plan the next release of demo", wait_for="Which release")
    team.model.script(FIX)
    said = await team.say(ALICE, "fix the typo in README.md of demo", wait_for="busy")
    assert any("as soon as it is free" in m for m in said)
    assert not any("+The quick" in m for m in team.to(OWNER_DM) + team.to(ALICE_DM))
    assert await state_of(team, ALICE_KEY) is State.ALERT  # alice's chat is not locked
    assert await state_of(team, OWNER_KEY) is State.WAITING  # the owner's question stays
    team.model.script(Text("happy to chat"))
    await team.say(ALICE, "what does demo's app.py do", wait_for="happy to chat")
    team.model.script(Text("release 2.0 planned"))
    await team.say(OWNER, "2.0", wait_for="+The quick")
    card = team.to(OWNER_DM)
    assert any("alice asked for this" in m for m in card)
    await team.expect(ALICE_DM, "went to the owner")
    await team.say(OWNER, "yes", wait_for="Committed")
    assert git(repo, "rev-parse", "HEAD^") == base
    await team.expect(ALICE_DM, "The owner applied your task")
    assert [s for _k, s in await approvals(team)] == ["handed", "approved"]


async def test_a_member_withdraws_a_diff_kept_for_the_owners_busy_chat(
    wa_team_factory: Callable[..., Any],
) -> None:
    team: WaTeam = await wa_team_factory()
    repo = team.services.workspace.path("demo")
    base = git(repo, "rev-parse", "HEAD")
    team.model.script(ToolCall("ask_user", {"question": "Which release?"}))
    await team.say(OWNER, "plan the next release of demo", wait_for="Which release")
    team.model.script(FIX)
    await team.say(ALICE, "fix the typo in README.md of demo", wait_for="busy")
    said = await team.say(ALICE, "withdraw", wait_for="Withdrawn")
    assert any("will not go to the owner" in m for m in said)
    team.model.script(Text("release 2.0 planned"))
    await team.say(OWNER, "2.0", wait_for="release 2.0 planned")
    await team.idle()
    assert not any("+The quick" in m for m in team.to(OWNER_DM))
    assert await state_of(team, OWNER_KEY) is State.ALERT
    assert [s for _k, s in await approvals(team)] == ["withdrawn"]
    assert git(repo, "rev-parse", "HEAD") == base


async def test_a_members_scheduled_change_is_offered_to_the_owner(
    wa_team_factory: Callable[..., Any],
) -> None:
    rules = [{"effect": "allow", "what": "instinct:schedule", "who": "alice"}]
    team: WaTeam = await wa_team_factory(FETCH__PERMISSIONS__RULES=json.dumps(rules))
    repo = team.services.workspace.path("demo")
    base = git(repo, "rev-parse", "HEAD")
    await team.say(ALICE, "/schedule fix the typo in README.md of demo in 1s", wait_for="Job #")
    team.model.script(FIX)
    await team.expect(ALICE_DM, "went to the owner", timeout=60)
    card = await team.expect(OWNER_DM, "+The quick")
    assert any("alice asked for this" in m for m in card)
    tasks = await team.services.store.db.conn.execute_fetchall("SELECT requester FROM tasks")
    assert [r[0] for r in tasks] == ["alice"]
    await team.say(OWNER, "yes", wait_for="Committed")
    assert git(repo, "rev-parse", "HEAD^") == base
    await team.expect(ALICE_DM, "The owner applied your task")


async def test_a_kept_diff_survives_a_restart_and_is_offered_when_the_owner_rests(
    wa_team_factory: Callable[..., Any],
) -> None:
    """Kept for the owner's busy chat, then Fetch restarts: the diff waits again (it was
    in memory only and expired unoffered), and reaches the owner when their chat rests."""
    team: WaTeam = await wa_team_factory()
    repo = team.services.workspace.path("demo")
    base = git(repo, "rev-parse", "HEAD")
    team.model.script(ToolCall("ask_user", {"question": "Which release?"}))
    await team.say(OWNER, "plan the next release of demo", wait_for="Which release")
    team.model.script(FIX)
    await team.say(ALICE, "fix the typo in README.md of demo", wait_for="busy")
    row = await team.services.store.sessions.load(ALICE_KEY)
    said = row.data.get("offered_said") if row is not None else None
    assert isinstance(said, str) and said.strip()  # the run's words, kept with the diff
    await team.app.__aexit__(None, None, None)  # the restart
    again: WaTeam = await wa_team_factory()
    assert await state_of(again, OWNER_KEY) is State.WAITING
    again.model.script(Text("release 2.0 planned"))
    await again.say(OWNER, "2.0", wait_for="+The quick")
    assert any("alice asked for this" in m for m in again.to(OWNER_DM))
    # the run's words came back with it, not only the bare diff
    assert any(said.strip().splitlines()[0] in m for m in again.to(OWNER_DM))
    await again.say(OWNER, "yes", wait_for="Committed")
    assert git(repo, "rev-parse", "HEAD^") == base
    assert [s for _k, s in await approvals(again)] == ["handed", "approved"]
