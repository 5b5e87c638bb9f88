"""/skills for each profile through the real gateway: the owner and a collaborator list
and read skills (the collaborator also activates one through the model); a viewer is
refused and never sees a body. A collaborator sees a repository's committed skills only
for a repository it may work in."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import git, make_repo
from tests.fakes.model_server import Text, ToolCall
from tests.permissions.conftest import ALICE, OWNER, VIC, Team
from tests.permissions.conftest import team_factory as team_factory  # the fixture

BODY_LINE = "Keep a Changelog headings"  # from release-notes' body


def flat(said: list[str]) -> str:
    """What was said, with the phone's line wrapping undone."""
    return " ".join(" ".join(said).split())


async def test_skills_for_owner_collaborator_and_viewer(
    team_factory: Callable[..., Any], workspace: Path
) -> None:
    private = make_repo(
        workspace,
        "private",
        {
            ".fetch/skills/secret-sauce/SKILL.md": (
                "---\nname: secret-sauce\ndescription: Owner-only recipe.\n---\nSECRET.\n"
            )
        },
    )
    assert git(private, "ls-files") == ".fetch/skills/secret-sauce/SKILL.md"
    team: Team = await team_factory()

    listing = flat(await team.say(OWNER, "/skills", wait_for="Skills"))
    assert "• release-notes (shipped)" in listing and "commit-style" in listing
    shown = flat(await team.say(OWNER, "/skills release-notes", wait_for="release-notes"))
    assert "🧰 release-notes (shipped, not active)" in shown and BODY_LINE in shown
    missing = flat(await team.say(OWNER, "/skills nope", wait_for="No skill"))
    assert "No skill named 'nope'" in missing and "python-testing" in missing
    await team.say(OWNER, "/workspace private", wait_for="private")
    mine = flat(await team.say(OWNER, "/skills", wait_for="Skills"))
    assert "secret-sauce (repo private)" in mine

    # alice, a collaborator on demo: lists and reads, activates through the model.
    listing = flat(await team.say(ALICE, "/skills", wait_for="Skills"))
    assert "• release-notes (shipped)" in listing
    shown = flat(await team.say(ALICE, "/skills release-notes", wait_for="release-notes"))
    assert BODY_LINE in shown
    team.model.script(ToolCall("activate_skill", {"name": "release-notes"}), Text("loaded"))
    await team.say(ALICE, "hello there, draft notes", wait_for="loaded")
    assert BODY_LINE in flat(team.tool_results())
    after = flat(await team.say(ALICE, "/skills release-notes", wait_for="release-notes"))
    assert "active in this chat" in after
    # A repository it may not work in: its skills are not alice's to see.
    await team.say(ALICE, "/workspace private", wait_for="")
    hers = flat(await team.say(ALICE, "/skills", wait_for="Skills"))
    assert "secret-sauce" not in hers

    # vic, a viewer: refused, no body.
    refused = flat(await team.say(VIC, "/skills release-notes"))
    assert BODY_LINE not in refused and "release-notes (shipped" not in refused
    refused = flat(await team.say(VIC, "/skills"))
    assert refused == "🔒 You can't use /skills here (profile viewer does not include it)."
