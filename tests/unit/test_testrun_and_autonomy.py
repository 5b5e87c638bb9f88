"""Tests before approval and autonomy, the pure parts: detection, the runners' summaries,
the card line, what is risky, where a diff goes, and the autonomy layer rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.boundary.gitops import Change, FileStat
from orchestrator.permissions.layers import Layer, resolve
from orchestrator.task import testrun
from orchestrator.task.autonomy import risks, route
from orchestrator.task.testrun import SuitePlan, SuiteResult

PY = SuitePlan("python", "pytest", "pytest")


def parsed(kind: str, text: str, code: int = 1) -> SuiteResult:
    result = SuiteResult(SuitePlan(kind, "x", kind), ran=True, exit_code=code)
    testrun.parse(kind, text.splitlines(), result)
    return result


def test_detection_by_project_files(tmp_path: Path) -> None:
    assert testrun.detect(tmp_path) is None
    (tmp_path / "test_x.py").write_text("")
    plan = testrun.detect(tmp_path, kennel="docker")
    assert plan is not None and plan.kind == "python" and "pytest" in plan.command
    # A container: its own Python only, after a venv the repository's setup made.
    assert "for py in .venv/bin/python venv/bin/python python3;" in plan.command
    (tmp_path / "go.mod").write_text("module x\n")
    assert testrun.detect(tmp_path).kind == "go"  # type: ignore[union-attr]
    (tmp_path / "package.json").write_text('{"scripts": {"test": "jest"}}')
    assert testrun.detect(tmp_path).tool == "npm test"  # type: ignore[union-attr]
    (tmp_path / "package.json").write_text(
        '{"scripts": {"test": "echo \\"Error: no test specified\\" && exit 1"}}'
    )
    assert testrun.detect(tmp_path).kind == "go"  # type: ignore[union-attr]
    assert testrun.detect(tmp_path, "make check").command == "make check"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("kind", "text", "code", "passed", "failed", "names"),
    [
        (
            "python",
            "FAILED tests/test_a.py::test_x - assert 1 == 2\n"
            "======= 1 failed, 11 passed in 0.52s =======",
            1,
            11,
            1,
            ["tests/test_a.py::test_x"],
        ),
        ("python", "12 passed in 0.10s", 0, 12, 0, []),
        (
            "python",
            "FAIL: test_b (test_m.T.test_b)\nRan 3 tests in 0.001s\nFAILED (failures=1)",
            1,
            2,
            1,
            ["test_b"],
        ),
        ("node", "# tests 3\n# pass 2\n# fail 1\nnot ok 2 - subtracts", 1, 2, 1, ["subtracts"]),
        ("node", "Tests:       1 failed, 4 passed, 5 total", 1, 4, 1, []),
        ("go", "--- FAIL: TestAdd (0.00s)\n--- PASS: TestSub (0.00s)\nFAIL", 1, 1, 1, ["TestAdd"]),
        (
            "rust",
            "test tests::add ... FAILED\ntest result: FAILED. 3 passed; 1 failed; 0 ignored",
            101,
            3,
            1,
            ["tests::add"],
        ),
    ],
)
def test_summaries_are_read(
    kind: str, text: str, code: int, passed: int, failed: int, names: list[str]
) -> None:
    result = parsed(kind, text, code)
    assert (result.passed, result.failed, result.failures) == (passed, failed, names)


def test_the_card_line() -> None:
    ok = SuiteResult(PY, ran=True, passed=12, failed=0, exit_code=0)
    assert ok.line() == "🧪 12/12 passing (pytest, in the kennel)" and ok.ok
    bad = SuiteResult(PY, ran=True, passed=1, failed=4, exit_code=1, failures=["a", "b", "c", "d"])
    assert (
        bad.line().splitlines()
        == ["🧪 4/5 failing (pytest, in the kennel):", "• a", "• b", "• c", "• …and 1 more"]
        and not bad.ok
    )
    assert (
        SuiteResult(None, note="no python in the kennel").line()
        == "🧪 tests: not run (no python in the kennel)"
    )
    unparsed = SuiteResult(PY, ran=True, exit_code=2, note="exit code 2: boom")
    assert "failed" in unparsed.line() and not unparsed.ok


def _change(*paths: str) -> Change:
    return Change("a" * 40, "b" * 40, "", tuple(FileStat(p, 1, 1, False) for p in paths))


def test_what_is_risky() -> None:
    assert risks(_change("src/app.py"), 10, []) == []
    assert (
        "touches .github/workflows/ci.yml" in risks(_change(".github/workflows/ci.yml"), 10, [])[0]
    )
    for path in (
        "Makefile",
        "Dockerfile",
        "web/package.json",
        "requirements-dev.txt",
        "pyproject.toml",
        "go.mod",
        "Cargo.toml",
    ):
        assert risks(_change(path), 10, []), path
    assert risks(_change(*[f"f{i}.py" for i in range(11)]), 10, [])[0].startswith("11 files")
    assert risks(_change("old.py"), 10, ["old.py"]) == ["deletes old.py"]


def test_where_a_diff_goes() -> None:
    passing = SuiteResult(PY, ran=True, passed=1, failed=0, exit_code=0)
    failing = SuiteResult(PY, ran=True, passed=0, failed=1, exit_code=1)
    assert route("supervised", passing, [], True).how == "ask"
    assert route("semi", passing, [], True).how == "commit"
    assert route("semi", failing, [], True).how == "ask"
    assert route("semi", None, [], True).how == "ask"
    assert route("semi", passing, ["touches Makefile"], True).how == "branch"
    assert route("autonomous", failing, [], True).how == "branch"
    # Only the owner's own tasks get more than supervised.
    assert route("autonomous", passing, [], False).how == "ask"


def test_a_committed_layer_only_lowers_autonomy_and_binds_the_chat() -> None:
    base = Layer("global", "config", {"approvals.autonomy": "semi"})
    raise_it = Layer(
        "repo (committed)", ".fetch.yaml", {"approvals.autonomy": "autonomous"}, narrow_only=True
    )
    lower_it = Layer(
        "repo (committed)", ".fetch.yaml", {"approvals.autonomy": "supervised"}, narrow_only=True
    )
    chat = Layer("chat", "chats.yaml", {"approvals.autonomy": "autonomous"})
    widened = resolve("approvals.autonomy", [base, raise_it])
    assert widened.value == "semi" and "IGNORED" in widened.explain()
    assert resolve("approvals.autonomy", [base, lower_it]).value == "supervised"
    # The chat comes after the repository, but the committed cap still binds it.
    assert resolve("approvals.autonomy", [base, lower_it, chat]).value == "supervised"
    assert resolve("approvals.autonomy", [base, chat]).value == "autonomous"
