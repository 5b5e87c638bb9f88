"""Autonomy: how a finished diff reaches the repository.

* ``supervised`` (the default): every diff is asked; nothing moves until the owner's yes,
  bound to that exact diff (orchestrator/task/approvals.py).
* ``semi``: committed to the owner's branch without asking when the tests ran in the
  kennel and passed, no risky path is touched and nothing that runs the tests changed
  (``steers_tests``: a changed test or runner config could print "42 passed" itself,
  so its own result proves nothing); asked otherwise.
* ``autonomous``: committed on a branch ``fetch/task-<id>``; the owner's branch does not
  move until they answer ``merge`` (or drop it with ``drop``).

Risky changes (many files, deletions, CI or build config, dependency manifests) never
land unasked: they go to a branch (semi, autonomous) or are asked (supervised), and the
card says why. Only the owner's own tasks get more than ``supervised``; the level is the
layered ``approvals.autonomy`` (global < repository < chat, the committed ``.fetch.yaml``
only lowering it; ``/autonomy`` sets it for a chat).

Branches are written with plumbing through the hardened host git: ``commit-tree`` and a
compare-and-swap ``update-ref``; a merge is a fast-forward of the owner's branch (CAS on
the base the diff was made on) and ``reset --hard`` of a tree Fetch just proved clean:
never a checkout, so no hook, filter or attribute of the repository runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatch, fnmatchcase

from core.errors import GitError
from orchestrator.boundary.gitops import AUTHOR, ZERO, Change, Repo
from orchestrator.permissions.layers import AUTONOMY
from orchestrator.task.testrun import SuiteResult

LEVELS = AUTONOMY
BRANCH_PREFIX = "fetch/task-"
DIFF_TRAILER = "Fetch-Diff: "
# CI, build and dependency files: a change here runs on machines beyond this one.
RISKY_PATHS = (
    ".github/**",
    ".gitlab-ci.yml",
    ".circleci/**",
    ".travis.yml",
    "Jenkinsfile",
    "azure-pipelines.yml",
    ".buildkite/**",
    "Makefile",
    "makefile",
    "GNUmakefile",
    "*.mk",
    "Dockerfile",
    "*.Dockerfile",
    "Dockerfile.*",
    "docker-compose*.yml",
    "compose*.yml",
    "package.json",
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "requirements*.txt",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "Pipfile",
    "Pipfile.lock",
    "poetry.lock",
    "uv.lock",
    "go.mod",
    "go.sum",
    "Cargo.toml",
    "Cargo.lock",
    "Gemfile",
    "Gemfile.lock",
    "build.gradle",
    "build.gradle.kts",
    "pom.xml",
    "CMakeLists.txt",
    "meson.build",
    "BUILD",
    "BUILD.bazel",
    "WORKSPACE",
    ".pre-commit-config.yaml",
    ".fetch.yaml",
    ".gitattributes",
    ".gitmodules",
)


# What steers how the tests run or what they print. A change to any of these makes the
# test result the change's own word, so ``semi`` asks. Matched lower-cased (a
# case-insensitive file system finds ``Conftest.py`` too); a false match only asks.
# Folders anywhere in the path: tests, their data and expectations, what runners load.
TEST_DIRS = frozenset(
    {
        "test",
        "tests",
        "testing",
        "__tests__",
        "__mocks__",
        "__snapshots__",
        "snapshots",
        "__fixtures__",
        "fixtures",
        "testdata",
        "spec",
        "specs",
        "e2e",
        "cypress",
        "node_modules",
        ".ci",
        ".github",
        ".gitlab",
        ".circleci",
        ".buildkite",
        ".cargo",
        ".mvn",
    }
)
# File names anywhere.
TEST_NAMES = (
    # test files by the common conventions (pytest, unittest, jest, mocha, go, rspec...)
    "test",
    "tests",
    "test*.py",
    "test_*",
    "test-*",
    "test.*",
    "tests.*",
    "*_test.*",
    "*_tests.*",
    "*-test.*",
    "*_spec.*",
    "*-spec.*",
    "*.test.*",
    "*.spec.*",
    "*.snap",
    "run_test*",
    "run-test*",
    "runtest*",
    # Python: pytest's and tox's configuration, and what Python imports at start-up
    "conftest.py",
    "pytest.ini",
    ".pytest.ini",
    "pytest.toml",
    ".pytest.toml",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    "noxfile.py",
    "sitecustomize.py",
    "usercustomize.py",
    "*.pth",
    # Node: package scripts, the package manager's settings, runner and compiler configs
    "package.json",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pnpmfile.cjs",
    "jest.config.*",
    "jest.setup.*",
    "setuptests.*",
    "vitest.config.*",
    "vitest.setup.*",
    "vitest.workspace.*",
    "vite.config.*",
    ".mocharc*",
    "karma.conf.*",
    "playwright.config.*",
    "cypress.config.*",
    "ava.config.*",
    "babel.config.*",
    ".babelrc*",
    ".swcrc",
    "tsconfig*.json",
    "deno.json",
    "deno.jsonc",
    # Go, Rust
    "go.mod",
    "go.work",
    "cargo.toml",
    "build.rs",
    "rust-toolchain",
    "rust-toolchain.toml",
    # make and the other runners a test command names
    "makefile",
    "gnumakefile",
    "*.mk",
    "justfile",
    ".justfile",
    "taskfile.yml",
    "taskfile.yaml",
    "rakefile",
    "gemfile",
    ".rspec",
    "pom.xml",
    "mvnw",
    "build.gradle",
    "build.gradle.kts",
    "settings.gradle",
    "settings.gradle.kts",
    "gradlew",
    "phpunit.xml",
    "phpunit.xml.dist",
    "composer.json",
    # CI
    ".gitlab-ci.yml",
    ".travis.yml",
    "jenkinsfile",
    "azure-pipelines.yml",
    "bitbucket-pipelines.yml",
    ".drone.yml",
    # the repository's Fetch settings (test_command)
    ".fetch.yaml",
)
# The risk ``route`` reads as "the tests cannot vouch for this change".
TESTS_RISK = "changes how tests run"
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
_OCTAL = frozenset("01234567")


def unquote(path: str) -> str:
    """A path as git prints it (``"t\\303\\251st.py"`` when it holds special bytes) back
    to its name; bytes that are not UTF-8 stay as surrogates (``surrogateescape``)."""
    if len(path) < 2 or path[0] != '"' or path[-1] != '"':
        return path
    body, out, i = path[1:-1], bytearray(), 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
            digits = body[i + 1 : i + 4]
            if len(digits) == 3 and set(digits) <= _OCTAL and digits[0] in "0123":
                out.append(int(digits, 8))
                i += 4
                continue
        out += body[i].encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _shown(path: str) -> str:
    """For a card: the name itself when it prints cleanly, else as git quotes it."""
    name = unquote(path)
    return name if name.isprintable() else path


def _risky_path(path: str) -> bool:
    path = unquote(path)
    name = path.rsplit("/", 1)[-1]
    return any(fnmatch(path, p) or ("/" not in p and fnmatch(name, p)) for p in RISKY_PATHS)


def _test_path(path: str) -> bool:
    *dirs, name = unquote(path).lower().split("/")
    return any(d in TEST_DIRS for d in dirs) or any(fnmatchcase(name, p) for p in TEST_NAMES)


def steers_tests(paths: Iterable[str]) -> list[str]:
    """The changed ``paths`` (as git prints them) that can steer how the tests run or
    what they print: test files, their data, runner and package configs, Makefiles, CI,
    ``.fetch.yaml``, Python's start-up hooks. Whatever such a change's tests report is
    the change's own word."""
    return [p for p in paths if _test_path(p)]


