"""The agent for someone other than the owner: a member reads only the repositories it
may work in (a cached read of another repository is never handed to it), and a tool the
auto-approve table marks "ask" goes through the permission model's ask flow: the owner
answers /grants, and only then does it run."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import make_repo
from tests.fakes.model_server import Text, ToolCall
from tests.permissions.conftest import ALICE, OWNER, Team
from tests.permissions.conftest import team_factory as team_factory  # the fixture

OWNER_DM = f"{OWNER}@s.whatsapp.net"  # where Fetch reaches the owner on WhatsApp


async def test_a_member_never_reads_a_repository_it_may_not_work_in(
    team_factory: Callable[..., Any], workspace: Path
) -> None:
    make_repo(workspace, "private", {"secret.txt": "owner only\n"})
    team: Team = await team_factory()
    read = ToolCall("repo_read_file", {"repo": "private", "path": "secret.txt"})
    team.model.script(read, Text("owner read it"))
    await team.say(OWNER, "hello there, read private", wait_for="owner read it")
    assert team.tool_results() == ["secret.txt:\n1: owner only"]
    assert len(team.services.planner.executor.cache) == 1
    team.model.script(read, Text("alice tried"))
    await team.say(ALICE, "hello there, read private", wait_for="alice tried")
    assert team.tool_results() == ["error: the sender may not work in private"]
    team.model.script(
        ToolCall("repo_read_file", {"repo": "demo", "path": "app.py"}), Text("alice read demo")
    )
    await team.say(ALICE, "hello there, read demo", wait_for="alice read demo")
    assert team.tool_results() == ["app.py:\n1: print('hi')"]


async def test_a_tool_that_asks_waits_for_the_owners_grant(
    team_factory: Callable[..., Any], workspace: Path
) -> None:
    rules = [{"effect": "allow", "what": "tool:workspace_create", "who": "alice"}]
    team: Team = await team_factory(FETCH__PERMISSIONS__RULES=json.dumps(rules))
    create = ToolCall("workspace_create", {"name": "alices"})
    team.model.script(create)
    said = await team.say(ALICE, "hello there, make repo alices", wait_for="owner's yes")
    assert any("needs the owner's yes" in s for s in said)
    assert not (workspace / "alices").exists()
    question = next(m for m in team.to(OWNER_DM) if "alice asks to use" in m)
    assert "workspace_create(name='alices')" in question.replace("\n", " ")
    nonce = re.search(r"/grants yes (\w+)", question)
    assert nonce is not None
    await team.say(OWNER, f"/grants yes {nonce.group(1)} once", chat=OWNER_DM, wait_for="Granted")
    team.model.script(create, Text("made it"))
    await team.say(ALICE, "hello there, make repo alices", wait_for="made it")
    assert team.tool_results() == ["created repository alices (branch main, no commits)"]
    assert (workspace / "alices" / ".git").is_dir()
    # The once grant is used up: the next create asks again.
    team.model.script(ToolCall("workspace_create", {"name": "again"}))
    await team.say(ALICE, "hello there, make repo again", wait_for="owner's yes")
    assert not (workspace / "again").exists()
