"""Settings in layers: global < repository (FETCH_HOME config, FETCH_HOME/repos/<name>.yaml,
the committed .fetch.yaml, narrowing only) < chat; each value names its source, and
nothing in a working tree can widen anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.events import SessionKey
from tests.conftest import git
from tests.fakes.model_server import ToolCall
from tests.permissions.conftest import GROUP, OWNER, Team

GROUP_KEY = SessionKey("whatsapp", GROUP)


def commit_fetch_yaml(repo: Path, text: str) -> None:
    (repo / ".fetch.yaml").write_text(text)
    git(repo, "add", ".fetch.yaml")
    git(repo, "commit", "-qm", "fetch settings")


async def test_every_layer_speaks_and_says_where_from(
    team_factory: Callable[..., Any], workspace: Path, tmp_path: Path
) -> None:
    repo = workspace / "demo"
    commit_fetch_yaml(
        repo, "approvals: {ttl_seconds: 600}\npermissions: {deny: ['path:README.md'], mode: view}\n"
    )
    (tmp_path / "home" / "repos").mkdir(parents=True)
    (tmp_path / "home" / "repos" / "demo.yaml").write_text("approvals: {ttl_seconds: 1800}\n")
    team: Team = await team_factory(
        FETCH__REPOS=json.dumps({"demo": {"permissions": {"deny": ["path:docs/**"]}}}),
        FETCH__CHATS=json.dumps({f"whatsapp:{GROUP}": {"approvals": {"ttl_seconds": 2400}}}),
    )
    permissions = team.services.permissions

    ttl = await permissions.explain_value("approvals.ttl_seconds", None, "demo")
    assert ttl.value == 600 and "demo:.fetch.yaml at" in ttl.source
    text = ttl.explain()
    assert "global: 3600 (global config)" in text  # the CLI names file, env, default
    assert "repos/demo.yaml) -> overrides" in text and "-> narrows" in text
    in_group = await permissions.explain_value("approvals.ttl_seconds", GROUP_KEY, "demo")
    assert in_group.value == 2400 and in_group.source == f"config: chats.whatsapp:{GROUP}"
    deny = await permissions.explain_value("permissions.deny", None, "demo")
    assert deny.value == ("path:docs/**", "path:README.md")
    mode = await permissions.explain_value("permissions.mode", None, "demo")
    assert mode.value == "view"

    # The working tree is the sandbox's: an uncommitted .fetch.yaml that widens is not read.
    (repo / ".fetch.yaml").write_text(
        "approvals: {ttl_seconds: 99999}\npermissions: {mode: normal}\n"
    )
    again = await permissions.explain_value("approvals.ttl_seconds", None, "demo")
    assert again.value == 600
    assert (await permissions.explain_value("permissions.mode", None, "demo")).value == "view"
    # Committed, a widening value is ignored, and the explanation says so.
    git(repo, "commit", "-qam", "try to widen")
    widened = await permissions.explain_value("approvals.ttl_seconds", None, "demo")
    assert widened.value == 1800 and "IGNORED: would widen" in widened.explain()
    still = await permissions.explain_value("permissions.mode", None, "demo")
    assert still.value == "normal" and "IGNORED" not in still.explain()  # view was dropped


async def test_a_committed_narrowing_is_honoured_and_a_working_tree_one_cannot_widen(
    team_factory: Callable[..., Any], workspace: Path
) -> None:
    repo = workspace / "demo"
    commit_fetch_yaml(repo, "permissions: {deny: ['path:README.md']}\n")
    team: Team = await team_factory()
    team.model.script(
        ToolCall("task_create", {"repo": "demo", "instruction": "fix the typo in README.md"})
    )
    replies = await team.say(OWNER, "fix the typo in README.md of demo", wait_for="Refused")
    assert any(
        "README.md (permissions.deny path:README.md)" in " ".join(t.split()) for t in replies
    ), replies
    assert git(repo, "status", "--porcelain") == ""


async def test_a_view_only_group_and_a_sandbox_written_widening(
    team_factory: Callable[..., Any], workspace: Path
) -> None:
    team: Team = await team_factory(FETCH__PERMISSIONS__GROUP_MODE="view")
    refused = await team.say(OWNER, "@fetch /undo", chat=GROUP)
    assert refused[-1].startswith("🔒") and "view-only" in refused[-1]
    assert "Fetch ·" in (await team.say(OWNER, "@fetch /status", chat=GROUP))[-1]
    # A .fetch.yaml the harness writes into the working tree asks for normal mode: the
    # working tree is never read, so the group stays view-only.
    (workspace / "demo" / ".fetch.yaml").write_text("permissions: {mode: normal}\n")
    policy = await team.services.permissions.policy(GROUP_KEY, "demo")
    assert policy.mode == "view"


def test_config_explain_on_the_command_line(tmp_path: Path, workspace: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(
        "permissions:\n  deny: ['path:secrets/**']\n"
        "repos:\n  demo:\n    approvals: {ttl_seconds: 900}\n"
    )
    commit_fetch_yaml(workspace / "demo", "approvals: {ttl_seconds: 300}\n")
    env = {
        **os.environ,
        "FETCH_HOME": str(home),
        "FETCH_WORKSPACE": str(workspace),
        "FETCH__PERMISSIONS__MODE": "view",
    }

    def explain(*args: str) -> str:
        return subprocess.run(
            [sys.executable, "-m", "orchestrator", "config", "explain", *args],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout

    assert "from environment FETCH__PERMISSIONS__MODE" in explain("permissions.mode")
    assert f"from {home / 'config.yaml'}: permissions.deny" in explain("permissions.deny")
    out = explain("approvals.ttl_seconds", "--repo", "demo", "--chat", "telegram:-100")
    assert "global: 3600 (default)" in out
    assert f"repo: 900 ({home / 'config.yaml'}: repos.demo) -> overrides" in out
    assert "= 300" in out and "demo:.fetch.yaml at" in out and "-> narrows" in out
    assert "not a layered setting" in explain("model.api_key")


async def test_a_committed_shorter_expiry_applies_to_the_diff(
    team_factory: Callable[..., Any], workspace: Path
) -> None:
    commit_fetch_yaml(workspace / "demo", "approvals: {ttl_seconds: 60}\n")
    team: Team = await team_factory()
    team.model.script(
        ToolCall("task_create", {"repo": "demo", "instruction": "fix the typo in README.md"})
    )
    await team.say(OWNER, "fix the typo in README.md of demo", wait_for="Apply?")
    rows = await team.services.store.db.conn.execute_fetchall(
        "SELECT expires_at - created FROM approvals"
    )
    assert [round(r[0]) for r in rows] == [60]