def deleted_paths(repo: Repo, change: Change) -> list[str]:
    """Files ``change`` deletes, from git's own record of the two trees."""
    out = repo.run(
        "diff-tree",
        "-r",
        "--no-renames",
        "--diff-filter=D",
        "--name-only",
        "--no-ext-diff",
        change.base_sha,
        change.tree_sha,
    )
    return [line for line in out.splitlines() if line]


def risks(change: Change, max_files: int, deleted: list[str]) -> list[str]:
    """Why ``change`` is risky, in words for the card; empty when it is not."""
    found: list[str] = []
    if len(change.files) > max_files:
        found.append(f"{len(change.files)} files (more than {max_files})")
    if deleted:
        found.append("deletes " + ", ".join(deleted[:3]) + (" …" if len(deleted) > 3 else ""))
    touched = [f.path for f in change.files if _risky_path(f.path)]
    if touched:
        found.append(
            "touches "
            + ", ".join(touched[:3])
            + (" …" if len(touched) > 3 else "")
            + " (CI, build or dependencies)"
        )
    # Named once: a path already listed above (package.json, Makefile...) never commits
    # unasked anyway.
    steering = [p for p in steers_tests(f.path for f in change.files) if not _risky_path(p)]
    if steering:
        shown = [_shown(p) for p in steering]
        found.append(
            f"{TESTS_RISK} ("
            + ", ".join(shown[:3])
            + (" …" if len(shown) > 3 else "")
            + "): I won't trust its own test result"
        )
    return found


def _about_tests(risk: str) -> bool:
    return risk.startswith(TESTS_RISK)


@dataclass(frozen=True, slots=True)
class Route:
    how: str  # ask | commit | branch
    why: str  # for the card: what the level and the checks decided


def route(level: str, tests: SuiteResult | None, risky: list[str], owner_task: bool) -> Route:
    if level not in LEVELS or level == "supervised" or not owner_task:
        why = "supervised" if owner_task else "supervised (not the owner's task)"
        return Route("ask", why)
    # A risky change goes to a branch; so does every autonomous one. Under semi, a change
    # that only steers its own tests is asked: their result is its own word.
    if risky and (level == "autonomous" or not all(_about_tests(r) for r in risky)):
        return Route("branch", f"{level}, but risky: " + "; ".join(risky))
    if level == "autonomous":
        return Route("branch", "autonomous")
    if risky:
        return Route("ask", "semi, but it changes how tests run")
    if tests is not None and tests.ok:
        return Route("commit", "semi: the tests pass and no risky path is touched")
    reason = "no tests ran" if tests is None or not tests.ran else "the tests fail"
    return Route("ask", f"semi, but {reason}")


