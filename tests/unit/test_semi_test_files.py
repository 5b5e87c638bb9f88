"""Trust III, point 6: ``semi`` commits unasked only when the change leaves everything
that runs the tests untouched. A changed test, conftest, runner config, package script,
Makefile or CI file can print "42 passed" itself, so its own test result proves nothing:
the diff is asked (or, when another risk applies, goes to a branch), never committed
unasked, and the card says why."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.boundary.gitops import Change, FileStat, Repo
from orchestrator.task import testrun
from orchestrator.task.autonomy import (
    TESTS_RISK,
    _risky_path,
    deleted_paths,
    risks,
    route,
    steers_tests,
    unquote,
)
from orchestrator.task.testrun import SuitePlan, SuiteResult
from tests.conftest import make_repo

PY = SuitePlan("python", "pytest", "pytest")
FORGED = 'print("=== 42 passed in 0.01s ===")\n'

# One path at least for each kind of thing that steers a test run.
STEERING = (
    # test files by convention
    "tests/test_login.py",
    "test_calc.py",
    "pkg/calc_test.py",
    "testing.py",
    "src/test/java/AppTest.java",
    "web/__tests__/app.js",
    "web/src/app.spec.ts",
    "web/src/app.test.jsx",
    "spec/models/user_spec.rb",
    "server/handler_test.go",
    "web/src/__snapshots__/app.test.js.snap",
    "testdata/golden.json",
    "script/test",
    "run_tests.sh",
    # Python runner configuration and start-up hooks
    "conftest.py",
    "src/pkg/conftest.py",
    "pytest.ini",
    ".pytest.toml",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    "noxfile.py",
    "sitecustomize.py",
    "lib/usercustomize.py",
    "venv/lib/python3.12/site-packages/evil.pth",
    # Node: scripts, package-manager settings, runner and compiler configs
    "package.json",
    "web/package.json",
    ".npmrc",
    ".yarnrc.yml",
    "jest.config.js",
    "vitest.config.ts",
    "vite.config.mjs",
    ".mocharc.yml",
    "karma.conf.js",
    "playwright.config.ts",
    "babel.config.js",
    ".babelrc",
    "tsconfig.json",
    "tsconfig.test.json",
    "src/setupTests.js",
    "node_modules/jest/bin/jest.js",
    # Go, Rust
    "go.mod",
    "Cargo.toml",
    "build.rs",
    "crates/core/build.rs",
    ".cargo/config.toml",
    # make and other runners
    "Makefile",
    "makefile",
    "GNUmakefile",
    "rules/test.mk",
    "justfile",
    "Rakefile",
    "Gemfile",
    ".rspec",
    "gradlew",
    # CI
    ".github/workflows/ci.yml",
    ".github/actions/setup/action.yml",
    ".gitlab-ci.yml",
    ".ci/install.sh",
    "Jenkinsfile",
    ".circleci/config.yml",
    # the repository's Fetch settings (test_command)
    ".fetch.yaml",
    # a case-insensitive file system finds these too
    "Tests/Test_Login.py",
    "CONFTEST.PY",
)
ORDINARY = (
    "src/app.py",
    "README.md",
    "lib/__init__.py",
    "src/latest.py",
    "src/contest.py",
    "src/attestation.py",
    "docs/testing-guide.md",
    "web/src/protest_spec_parser.js",
    "src/pkg/setup.py.bak",
)


def _change(*paths: str, added: int = 1, removed: int = 1) -> Change:
    return Change(
        "a" * 40,
        "b" * 40,
        "",
        tuple(FileStat(p, added, removed, False) for p in paths),
    )


def _forged_pass() -> SuiteResult:
    """What the runner reported for a test script that prints its own pass count."""
    result = SuiteResult(PY, ran=True, exit_code=0)
    testrun.parse("python", [FORGED.split('"')[1]], result)
    return result


def _semi(change: Change, tests: SuiteResult | None, deleted: list[str] | None = None) -> str:
    return route("semi", tests, risks(change, 10, deleted or []), True).how


def test_a_changed_test_printing_42_passed_is_asked_and_the_card_says_why() -> None:
    tests = _forged_pass()
    assert tests.ok and tests.passed == 42  # the forged count reads as a pass
    found = risks(_change("tests/test_x.py"), 10, [])
    assert found == ["changes how tests run (tests/test_x.py): I won't trust its own test result"]
    decided = route("semi", tests, found, True)
    assert decided.how == "ask"
    assert decided.why == "semi, but it changes how tests run"


def test_a_change_to_code_only_still_commits_when_the_tests_pass() -> None:
    assert risks(_change("src/app.py"), 10, []) == []
    decided = route("semi", _forged_pass(), [], True)
    assert decided.how == "commit"
    assert _semi(_change(*ORDINARY), _forged_pass()) == "commit"


@pytest.mark.parametrize("path", STEERING)
def test_everything_that_runs_tests_is_named_and_never_committed_unasked(path: str) -> None:
    assert steers_tests([path]) == [path]
    how = _semi(_change(path), _forged_pass())
    # A path that is already risky (CI, build, dependencies) goes to a branch, as before;
    # every other one is asked. Neither moves the owner's branch unasked.
    assert how == ("branch" if _risky_path(path) else "ask"), path


@pytest.mark.parametrize("path", ORDINARY)
def test_ordinary_code_is_not_test_machinery(path: str) -> None:
    assert steers_tests([path]) == []


def test_a_mixed_change_is_asked_and_names_only_the_steering_paths() -> None:
    change = _change("src/app.py", "tests/test_login.py", "conftest.py", "pytest.ini", "e2e/a.js")
    assert steers_tests(f.path for f in change.files) == [
        "tests/test_login.py",
        "conftest.py",
        "pytest.ini",
        "e2e/a.js",
    ]
    [risk] = risks(change, 10, [])
    assert risk == (
        "changes how tests run (tests/test_login.py, conftest.py, pytest.ini …): "
        "I won't trust its own test result"
    )
    assert _semi(change, _forged_pass()) == "ask"


def test_a_path_that_is_already_risky_is_named_once_and_goes_to_a_branch() -> None:
    found = risks(_change("package.json", "src/app.py"), 10, [])
    assert found == ["touches package.json (CI, build or dependencies)"]
    assert route("semi", _forged_pass(), found, True).how == "branch"
    both = risks(_change("Makefile", "tests/test_x.py"), 10, [])
    assert both == [
        "touches Makefile (CI, build or dependencies)",
        "changes how tests run (tests/test_x.py): I won't trust its own test result",
    ]
    decided = route("semi", _forged_pass(), both, True)
    assert decided.how == "branch" and "changes how tests run (tests/test_x.py)" in decided.why


def test_removed_and_mode_changed_test_files_count() -> None:
    removed = _change("tests/test_x.py", added=0, removed=12)
    assert _semi(removed, _forged_pass()) == "ask"
    # git's own record of the deletion adds its own risk: a branch, never a commit.
    assert _semi(removed, _forged_pass(), ["tests/test_x.py"]) == "branch"
    mode_only = _change("conftest.py", added=0, removed=0)
    assert _semi(mode_only, _forged_pass()) == "ask"


def test_quoted_paths_are_read_as_their_names() -> None:
    assert unquote('"tests/t\\303\\253st_login.py"') == "tests/tëst_login.py"
    assert unquote('"a\\tb\\\\c\\"d\\ne.py"') == 'a\tb\\c"d\ne.py'
    assert unquote("plain name.py") == "plain name.py"
    quoted = '"tests/t\\303\\253st_login.py"'
    assert steers_tests([quoted]) == [quoted]
    # The card shows the name when it prints cleanly, else git's quoted form.
    assert risks(_change(quoted), 10, []) == [
        "changes how tests run (tests/tëst_login.py): I won't trust its own test result"
    ]
    hidden = '"src/\\342\\200\\256yp.tsetnoc/conftest.py"'  # a right-to-left override
    assert risks(_change(hidden), 10, []) == [
        f"changes how tests run ({hidden}): I won't trust its own test result"
    ]
    assert _semi(_change(hidden), _forged_pass()) == "ask"
    for name in ('"x\\tconftest.py"', '"caf\\303\\251/\\"tests\\"/a.py"'):
        assert steers_tests([name]) == [], name
    assert steers_tests(['"caf\\303\\251/tests/a.py"']) == ['"caf\\303\\251/tests/a.py"']
    assert _semi(_change('"src/caf\\303\\251.py"'), _forged_pass()) == "commit"


def test_the_other_levels_route_as_before() -> None:
    found = risks(_change("tests/test_x.py"), 10, [])
    # supervised asks everything; the card gains the note that the tests prove nothing.
    assert route("supervised", _forged_pass(), found, True).how == "ask"
    # autonomous puts everything on a branch; the merge card says why it is risky.
    decided = route("autonomous", _forged_pass(), found, True)
    assert decided.how == "branch" and TESTS_RISK in decided.why
    assert route("autonomous", _forged_pass(), [], True).why == "autonomous"
    assert route("semi", _forged_pass(), found, False).how == "ask"


def test_semi_still_asks_for_its_other_reasons() -> None:
    failing = SuiteResult(PY, ran=True, passed=0, failed=1, exit_code=1)
    assert route("semi", failing, [], True).why == "semi, but the tests fail"
    assert route("semi", None, [], True).why == "semi, but no tests ran"
    found = risks(_change("tests/test_x.py"), 10, [])
    assert route("semi", None, found, True).how == "ask"


def test_a_real_diff_with_tests_changed_added_removed_and_chmodded(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path,
        "calc",
        {
            "src/app.py": "X = 1\n",
            "tests/test_app.py": "def test_x():\n    assert True\n",
            "tests/test_old.py": "def test_old():\n    pass\n",
            "conftest.py": "",
        },
    )
    (repo / "src/app.py").write_text("X = 2\n")
    assert risks(Repo(repo).change(), 10, []) == []
    (repo / "tests/test_app.py").write_text(FORGED)
    (repo / "tests/test_old.py").unlink()
    (repo / "tests/t\u00ebst_new.py").write_text(FORGED)
    os.chmod(repo / "conftest.py", 0o755)
    change = Repo(repo).change()
    paths = [f.path for f in change.files]
    assert '"tests/t\\303\\253st_new.py"' in paths and "conftest.py" in paths
    assert sorted(steers_tests(paths)) == sorted(p for p in paths if p != "src/app.py")
    deleted = deleted_paths(Repo(repo), change)
    assert deleted == ["tests/test_old.py"]
    found = risks(change, 10, deleted)
    assert found[0] == "deletes tests/test_old.py"
    assert found[1].startswith("changes how tests run (conftest.py, tests/test_app.py")
    assert route("semi", _forged_pass(), found, True).how == "branch"
    # Without the deletion: asked.
    (repo / "tests/test_old.py").write_text("def test_old():\n    pass\n")
    change = Repo(repo).change()
    found = risks(change, 10, deleted_paths(Repo(repo), change))
    assert [r.split(" (")[0] for r in found] == [TESTS_RISK]
    assert route("semi", _forged_pass(), found, True).how == "ask"
