"""The profile x instinct x tool matrix, generated from the registries: every instinct
in the instinct registry and every tool in the tool registry, for every profile, is
asserted allowed or denied through the real gateway, and listed (/commands, the model's
tool list) exactly when allowed. A new instinct or tool fails here until this table
says who may use it."""

from __future__ import annotations

import re

import pytest

from instincts import build_registry
from orchestrator.permissions.model import PROFILES
from orchestrator.tools import build_tools
from tests.fakes.model_server import Text, ToolCall
from tests.permissions.conftest import PLAIN, SENDERS, Team

INSTINCTS = [i.name for i in build_registry().all()]
TOOLS = build_tools().names()

# What each profile may use, written down here independently of the code under test.
VIEWER_INSTINCTS = {"help", "commands", "status", "whoami"}
COLLABORATOR_INSTINCTS = VIEWER_INSTINCTS | {
    "stop",
    "clear",
    "undo",
    "workspace",
    "harness",
    "remember",
    "memory",
    "forget",
    "skills",
    "identity",
    "tools",
}
EXPECTED_INSTINCTS = {
    "owner": set(INSTINCTS),
    "collaborator": COLLABORATOR_INSTINCTS,
    "viewer": VIEWER_INSTINCTS,
}
COLLABORATOR_TOOLS = {
    "workspace_list",
    "workspace_select",
    "task_create",
    "ask_user",
    "memory_write",
    "memory_search",
    "workspace_status",
    "task_status",
    "task_cancel",
    "report_progress",
    "repo_list_files",
    "repo_read_file",
    "repo_search",
    "git_log",
    "git_show",
    "activate_skill",
}
EXPECTED_TOOLS = {"owner": set(TOOLS), "collaborator": COLLABORATOR_TOOLS, "viewer": set()}
# Denied for collaborators: scheduling (a prompt job runs with the owner's authority),
# send_message, archived transcripts (the owner's conversations), pause/resume of a
# shared session, /grants, creating or deleting repositories, answering a task's question,
# /autonomy (how the owner's branch may move), /project, and the memory blocks (/blocks,
# block_update: the owner's persona and notes, always in the model's prompt), and /cost
# (what the owner pays, and their budgets), and /improve /prs (Fetch's own code, pushed
# and proposed with the owner's GitHub token), and /model (which model the owner pays for),
# and /send (a repository's file, whole, out of the host).


def test_the_tables_cover_every_profile_instinct_and_tool() -> None:
    assert set(EXPECTED_INSTINCTS) == set(PROFILES) == set(SENDERS)
    known = {
        "pause",
        "resume",
        "remind",
        "schedule",
        "cron",
        "grants",
        "autonomy",
        "project",
        "blocks",
        "cost",
        "improve",
        "prs",
        "model",  # the orchestrator's model is the owner's spend
        "link",  # joins a chat to the owner's own conversation
        "send",  # a file of the owner's repository leaves the host, whole
    } | COLLABORATOR_INSTINCTS
    assert set(INSTINCTS) <= known, f"decide who may use {set(INSTINCTS) - known}"
    denied_tools = {
        "schedule",
        "schedule_list",
        "schedule_cancel",
        "send_message",
        "memory_read",
        "workspace_create",
        "workspace_delete",
        "task_respond",
        "block_update",
    }
    assert set(TOOLS) <= COLLABORATOR_TOOLS | denied_tools, "decide who may use new tools"


def _listed(listing: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"(?m)^/([a-z]+)", listing)}


@pytest.mark.parametrize("profile", sorted(PROFILES))
async def test_every_instinct_for_every_profile(team: Team, profile: str) -> None:
    sender = SENDERS[profile]
    expected = EXPECTED_INSTINCTS[profile]
    listing = "\n".join(await team.say(sender, "/commands"))
    assert _listed(listing) == expected, listing
    words = set(re.findall(r"/([a-z]+)", "\n".join(await team.say(sender, "/help"))))
    assert words <= expected, f"/help offers {words - expected} to a {profile}"
    for name in INSTINCTS:
        replies = await team.say(sender, f"/{name}")
        refused = any(r.startswith(f"🔒 You can't use /{name}") for r in replies)
        assert refused == (name not in expected), (profile, name, replies)
    # Free text: the model and the task pipeline ("talk").
    replies = await team.say(sender, "hello there")
    assert any(r.startswith("🔒") for r in replies) == (profile == "viewer"), replies


@pytest.mark.parametrize("profile", ["owner", "collaborator"])
async def test_every_tool_for_every_profile(team: Team, profile: str) -> None:
    sender = SENDERS[profile]
    expected = EXPECTED_TOOLS[profile]
    # The model's tool list holds exactly what the sender may use.
    team.model.script(Text("hi"))
    await team.say(sender, "what do you think about the demo repo?", wait_for="hi")
    assert set(team.tool_names_offered()) == expected
    # Every tool, called by name (a model may name one it was not shown): a denied one
    # is unknown to it; an allowed one passes the check (and, called without its
    # required arguments or only to read, does nothing).
    for name in TOOLS:
        team.model.script(ToolCall(name, {}), Text(f"done {name}"))
        await team.say(sender, f"please use {name} in demo", wait_for=f"done {name}")
        (result,) = team.tool_results()[-1:]
        assert result.startswith("error: unknown tool") == (name not in expected), (
            profile,
            name,
            result,
        )


async def test_the_viewer_never_reaches_the_model(team: Team) -> None:
    before = len(team.model.model_requests)
    replies = await team.say(SENDERS["viewer"], "fix the typo in README.md of demo")
    assert replies[0].startswith("🔒")
    assert len(team.model.model_requests) == before


async def test_a_plain_allowlist_entry_is_a_collaborator_on_every_repo(team: Team) -> None:
    listing = "\n".join(await team.say(PLAIN, "/commands"))
    assert _listed(listing) == COLLABORATOR_INSTINCTS
    assert (await team.say(PLAIN, "/remind in 5m tea"))[0].startswith("🔒")
