"""Tests before approval: find how a repository is tested, run that INSIDE the kennel
(the same backend as the harness, no relay, so no network), bounded in time and output,
and read the counts from the runner's summary.

Never on the host: the repository's tests are the repository's code, as untrusted as
what the harness wrote. Detection reads only file names and ``package.json`` (the
working tree, as the harness left it); the command can be overridden per repository
(``repos.<name>.test_command`` in config.yaml, or ``test_command`` in the committed
``.fetch.yaml``), and is run with ``sh -c`` inside the kennel.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import sys
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import KennelError
from kennel.base import ExecSpec, Kennel, KennelProcess

TAIL_LINES = 80  # of the runner's output, kept for the failures and the exit note
NO_RUNNER = 127  # the shell's "command not found": the kennel lacks the tool
STATE_NAME = "tests"  # the kennel's state folder for test runs (beside the harnesses')


@dataclass(frozen=True, slots=True)
class SuitePlan:
    kind: str  # python | node | go | rust | custom
    command: str  # a shell command, run with sh -c in the repository
    tool: str  # what the owner reads: pytest, npm test, go test, cargo test, custom


@dataclass(slots=True)
class SuiteResult:
    plan: SuitePlan | None
    ran: bool = False
    passed: int | None = None
    failed: int | None = None
    failures: list[str] = field(default_factory=list)  # test names, the first few
    exit_code: int | None = None
    note: str = ""  # why it did not run, or how it ended (timeout)
    seconds: float = 0.0
    # The last lines of the runner's output (at most TAIL_LINES): a pull request shows them.
    output: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Ran and passed: what ``semi`` autonomy needs before it commits unasked (what
        a test run writes is never part of the change: it is read before they run)."""
        return self.ran and self.exit_code == 0 and not self.failed

    def line(self) -> str:
        """For the diff card and the completion card: one line, and the first failing
        tests' names below it."""
        return self._counts()

    def _counts(self) -> str:
        if not self.ran:
            return f"🧪 tests: not run ({self.note})"
        tool = f" ({self.plan.tool}, in the kennel)" if self.plan else ""
        if self.note:
            return f"🧪 tests failed: {self.note}{tool}"
        total = (self.passed or 0) + (self.failed or 0)
        if self.failed:
            names = "".join(f"\n• {n[:80]}" for n in self.failures[:3])
            more = f"\n• …and {len(self.failures) - 3} more" if len(self.failures) > 3 else ""
            return f"🧪 {self.failed}/{total} failing{tool}{':' if names else ''}{names}{more}"
        if self.exit_code == 0:
            return (
                f"🧪 {self.passed}/{total} passing{tool}"
                if self.passed is not None
                else f"🧪 tests passed{tool}"
            )
        return f"🧪 tests failed (exit code {self.exit_code}){tool}"


# -- finding the command -----------------------------------------------------------------
def _python_command(interpreters: tuple[str, ...]) -> str:
    """pytest when the kennel's Python has it, else unittest; a clear word when no Python.
    No bytecode and no cache: the test run must not add files to the diff."""
    tries = " ".join(shlex.quote(p) for p in interpreters)
    return (
        f'for py in {tries}; do command -v "$py" >/dev/null 2>&1 && '
        "\"$py\" -c 'import pytest' >/dev/null 2>&1 && "
        'exec "$py" -m pytest -q -rfE -p no:cacheprovider; done; '
        f'for py in {tries}; do command -v "$py" >/dev/null 2>&1 && '
        'exec "$py" -m unittest discover -v; done; '
        f"echo 'fetch: no python in the kennel' >&2; exit {NO_RUNNER}"
    )


def _is_python(root: Path) -> bool:
    markers = ("pyproject.toml", "setup.py", "setup.cfg", "pytest.ini", "tox.ini")
    if any((root / m).is_file() for m in markers):
        return True
    if any(root.glob("requirements*.txt")):
        return True
    return (
        any(root.glob("test_*.py"))
        or any(root.glob("tests/test_*.py"))
        or any(root.glob("*/test_*.py"))
    )


