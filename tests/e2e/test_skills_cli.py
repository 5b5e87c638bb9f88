"""Skills handed to the REAL coding CLIs: each CLI (Claude Code, Codex, Gemini CLI,
Copilot CLI) runs headless in the local kennel against the scripted model server, which
records what the CLI sent. An owner's skill marked ``cli: true`` and the repository's
committed skill reach the CLI's model request (Claude Code lists its skills folder to
its model; the others read them in their instructions file), and nothing is written into
the repository: the diff holds only the requested change."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, git, start_driver, tree_snapshot
from tests.e2e.test_pack_cli_wire import CLIS
from tests.fakes.model_server import EditFile, ScriptedModelServer, Text
from tests.fakes.require import require_binary

pytestmark = pytest.mark.real
OWNER_DESC = "Owner house rules for every change (canary 7c1d)."
OWNER_BODY = "Body canary 93ab: keep every line under 80 characters."
REPO_DESC = "How the demo repository names things (canary 4e2f)."
REPO_BODY = "Body canary 51c0: files are named in kebab-case."


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture(params=sorted(CLIS))
async def fetch_cli(
    request: pytest.FixtureRequest,
    model: ScriptedModelServer,
    make_settings: Callable[..., Settings],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    workspace: Path,
) -> AsyncIterator[tuple[str, Driver]]:
    name: str = request.param
    cli = CLIS[name]
    require_binary(cli.binary)
    unpacked = Path.home() / ".cache" / "copilot"
    if name == "copilot" and (unpacked / "pkg").is_dir():
        monkeypatch.setenv("COPILOT_PKG_CACHE_HOME", str(unpacked))  # as test_four_harnesses
    owner = tmp_path / "home" / "skills" / "house-rules" / "SKILL.md"
    owner.parent.mkdir(parents=True)
    owner.write_text(
        f'---\nname: house-rules\ndescription: "{OWNER_DESC}"\ncli: true\n---\n{OWNER_BODY}\n'
    )
    repo = workspace / "demo"
    committed = repo / ".fetch" / "skills" / "demo-naming" / "SKILL.md"
    committed.parent.mkdir(parents=True)
    committed.write_text(f'---\nname: demo-naming\ndescription: "{REPO_DESC}"\n---\n{REPO_BODY}\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a skill of the repository")
    app, driver = await start_driver(make_settings(FETCH_HARNESS=name, **cli.env(model.url)))
    try:
        yield name, driver
    finally:
        await app.__aexit__(None, None, None)


async def test_skills_reach_the_cli_request_not_the_repository(
    fetch_cli: tuple[str, Driver], model: ScriptedModelServer
) -> None:
    name, fetch = fetch_cli
    repo = fetch.services.workspace.path("demo")
    before = tree_snapshot(repo)
    line = "Teh quick brown fox."  # a whole line: apply_patch (Codex, Copilot) needs one
    model.script(EditFile(str(repo / "README.md"), line, "The quick brown fox."), Text("Fixed it."))
    await fetch.ask("fix the typo in README.md of demo", "On it", 30)
    diff = await fetch.expect("Apply? (yes/no)", 150)
    sent = "\n".join(r.raw.decode("utf-8", "replace") for r in model.model_requests)
    assert sent, "the CLI never called the model"
    for canary in ("house-rules", "canary 7c1d", "demo-naming", "canary 4e2f"):
        assert canary in sent, f"{name} did not receive {canary!r}"
    if name != "claude-code":  # the others read the bodies in their instructions file
        assert "Body canary 93ab" in sent and "Body canary 51c0" in sent
    else:  # Claude Code reads a body when it uses the skill: it is in its skills folder
        homes = fetch.services.settings.home_dir / "kennel"
        found = {p.parent.name: p.read_text() for p in homes.rglob("claude/skills/*/SKILL.md")}
        assert OWNER_BODY in found["house-rules"] and REPO_BODY in found["demo-naming"]
    assert "README.md" in diff and "SKILL" not in diff and "GEMINI.md" not in diff
    assert set(tree_snapshot(repo)) == set(before)  # no file added to the repository
    await fetch.ask("no", "Discarded")
    assert tree_snapshot(repo) == before
