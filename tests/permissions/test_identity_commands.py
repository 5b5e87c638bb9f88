"""/identity /whoami /tools for the owner, a collaborator and a viewer, through the real
gateway: what each sees, what each is refused, and that /tools lists exactly the tools
the model is offered for that sender."""

from __future__ import annotations

import re

from tests.fakes.model_server import Text
from tests.permissions.conftest import ALICE, OWNER, VIC, Team


def _lines_fit_a_phone(text: str) -> bool:
    return all(len(line) <= 72 for line in text.splitlines())


async def test_identity_shows_fetch_the_owner_and_the_pack(team: Team) -> None:
    for sender in (OWNER, ALICE):
        text = (await team.say(sender, "/identity"))[0]
        assert text.startswith("🐕 Fetch (COLLAR.md v1)")
        assert "Never change code without the owner's approval" in text
        # Rules are shown whole (wrapped for the phone, never cut short).
        flat = " ".join(text.split())
        assert "approval of the exact diff." in flat and "…" not in flat
        assert "👤 owner:" in text
        for member in ("coder", "reviewer", "test-fixer", "docs-writer"):
            assert f"• {member}:" in text
        assert "pack (default: coder" in text and "when: A test fails" in text
        assert _lines_fit_a_phone(text)
    refused = (await team.say(VIC, "/identity"))[0]
    assert refused.startswith("🔒 You can't use /identity")


async def test_whoami_for_each_profile(team: Team) -> None:
    owner = (await team.say(OWNER, "/whoami"))[0]
    assert owner.startswith("👤 owner · profile: owner")
    assert f"chat: whatsapp:{OWNER}" in owner and "every command and tool" in owner

    alice = (await team.say(ALICE, "/whoami"))[0]
    assert alice.startswith("👤 alice · profile: collaborator")
    assert "repos: demo" in alice and "free text: yes" in alice and "grants: none" in alice
    commands = set(re.findall(r"/[a-z]+", alice.split("\ntools:")[0]))
    assert {"/identity", "/tools", "/whoami", "/stop", "/skills"} <= commands
    assert "/grants" not in commands and "/blocks" not in commands

    vic = (await team.say(VIC, "/whoami"))[0]
    assert vic.startswith("👤 vic · profile: viewer")
    assert "commands: /help /commands /status /whoami" in vic
    assert "repos: none" in vic and "free text: no" in vic and "tools: 0 of" in vic
    assert all(_lines_fit_a_phone(t) for t in (owner, alice, vic))

    # A grant shows in the sender's /whoami, and what it allows in /tools.
    await team.say(OWNER, "/grants allow alice tool:schedule_list always", wait_for="Granted")
    alice = (await team.say(ALICE, "/whoami"))[0]
    assert "grants:" in alice and "alice: tool:schedule_list (persisted)" in alice
    assert "• schedule_list:" in (await team.say(ALICE, "/tools"))[0]


async def test_tools_lists_what_the_model_is_offered(team: Team) -> None:
    owner = (await team.say(OWNER, "/tools"))[0]
    alice = (await team.say(ALICE, "/tools"))[0]
    assert "• workspace_delete:" in owner and "• workspace_delete:" not in alice
    assert "• task_create: Hand a coding task" in alice
    assert "the owner approves its diff." in " ".join(alice.split())  # whole, not cut
    assert (await team.say(VIC, "/tools"))[0].startswith("🔒 You can't use /tools")
    listed = sorted(re.findall(r"(?m)^• ([a-z_]+):", alice))
    team.model.script(Text("hi alice"))
    await team.say(ALICE, "hello there, what can you do?", wait_for="hi alice")
    assert listed == team.tool_names_offered()  # the very same filter
    assert _lines_fit_a_phone(alice)