def _node_test(root: Path) -> str | None:
    try:
        data = json.loads((root / "package.json").read_text(encoding="utf-8")[:1_000_000])
    except (OSError, ValueError):
        return None
    scripts = data.get("scripts") if isinstance(data, dict) else None
    test = scripts.get("test") if isinstance(scripts, dict) else None
    if not isinstance(test, str) or "no test specified" in test:
        return None
    return test


def detect(root: Path, override: str | None = None, kennel: str = "local") -> SuitePlan | None:
    """How ``root`` is tested, or None when nothing says so. ``kennel`` names the backend:
    the bubblewrap and local kennels see this Python (its prefix is bound read-only), a
    container only its own."""
    if override:
        return SuitePlan("custom", override, "custom: " + override[:40])
    if (root / "package.json").is_file() and _node_test(root) is not None:
        return SuitePlan("node", "npm test --silent", "npm test")
    if (root / "go.mod").is_file():
        return SuitePlan("go", "go test ./...", "go test")
    if (root / "Cargo.toml").is_file():
        return SuitePlan("rust", "cargo test --offline", "cargo test")
    if _is_python(root):
        # A virtual environment the repository's setup made (orchestrator/task/setup.py)
        # first: it has the dependencies. Its python is a link to the kennel's own.
        own = ("python3",) if kennel == "docker" else ("python3", sys.executable)
        interpreters = (".venv/bin/python", "venv/bin/python", *own)
        return SuitePlan("python", _python_command(interpreters), "pytest")
    return None


def project_type(root: Path) -> str:
    """What /project shows: the type detection sees (``none`` when it sees no tests)."""
    plan = detect(root)
    return plan.kind if plan is not None else "unknown"


# -- reading the counts ------------------------------------------------------------------
_PYTEST_COUNT = re.compile(r"(\d+) (passed|failed|errors?|error)\b")
_PYTEST_FAIL = re.compile(r"^(?:FAILED|ERROR) ([^\s(]\S*)")
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in")
_UNITTEST_FAILED = re.compile(r"^FAILED \((.*)\)")
_UNITTEST_FAIL = re.compile(r"^(?:FAIL|ERROR): (\S+)")
_JEST = re.compile(r"^Tests:\s+(.*)$")
_JEST_PART = re.compile(r"(\d+) (passed|failed)")
_TAP = re.compile(r"^#\s*(pass|fail)\s+(\d+)")
_TAP_FAIL = re.compile(r"^not ok \d+ - (.+)$")
_NODE_FAIL = re.compile(r"^\s*✖ (.+?)(?: \(\d.*\))?$")
_GO_FAIL = re.compile(r"^\s*--- FAIL: (\S+)")
_GO_PASS = re.compile(r"^\s*--- PASS: (\S+)")
_CARGO = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed")
_CARGO_FAIL = re.compile(r"^test (\S+) \.\.\. FAILED")


def parse(kind: str, lines: list[str], result: SuiteResult) -> None:
    """Fill ``passed``, ``failed`` and ``failures`` from the runner's output (best
    effort: when nothing matches, the exit code alone says pass or fail)."""
    passed = failed = 0
    seen = False
    names: list[str] = []

    def name(found: str) -> None:
        if found not in names:
            names.append(found)

    for raw in lines:
        line = raw.rstrip()
        if m := _PYTEST_FAIL.match(line):
            name(m.group(1))
        if (
            line.lstrip("= ").startswith(tuple("0123456789"))
            and " in " in line
            and ("passed" in line or "failed" in line or "error" in line)
        ):
            seen = True
            passed = failed = 0
            for count, what in _PYTEST_COUNT.findall(line):
                if what == "passed":
                    passed += int(count)
                else:
                    failed += int(count)
        if m := _UNITTEST_RAN.match(line):
            seen, passed, failed = True, int(m.group(1)), 0
        if (m := _UNITTEST_FAILED.match(line)) and seen:
            failed = sum(int(n) for n in re.findall(r"=(\d+)", m.group(1)))
            passed -= failed
        if m := _UNITTEST_FAIL.match(line):
            name(m.group(1))
        if m := _JEST.match(line):
            seen, passed, failed = True, 0, 0
            for count, what in _JEST_PART.findall(m.group(1)):
                passed += int(count) if what == "passed" else 0
                failed += int(count) if what == "failed" else 0
        if m := _TAP.match(line):
            seen = True
            if m.group(1) == "pass":
                passed = int(m.group(2))
            else:
                failed = int(m.group(2))
        if m := _TAP_FAIL.match(line):
            name(m.group(1))
        if m := _NODE_FAIL.match(line):
            name(m.group(1))
        if m := _GO_FAIL.match(line):
            name(m.group(1))
            if kind == "go":
                seen, failed = True, failed + 1
        if (m := _GO_PASS.match(line)) and kind == "go":
            seen, passed = True, passed + 1
        if m := _CARGO_FAIL.match(line):
            name(m.group(1))
    if kind == "rust":
        totals = [(int(a), int(b)) for a, b in (m.groups() for m in map(_CARGO.match, lines) if m)]
        if totals:
            seen, passed, failed = True, sum(a for a, _ in totals), sum(b for _, b in totals)
    if seen:
        result.passed, result.failed = max(passed, 0), failed
    result.failures = names


