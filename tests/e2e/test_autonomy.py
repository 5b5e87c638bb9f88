"""The three autonomy levels end to end: the demo harness in the real bwrap sandbox, the
repository's tests in the same sandbox, real git on the host.

supervised asks every diff; semi commits unasked only with passing tests and no risky
path; autonomous commits on fetch/task-<id> and the owner's branch moves only on
"merge". A risky change never lands unasked, and a committed .fetch.yaml can only lower
the level."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, git, make_repo, start_driver, tree_snapshot

CALC = "def add(a, b):\n    # teh sum of a and b\n    return a + b\n"
PASSING = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
FAILING = PASSING + "\n\ndef test_wrong():\n    assert add(2, 2) == 5\n"
PACKAGE = '{\n  "name": "calc",\n  "description": "teh calculator"\n}\n'
PROMPT = "fix the typo in calc.py of calc"


@pytest.fixture
async def calc(
    make_settings: Callable[..., Settings], workspace: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Driver]:
    tests = getattr(request, "param", PASSING)
    make_repo(
        workspace,
        "calc",
        {
            "calc.py": CALC,
            "test_calc.py": tests,
            "package.json": PACKAGE,
            "pytest.ini": "[pytest]\n",
        },
    )
    app, driver = await start_driver(make_settings())
    try:
        yield driver
    finally:
        await app.__aexit__(None, None, None)


def branches(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split()


async def test_supervised_asks_and_says_so_for_a_risky_path(calc: Driver) -> None:
    repo = calc.services.workspace.path("calc")
    base = git(repo, "rev-parse", "HEAD")
    assert "supervised" in await calc.ask("/autonomy", "Autonomy")
    card = await calc.ask("fix the typo in package.json of calc", "Apply?", 60)
    assert "⚠️ Risky: touches package.json (CI, build or dependencies)." in card, card
    assert git(repo, "rev-parse", "HEAD") == base and branches(repo) == ["main"]
    await calc.ask("no", "Discarded")


async def test_semi_commits_unasked_when_the_tests_pass(calc: Driver) -> None:
    repo = calc.services.workspace.path("calc")
    base = git(repo, "rev-parse", "HEAD")
    assert "semi" in await calc.ask("/autonomy semi", "Autonomy set")
    done = await calc.ask(PROMPT, "Committed", 60)
    assert "without asking\n(semi: the tests pass and no risky path is touched)" in done
    assert "🧪 1/1 passing" in done
    assert git(repo, "rev-parse", "HEAD^") == base
    assert "the sum" in git(repo, "show", "HEAD:calc.py")
    assert "Committed-by: Fetch, unasked" in git(repo, "log", "-1", "--format=%B")
    assert git(repo, "status", "--porcelain") == "" and branches(repo) == ["main"]
    assert "ALERT" in await calc.ask("/status", "Fetch ·")
    assert "Reverted" in await calc.ask("/undo", "Reverted")
    # The chat's level outlives a restart of the conversation's state (chats.yaml).
    assert "semi" in await calc.ask("/autonomy", "Autonomy")


@pytest.mark.parametrize("calc", [FAILING], indirect=True)
async def test_semi_asks_when_the_tests_fail(calc: Driver) -> None:
    repo = calc.services.workspace.path("calc")
    base = git(repo, "rev-parse", "HEAD")
    await calc.ask("/autonomy semi", "Autonomy set")
    card = await calc.ask(PROMPT, "Apply?", 60)
    assert "autonomy: semi, but the tests fail, so I ask." in card, card
    assert "🧪 1/2 failing" in card
    assert git(repo, "rev-parse", "HEAD") == base
    await calc.ask("yes", "Committed")
    assert git(repo, "rev-parse", "HEAD^") == base


async def test_semi_sends_a_risky_change_to_a_branch(calc: Driver) -> None:
    repo = calc.services.workspace.path("calc")
    base = git(repo, "rev-parse", "HEAD")
    before = tree_snapshot(repo)
    await calc.ask("/autonomy semi", "Autonomy set")
    card = await calc.ask("fix the typo in package.json of calc", "fetch/task-", 60)
    assert "semi, but risky: touches package.json" in card, card
    assert git(repo, "rev-parse", "HEAD") == base and tree_snapshot(repo) == before
    dropped = await calc.ask("drop", "Dropped")
    assert "fetch/task-" in dropped
    assert branches(repo) == ["main"] and git(repo, "rev-parse", "HEAD") == base


async def test_autonomous_commits_on_a_branch_and_merge_moves_main(calc: Driver) -> None:
    repo = calc.services.workspace.path("calc")
    base = git(repo, "rev-parse", "HEAD")
    before = tree_snapshot(repo)
    await calc.ask("/autonomy autonomous", "Autonomy set")
    card = await calc.ask(PROMPT, "merge · drop · keep", 60)
    assert "on the branch fetch/task-1\n(autonomous); main is unchanged" in card, card
    assert "🧪 1/1 passing" in card and "+    # the sum" in card
    # The owner's branch and files have not moved; the branch holds exactly the diff.
    assert git(repo, "rev-parse", "HEAD") == base and tree_snapshot(repo) == before
    assert git(repo, "rev-parse", "fetch/task-1^") == base
    assert "the sum" in git(repo, "show", "fetch/task-1:calc.py")
    assert "GUARDING" in await calc.ask("/status", "Fetch ·")
    merged = await calc.ask("merge", "Merged")
    tip = git(repo, "rev-parse", "HEAD")
    assert tip[:7] in merged and git(repo, "rev-parse", "HEAD^") == base
    assert "the sum" in (repo / "calc.py").read_text()
    assert git(repo, "status", "--porcelain") == "" and branches(repo) == ["main"]
    assert "Reverted" in await calc.ask("/undo", "Reverted")
    assert tree_snapshot(repo) == before


async def test_autonomous_drop_leaves_main_as_it_was(calc: Driver) -> None:
    repo = calc.services.workspace.path("calc")
    base = git(repo, "rev-parse", "HEAD")
    before = tree_snapshot(repo)
    await calc.ask("/autonomy autonomous", "Autonomy set")
    await calc.ask(PROMPT, "merge · drop · keep", 60)
    assert "fetch/task-1" in branches(repo)
    await calc.ask("drop", "Dropped")
    assert branches(repo) == ["main"]
    assert git(repo, "rev-parse", "HEAD") == base and tree_snapshot(repo) == before


async def test_merge_refuses_when_main_moved(calc: Driver) -> None:
    repo = calc.services.workspace.path("calc")
    await calc.ask("/autonomy autonomous", "Autonomy set")
    await calc.ask(PROMPT, "merge · drop · keep", 60)
    (repo / "other.txt").write_text("the owner's own commit\n")
    git(repo, "add", "other.txt")
    git(repo, "commit", "-qm", "owner")
    moved = git(repo, "rev-parse", "HEAD")
    refused = await calc.ask("merge", "Not merged")
    assert "moved" in refused
    assert git(repo, "rev-parse", "HEAD") == moved
    await calc.ask("keep", "stays")
    assert "fetch/task-1" in branches(repo)


async def test_a_committed_fetch_yaml_only_lowers_autonomy(calc: Driver) -> None:
    repo = calc.services.workspace.path("calc")
    (repo / ".fetch.yaml").write_text("approvals:\n  autonomy: supervised\n")
    git(repo, "add", ".fetch.yaml")
    git(repo, "commit", "-qm", "cap")
    base = git(repo, "rev-parse", "HEAD")
    await calc.ask("/workspace calc", "calc")
    said = await calc.ask("/autonomy autonomous", "Autonomy set")
    assert "caps it at supervised" in said, said
    await calc.ask(PROMPT, "Apply?", 60)
    assert git(repo, "rev-parse", "HEAD") == base and branches(repo) == ["main"]
    await calc.ask("no", "Discarded")


async def test_project_shows_type_branch_status_and_task(calc: Driver) -> None:
    repo = calc.services.workspace.path("calc")
    assert "No project chosen" in await calc.ask("/project", "project")
    await calc.ask("/workspace calc", "calc")
    shown = await calc.ask("/project", "📁 calc")
    head = git(repo, "rev-parse", "HEAD")
    for line in (
        "📁 calc · python",
        f"branch: main @ {head[:7]}",
        "status: clean",
        "tests: pytest",
        "autonomy: supervised",
        "task: none",
    ):
        assert line in shown, shown
    (repo / "wip.txt").write_text("the owner's work\n")
    assert "status: dirty (1 file(s))" in await calc.ask("/project", "📁 calc")
    (repo / "wip.txt").unlink()
    await calc.ask(PROMPT, "Apply?", 60)
    assert "task: a diff waits for your answer" in await calc.ask("/project", "📁 calc")
    await calc.ask("no", "Discarded")


async def test_semi_never_commits_files_the_test_run_wrote(calc: Driver) -> None:
    repo = calc.services.workspace.path("calc")
    (repo / ".fetch.yaml").write_text(
        "test_command: echo '1 passed in 0.01s' && echo junk > junk.txt\n"
    )
    git(repo, "add", ".fetch.yaml")
    git(repo, "commit", "-qm", "tests that write")
    base = git(repo, "rev-parse", "HEAD")
    await calc.ask("/autonomy semi", "Autonomy set")
    # The change is read from the run's layer before the tests run: what they write is
    # never part of it, never shown as the harness's, never committed.
    done = await calc.ask(PROMPT, "without asking", 60)
    assert "junk.txt" not in done
    assert git(repo, "rev-parse", "HEAD^") == base
    assert "junk.txt" not in git(repo, "show", "--stat", "--format=", "HEAD")
    assert not (repo / "junk.txt").exists()
    assert git(repo, "status", "--porcelain") == ""
