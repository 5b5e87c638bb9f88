"""The pack through the whole app with the offline demo harness (the real bwrap kennel,
real git, SQLite): the no-model path routes by ROUTING.md, the orchestrator model may pick
a member with task_create's ``agent``, the owner's pack overrides the shipped one, and
the demo CLI says which member's instructions it read from its user-level file."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, start_driver, tree_snapshot
from tests.fakes.model_server import ScriptedModelServer, Text, ToolCall


async def test_no_model_routes_the_failing_test_to_test_fixer(fetch: Driver) -> None:
    repo = fetch.services.workspace.path("demo")
    before = tree_snapshot(repo)
    first = await fetch.ask("fix the failing test in README.md of demo", "On it")
    assert "test-fixer on demo" in first
    diff = await fetch.expect("Apply? (yes/no)")
    # What the demo CLI read from $HOME/fetch-instructions.md, relayed in the diff card.
    assert "test-fixer: Fixed 1 typo(s) in README.md." in diff
    assert set(tree_snapshot(repo)) == set(before)  # no instructions file in the repo
    session = await fetch.services.sessions.get(fetch.terminal_key())
    assert session.data.task_agent == "test-fixer"
    await fetch.ask("no", "Discarded")
    # Another task, another member: the file is rewritten, not kept from the last run.
    first = await fetch.ask("add a greeting to app.py in demo", "On it")
    assert "coder on demo" in first
    said = await fetch.expect("without changing any file")
    assert "coder: No typos I know of in app.py." in said and "test-fixer" not in said


@pytest.fixture
def own_pack(tmp_path: Path) -> Path:
    agents = tmp_path / "home" / "agents"
    agents.mkdir(parents=True)
    (agents / "test-fixer.md").write_text(
        "---\nname: test-fixer\nrole: my own test fixer\nharness: codex\n---\nMy rules.\n"
    )
    (agents / "broken.md").write_text("---\nname: broken\nrol: typo\n---\n")
    return agents


async def test_the_owner_pack_wins_and_an_unusable_harness_falls_back(
    own_pack: Path, make_settings: Callable[..., Settings]
) -> None:
    app, fetch = await start_driver(make_settings(OPENAI_API_KEY=""))
    try:
        identity = await fetch.ask("/identity", "pack")
        assert "test-fixer: my own test fixer" in identity and "yours" in identity
        assert "⚠️ skipped agents/broken.md: role: required" in identity
        first = await fetch.ask("fix the flaky test in README.md of demo", "On it")
        flat = " ".join(first.split())  # phone_wrap may break a line anywhere
        assert "test-fixer prefers codex, which can't run here; using demo" in flat
        assert "test-fixer on demo" in first
        diff = await fetch.expect("Apply? (yes/no)")
        assert "test-fixer: Fixed" in diff
        await fetch.ask("no", "Discarded")
        # The chat's own /harness choice wins over a member's preference: no note.
        await fetch.ask("/harness demo", "demo")
        first = await fetch.ask("fix the flaky test in README.md of demo", "On it")
        assert "test-fixer on demo" in first and "prefers" not in first
    finally:
        await app.__aexit__(None, None, None)


@pytest.fixture
async def planned(make_settings: Callable[..., Settings]) -> AsyncIterator[Driver]:
    async with ScriptedModelServer() as model:
        settings = make_settings(
            FETCH_MODEL_BASE_URL=model.url + "/v1",
            FETCH_MODEL="planner-1",
            FETCH_MODEL_API_KEY="sk-orch",
            FETCH__MODEL__MAX_RETRIES="0",
        )
        app, driver = await start_driver(settings)
        driver.model = model  # type: ignore[attr-defined]
        try:
            yield driver
        finally:
            await app.__aexit__(None, None, None)


async def test_the_model_picks_the_reviewer_with_task_create(planned: Driver) -> None:
    model: ScriptedModelServer = planned.model  # type: ignore[attr-defined]
    model.script(
        ToolCall("task_create", {"repo": "demo", "instruction": "x", "agent": "ghost"}),
        ToolCall(
            "task_create",
            # The rules would pick docs-writer ("typo"): the model's choice wins.
            {"repo": "demo", "instruction": "fix the typo in README.md", "agent": "reviewer"},
        ),
    )
    first = await planned.ask("have someone careful look at the readme of demo", "On it", 30)
    assert "reviewer on demo" in first
    diff = await planned.expect("Apply? (yes/no)")
    assert "reviewer: Fixed 1 typo(s)" in diff
    bodies = [r.body for r in model.model_requests if r.body]
    system = bodies[0]["messages"][0]["content"]
    assert "Pack (task_create's agent" in system and "- test-fixer: makes failing" in system
    # An unknown member is refused back to the model, naming the pack.
    results = [m["content"] for m in bodies[1]["messages"] if m.get("role") == "tool"]
    assert any("no pack member named 'ghost'" in r and "reviewer" in r for r in results)
    await planned.ask("no", "Discarded")


async def test_a_model_that_names_no_member_gets_the_rules(planned: Driver) -> None:
    model: ScriptedModelServer = planned.model  # type: ignore[attr-defined]
    model.script(
        ToolCall("task_create", {"repo": "demo", "instruction": "fix the failing test README.md"}),
        Text("unused"),
    )
    first = await planned.ask("the demo tests are red, README.md", "On it", 30)
    assert "test-fixer on demo" in first
    assert "test-fixer: Fixed" in await planned.expect("Apply? (yes/no)")
    await planned.ask("no", "Discarded")