# -- running -----------------------------------------------------------------------------
async def run(
    kennel: Kennel,
    repo: Path,
    plan: SuitePlan,
    *,
    limit_seconds: float,
    on_start: Callable[[KennelProcess, asyncio.Timeout], Awaitable[None]] | None = None,
    grace: float = 2.0,
    shown_at: Path | None = None,
) -> SuiteResult:
    """Run ``plan`` in ``repo`` inside ``kennel``: no relay (no network), ``limit_seconds``
    seconds at most, the last ``TAIL_LINES`` lines kept. ``on_start`` receives the process
    and its time limit (so /pause and /stop reach it like the harness's, and a pause holds
    this limit as it holds the harness's)."""
    result = SuiteResult(plan)
    # ``repo`` is the run's tree (its layer); ``shown_at``: the owner's repository path,
    # where the backend may show it (as the harness saw it).
    layout = await asyncio.to_thread(kennel.layout, repo, STATE_NAME, shown_at)
    env = {
        "PATH": layout.path_env,
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "CI": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "NO_COLOR": "1",
        "CARGO_TERM_COLOR": "never",
        "npm_config_offline": "true",
    }
    spec = ExecSpec(("sh", "-c", plan.command + " 2>&1"), env, repo, layout)
    started = time.monotonic()
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    lines: list[str] = []
    try:
        proc = await kennel.exec(spec)
    except KennelError as err:
        result.note = f"the kennel could not start them: {err}"
        return result
    try:
        async with asyncio.timeout(limit_seconds) as deadline:
            if on_start is not None:
                await on_start(proc, deadline)
            async for line in proc.lines():
                tail.append(line[:500])
                if len(lines) < 20_000:  # enough for every summary; bounded
                    lines.append(line[:500])
            code = await proc.wait()
    except TimeoutError:
        await proc.terminate(grace)
        result.ran, result.note = True, f"still running after {limit_seconds:.0f} s, stopped"
        result.output = list(tail)
        result.seconds = time.monotonic() - started
        parse(plan.kind, lines, result)
        return result
    except BaseException:
        await proc.terminate(grace)
        raise
    await proc.terminate(grace)  # anything the tests left running in the kennel
    result.seconds = time.monotonic() - started
    result.exit_code = code
    result.output = list(tail)
    joined = "\n".join(list(tail)[-5:]) + proc.stderr_tail()
    if code == NO_RUNNER and ("fetch: no python" in joined or "not found" in joined):
        what = {
            "python": "no python in the kennel",
            "node": "no npm in the kennel",
            "go": "no go in the kennel",
            "rust": "no cargo in the kennel",
        }
        result.note = what.get(plan.kind, f"`{plan.command[:40]}` not found in the kennel")
        return result
    result.ran = True
    parse(plan.kind, lines, result)
    if plan.kind == "python" and (code == 5 or (result.passed == 0 and not result.failed)):
        # pytest collected nothing (exit 5); unittest ran 0 tests
        result.ran, result.note = False, "no tests found"
    elif code != 0 and not result.failed:
        # The runner failed without a failing test (a collection error, a crash).
        result.note = f"exit code {code}: " + (list(tail)[-1][:120] if tail else "")
    return result


__all__ = ["SuitePlan", "SuiteResult", "detect", "parse", "project_type", "run"]