# -- branches ------------------------------------------------------------------------------
def branch_name(task_id: int) -> str:
    return f"{BRANCH_PREFIX}{task_id}"


def branch_message(message: str, change: Change) -> str:
    """The task branch commit's exact message: ``message`` and the diff it carries (so
    a merge, and start-up recovery, can tell it is still Fetch's commit for that diff)."""
    return f"{message}\n{DIFF_TRAILER}{change.digest}"


def commit_to_branch(repo: Repo, change: Change, task_id: int, message: str) -> str:
    """Commit exactly ``change`` on a new branch with the exact ``message``
    (``branch_message``; the owner's branch and working tree do not move: the change
    was made from the kennel's data into git objects). Returns the commit."""
    sha = repo.run("commit-tree", change.tree_sha, "-p", change.base_sha, "-m", message, env=AUTHOR)
    # CAS against "no such ref": an existing branch of that name is never overwritten.
    repo.run(
        "update-ref", "-m", "fetch: task branch", f"refs/heads/{branch_name(task_id)}", sha, ZERO
    )
    return sha


def branch_tip(repo: Repo, task_id: int) -> str | None:
    try:
        return repo.run(
            "rev-parse",
            "--verify",
            "--end-of-options",
            f"refs/heads/{branch_name(task_id)}^{{commit}}",
        )
    except GitError:
        return None


def verify_branch(repo: Repo, task_id: int, diff_hash: str, base_sha: str) -> str:
    """The branch tip, if it is still exactly the commit Fetch made for that diff."""
    tip = branch_tip(repo, task_id)
    if tip is None:
        raise GitError(f"the branch {branch_name(task_id)} is gone")
    parent = repo.run("rev-parse", "--verify", "--end-of-options", f"{tip}^")
    body = repo.run("log", "-1", "--no-show-signature", "--format=%B", "--end-of-options", tip)
    if parent != base_sha or f"{DIFF_TRAILER}{diff_hash}" not in body:
        raise GitError(
            f"the branch {branch_name(task_id)} moved since I made it; merge it "
            "by hand if you want it"
        )
    return tip


@dataclass(frozen=True, slots=True)
class Merge:
    """A task branch proven mergeable: its tip, tree and exact message (the journal's
    intent names the commit by them, orchestrator/task/recovery.py)."""

    tip: str
    tree: str
    message: str


def prepare_merge(repo: Repo, task_id: int, diff_hash: str, base_sha: str) -> Merge:
    """Refuse unless the branch is still Fetch's commit for that diff, the owner's branch
    is still at its base, and the working tree is clean."""
    tip = verify_branch(repo, task_id, diff_hash, base_sha)
    if not repo.is_clean():
        raise GitError("there are uncommitted changes; merge needs a clean tree")
    if repo.head() != base_sha:
        raise GitError(
            f"{repo.branch()} moved since the task started; merge {branch_name(task_id)} by hand"
        )
    raw = repo.run("cat-file", "commit", tip, strip=False)
    header, _, message = raw.partition("\n\n")
    tree = next(
        (line.split(" ", 1)[1] for line in header.splitlines() if line.startswith("tree ")), ""
    )
    return Merge(tip, tree, message)


def finish_merge(repo: Repo, task_id: int, merge: Merge, base_sha: str) -> str:
    """Fast-forward: the files and the index go to the tip's tree first (a two-tree
    read-tree: no checkout, no hook), then the owner's branch moves with a
    compare-and-swap on the base, then the task branch is deleted. A kill between the
    first two steps leaves the change in the working tree, nothing committed; after the
    second, the journal finds the commit at start-up."""
    repo.run("read-tree", "-u", "-m", base_sha, merge.tip)
    repo.run(
        "update-ref", "-m", f"fetch: merge {branch_name(task_id)}", "HEAD", merge.tip, base_sha
    )
    repo.run("update-ref", "-d", f"refs/heads/{branch_name(task_id)}", merge.tip)
    return merge.tip


def drop_branch(repo: Repo, task_id: int) -> str | None:
    """Delete the task branch (CAS on its tip); None when it was already gone."""
    tip = branch_tip(repo, task_id)
    if tip is None:
        return None
    repo.run("update-ref", "-d", f"refs/heads/{branch_name(task_id)}", tip)
    return tip


__all__ = [
    "LEVELS",
    "Route",
    "branch_message",
    "branch_name",
    "commit_to_branch",
    "deleted_paths",
    "drop_branch",
    "finish_merge",
    "prepare_merge",
    "risks",
    "route",
    "steers_tests",
    "unquote",
    "verify_branch",
]
