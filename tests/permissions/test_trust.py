"""Who may do what, through the real gateway: a friend in a shared group cannot undo the
owner's commit; a friend neither lists nor writes the owner's memories; path rules
refuse a diff before it is offered; the ask flow (once / session / always, no); /grants
lists and revokes; a diff started in a group goes to the owner's direct chat."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.events import SessionKey
from tests.conftest import git
from tests.fakes.model_server import Text, ToolCall
from tests.permissions.conftest import ALICE, GROUP, OWNER, VIC, Team

OWNER_DM = f"{OWNER}@s.whatsapp.net"  # where Fetch reaches the owner on WhatsApp


async def test_a_friend_in_a_shared_group_cannot_undo_the_owners_commit(
    team: Team, workspace: Path
) -> None:
    repo = workspace / "demo"
    head = git(repo, "rev-parse", "HEAD")
    team.model.script(
        ToolCall("task_create", {"repo": "demo", "instruction": "fix the typo in README.md"})
    )
    group = await team.say(
        OWNER, "@fetch fix the typo in README.md of demo", chat=GROUP, wait_for="ready for review"
    )
    # The group gets a note; the diff itself goes to the owner's direct chat.
    assert not any("README.md" in t and "+" in t for t in group if "Task #" not in t)
    assert any("From the group" in t and "README.md" in t for t in team.to(OWNER_DM))
    # A friend's yes in the group does not count.
    assert "only the owner can approve" in (await team.say(ALICE, "@fetch yes", chat=GROUP))[-1]
    await team.say(OWNER, "@fetch yes", chat=GROUP, wait_for="Committed")
    committed = git(repo, "rev-parse", "HEAD")
    assert git(repo, "rev-parse", "HEAD^") == head
    refused = await team.say(ALICE, "@fetch /undo", chat=GROUP)
    assert "made for someone else" in refused[-1]
    assert git(repo, "rev-parse", "HEAD") == committed
    rows = await team.services.store.db.conn.execute_fetchall("SELECT requester FROM commits")
    assert [r[0] for r in rows] == ["owner"]
    # The owner can.
    await team.say(OWNER, "@fetch /undo", chat=GROUP, wait_for="Reverted")
    assert git(repo, "rev-parse", "HEAD") != committed


async def test_a_friend_neither_lists_nor_writes_the_owners_memories(team: Team) -> None:
    said = await team.say(OWNER, "/remember the staging db is on port 5433")
    owner_id = int(re.search(r"#(\d+)", said[-1]).group(1))  # type: ignore[union-attr]
    assert "5433" not in "\n".join(await team.say(ALICE, "/memory"))
    assert "Nothing remembered" in (await team.say(ALICE, "/memory staging db port"))[-1]
    assert "No memory" in (await team.say(ALICE, f"/forget {owner_id}"))[-1]
    # What a friend writes (by command, or through the model) is theirs, never the owner's.
    await team.say(ALICE, "/remember the staging db is on port 5433")  # same words
    team.model.script(
        ToolCall("memory_write", {"content": "deploys happen on fridays"}), Text("noted")
    )
    await team.say(ALICE, "remember that deploys happen on fridays", wait_for="noted")
    memory = team.services.memory
    rows = await memory.db.run(
        lambda c: c.execute("SELECT subject, content FROM memory_items ORDER BY id").fetchall()
    )
    assert [r[0] for r in rows] == ["owner", "alice", "alice"]
    owner_view = "\n".join(await team.say(OWNER, "/memory"))
    assert "fridays" not in owner_view and "1 memories" in owner_view
    assert "fridays" not in await memory.context_for("when do deploys happen fridays")
    assert "fridays" in await memory.context_for("when do deploys happen fridays", "alice")
    assert (await memory.get(owner_id)) is not None  # the friend's /forget did nothing


async def test_path_rules_refuse_a_diff_touching_secrets(
    team_factory: Callable[..., Any], workspace: Path
) -> None:
    repo = workspace / "demo"
    (repo / "secrets").mkdir()
    (repo / "secrets" / "keys.txt").write_text("teh key\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "secrets")
    head = git(repo, "rev-parse", "HEAD")
    team: Team = await team_factory(FETCH__PERMISSIONS__DENY='["path:secrets/**"]')
    team.model.script(
        ToolCall("task_create", {"repo": "demo", "instruction": "fix the typo in secrets/keys.txt"})
    )
    replies = await team.say(OWNER, "fix the typo in secrets/keys.txt of demo", wait_for="Refused")
    flat = [" ".join(t.split()) for t in replies]  # the phone's line breaks
    assert any("secrets/keys.txt (permissions.deny path:secrets/**)" in t for t in flat)
    assert not any("Apply?" in t for t in team.to(OWNER))
    assert (repo / "secrets" / "keys.txt").read_text() == "teh key\n"
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "rev-parse", "HEAD") == head
    session = await team.services.sessions.get(SessionKey("whatsapp", OWNER))
    assert session.state == "ALERT"
    # Other files still go through.
    team.model.script(
        ToolCall("task_create", {"repo": "demo", "instruction": "fix the typo in README.md"})
    )
    await team.say(OWNER, "fix the typo in README.md of demo", wait_for="Apply?")


def _nonce(team: Team) -> str:
    asked = [t for t in team.to(OWNER_DM) if t.startswith("🔐")]
    return re.search(r"/grants yes (\w+)", asked[-1]).group(1)  # type: ignore[union-attr]


async def test_ask_flow_once_session_always_and_no(team_factory: Callable[..., Any]) -> None:
    rules = [{"effect": "ask", "what": "instinct:remind", "who": "alice"}]
    team: Team = await team_factory(FETCH__PERMISSIONS__RULES=json.dumps(rules))

    async def remind() -> str:
        return (await team.say(ALICE, "/remind in 5m stretch"))[-1]

    assert "needs the owner's yes" in await remind()
    assert "alice asks to use /remind" in team.to(OWNER_DM)[-1]
    # Only the owner answers.
    assert (await team.say(VIC, f"/grants yes {_nonce(team)} always"))[-1].startswith("🔒")
    assert (await team.say(ALICE, f"/grants yes {_nonce(team)}"))[-1].startswith("🔒")
    # Once: one use.
    said = await team.say(OWNER, f"/grants yes {_nonce(team)} once", chat=OWNER_DM)
    assert "Granted" in said[-1]
    assert "allowed instinct:remind (once)" in team.to(ALICE)[-1]
    assert not (await remind()).startswith(("🔒", "🔐"))
    assert "needs the owner's yes" in await remind()
    # For this chat until /clear.
    await team.say(OWNER, f"/grants yes {_nonce(team)} session", chat=OWNER_DM)
    assert not (await remind()).startswith(("🔒", "🔐"))
    assert not (await remind()).startswith(("🔒", "🔐"))
    await team.say(ALICE, "/clear")
    assert "needs the owner's yes" in await remind()
    # No.
    await team.say(OWNER, f"/grants no {_nonce(team)}", chat=OWNER_DM)
    assert "said no" in team.to(ALICE)[-1]
    assert "needs the owner's yes" in await remind()
    # An expired question cannot be answered.
    asks = team.services.permissions.asks
    nonce = _nonce(team)
    asks._open[nonce] = dataclasses.replace(asks._open[nonce], expires_at=0)
    assert (
        "No open question"
        in (await team.say(OWNER, f"/grants yes {nonce} always", chat=OWNER_DM))[-1]
    )
    # Persisted: until revoked, across chats and /clear.
    assert "needs the owner's yes" in await remind()
    await team.say(OWNER, f"/grants yes {_nonce(team)} always", chat=OWNER_DM)
    await team.say(ALICE, "/clear")
    assert not (await remind()).startswith(("🔒", "🔐"))
    listing = (await team.say(OWNER, "/grants", chat=OWNER_DM))[-1]
    grant_id = int(re.search(r"#(\d+) alice: instinct:remind \(persisted", listing).group(1))  # type: ignore[union-attr]
    assert "Revoked" in (await team.say(OWNER, f"/grants revoke {grant_id}", chat=OWNER_DM))[-1]
    assert "No grants" in (await team.say(OWNER, "/grants", chat=OWNER_DM))[-1]
    assert "needs the owner's yes" in await remind()
    rows = await team.services.store.db.conn.execute_fetchall(
        "SELECT scope, revoked IS NOT NULL FROM grants ORDER BY id"
    )
    assert [tuple(r) for r in rows] == [("once", 1), ("session", 1), ("persisted", 1)]


async def test_a_collaborator_works_only_in_its_repos_and_approves_only_if_granted(
    team: Team, workspace: Path
) -> None:
    from tests.conftest import make_repo

    make_repo(workspace, "other", {"README.md": "teh\n"})
    team.model.script(
        ToolCall("task_create", {"repo": "other", "instruction": "fix the typo in README.md"})
    )
    replies = await team.say(ALICE, "fix the typo in README.md of other")
    assert any("🔒" in t and "tasks in other" in t for t in replies)
    # Its own task in demo: the diff goes to the owner, whose yes it needs (issue 22)...
    fix = ToolCall("task_create", {"repo": "demo", "instruction": "fix the typo in README.md"})
    team.model.script(fix)
    await team.say(ALICE, "fix the typo in README.md of demo", wait_for="went to the owner")
    await team.say(OWNER, "no", chat=OWNER_DM, wait_for="Discarded")
    # ...until the owner grants it approve: then its own diffs are its to answer.
    await team.say(OWNER, "/grants allow alice approve", chat=OWNER_DM)
    team.model.script(fix)
    await team.say(ALICE, "fix the typo in README.md of demo", wait_for="Apply?")
    await team.say(ALICE, "yes", wait_for="Committed")
    rows = await team.services.store.db.conn.execute_fetchall("SELECT requester FROM commits")
    assert [r[0] for r in rows] == ["alice"]
