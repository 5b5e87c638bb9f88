"""Tests before approval: after the harness edits, the repository's own tests run in the
real bwrap sandbox (pytest found there), and the diff card and the completion card say
how they went, before the owner answers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, git, make_repo, start_driver, tree_snapshot

CALC = "def add(a, b):\n    # teh sum of a and b\n    return a + b\n"
PASSING = (
    "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
    "def test_zero():\n    assert add(0, 0) == 0\n"
)
FAILING = PASSING + "\n\ndef test_wrong():\n    assert add(2, 2) == 5\n"


@pytest.fixture
async def calc(
    make_settings: Callable[..., Settings], workspace: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Driver]:
    make_repo(
        workspace,
        "calc",
        {
            "calc.py": CALC,
            "test_calc.py": request.param,
            "pyproject.toml": "[project]\nname = 'calc'\n",
        },
    )
    app, driver = await start_driver(make_settings())
    try:
        yield driver
    finally:
        await app.__aexit__(None, None, None)


@pytest.mark.parametrize("calc", [PASSING], indirect=True)
async def test_passing_tests_are_on_both_cards(calc: Driver) -> None:
    repo = calc.services.workspace.path("calc")
    card = await calc.ask("fix the typo in calc.py of calc", "Apply?", 60)
    assert "🧪 2/2 passing (pytest, in the kennel)" in card, card
    assert "+    # the sum" in card
    # The test run added nothing to the diff (no cache, no bytecode).
    assert "calc.py +1 −1" in card and "pycache" not in card and ".pytest" not in card
    done = await calc.ask("yes", "Committed")
    assert "🧪 2/2 passing" in done
    assert git(repo, "status", "--porcelain") == ""
    assert "the sum" in git(repo, "show", "HEAD:calc.py")


@pytest.mark.parametrize("calc", [FAILING], indirect=True)
async def test_failing_tests_are_named_before_the_answer(calc: Driver) -> None:
    repo = calc.services.workspace.path("calc")
    base = git(repo, "rev-parse", "HEAD")
    before = tree_snapshot(repo)
    card = await calc.ask("fix the typo in calc.py of calc", "Apply?", 60)
    assert "🧪 1/3 failing (pytest, in the kennel):\n• test_calc.py::test_wrong" in card, card
    await calc.ask("no", "Discarded")
    assert git(repo, "rev-parse", "HEAD") == base
    assert tree_snapshot(repo) == before


async def test_a_repository_without_tests_says_so(fetch: Driver) -> None:
    card = await fetch.ask("fix the typo in README.md of demo", "Apply?")
    assert "🧪 tests: not run (no tests found)" in card
    await fetch.ask("no", "Discarded")


@pytest.mark.parametrize("calc", [PASSING], indirect=True)
async def test_the_repository_can_name_its_own_test_command(calc: Driver, workspace: Path) -> None:
    repo = workspace / "calc"
    (repo / ".fetch.yaml").write_text("test_command: echo '5 passed in 0.01s'; exit 0\n")
    git(repo, "add", ".fetch.yaml")
    git(repo, "commit", "-qm", "test command")
    card = await calc.ask("fix the typo in calc.py of calc", "Apply?", 60)
    assert "🧪 5/5 passing (custom: echo '5 passed in 0.01s'; exit 0" in card, card
    await calc.ask("no", "Discarded")
