"""The real ``fetch`` command in a pseudo-terminal, driven with pexpect as a person would:
type a line, read what it prints (replies are prefixed ``fetch> ``), press Ctrl-C."""

from __future__ import annotations

import asyncio
import io
import os
import re
import shutil
import signal
import subprocess
import sysconfig
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pexpect
import pytest

from tests.fakes.model_server import EditFile, Hang, ScriptedModelServer, Text
from tests.fakes.require import require_binary

STARTUP = 60.0  # a cold interpreter importing the app can take a few seconds
FAKE_KEY = "sk-ant-fake-cli-test-key"
MINUS = "\u2212"  # the diff summary counts removals with U+2212, not a hyphen
# Variables of the machine running the tests that would change what fetch does.
_SCRUB = ("FETCH_", "ANTHROPIC_", "OPENAI_", "GEMINI_", "CLAUDE_")


def _fetch_executable() -> str:
    """The console script ``pip install -e .`` made, next to this interpreter if possible."""
    beside = Path(sysconfig.get_path("scripts")) / "fetch"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("fetch")
    if found is None:
        pytest.fail(
            "the `fetch` command is not installed; run pip install -e '.[test]'", pytrace=False
        )
    return found


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB)}
    env.update(FETCH_HOME=str(home), TERM="dumb", PYTHONUNBUFFERED="1", FETCH_KENNEL="bwrap")
    # The web pages' listener on a port of its own (port 0: the kernel picks a free one),
    # never 8787: tests and a Fetch the machine's owner runs must not collide.
    env.update(FETCH__HTTP__PORT="0")
    env.update(extra)
    return env


def _git(repo: Path, *args: str) -> str:
    # The working tree belongs to the sandbox's uid (kennel/owner.py), not to this user.
    return subprocess.run(
        ["git", "-c", "safe.directory=*", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


class Fetch:
    """One running ``fetch`` process and everything it printed so far."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.transcript = io.StringIO()
        self.child = pexpect.spawn(
            _fetch_executable(),
            [],
            env=env,
            cwd=str(cwd),
            encoding="utf-8",
            codec_errors="replace",
            timeout=STARTUP,
            dimensions=(60, 400),
        )
        self.child.logfile_read = self.transcript
        self.child.setwinsize(60, 400)

    def _fail(self, what: str) -> AssertionError:
        return AssertionError(f"{what}; fetch printed:\n{self.transcript.getvalue()}")

    def type(self, line: str) -> None:
        self.child.sendline(line)

    def expect(self, text: str, timeout: float = 30) -> str:
        """Wait for ``text`` (exact); return everything printed since the last match."""
        try:
            self.child.expect_exact(text, timeout=timeout)
        except pexpect.TIMEOUT:
            raise self._fail(f"no {text!r} within {timeout}s") from None
        except pexpect.EOF:
            raise self._fail(f"fetch exited before printing {text!r}") from None
        return f"{self.child.before}{self.child.after}"

    def expect_re(self, pattern: str, timeout: float = 30) -> re.Match[str]:
        try:
            self.child.expect(pattern, timeout=timeout)
        except pexpect.TIMEOUT:
            raise self._fail(f"nothing matching {pattern!r} within {timeout}s") from None
        except pexpect.EOF:
            raise self._fail(f"fetch exited before printing {pattern!r}") from None
        match = self.child.match
        assert isinstance(match, re.Match)
        return match

    def expect_exit(self, timeout: float, after: str) -> int:
        """Wait for the process to end; its exit code (a signal death fails)."""
        try:
            self.child.expect(pexpect.EOF, timeout=timeout)
        except pexpect.TIMEOUT:
            raise self._fail(f"fetch still running {timeout}s after {after}") from None
        self.child.close()
        assert self.child.signalstatus is None, self._fail(
            f"fetch died of signal {self.child.signalstatus}"
        )
        code = self.child.exitstatus
        assert isinstance(code, int)
        return code

    def ready(self) -> str:
        self.expect("🐕 Fetch is ready", STARTUP)
        return self.expect("Ctrl-C quits", 10)

    def quit_with_ctrl_c(self) -> None:
        self.child.sendintr()
        pressed = time.monotonic()
        self.expect("stopping", 10)
        code = self.expect_exit(10, "Ctrl-C")
        assert code == 0, self._fail(f"exit code {code} after Ctrl-C")
        assert time.monotonic() - pressed < 10
        assert "fetch: stopped." in self.transcript.getvalue()
        assert "Traceback" not in self.transcript.getvalue(), self._fail("a traceback")

    def kill(self) -> None:
        """Cleanup: ask politely (SIGTERM lets fetch stop its sandboxed CLI), then force."""
        if not self.child.isalive():
            with suppress(Exception):
                self.child.close()
            return
        with suppress(Exception):
            self.child.kill(signal.SIGTERM)
            self.child.expect(pexpect.EOF, timeout=5)
        self.child.close(force=True)


@contextmanager
def running_fetch(env: dict[str, str], cwd: Path) -> Iterator[Fetch]:
    fetch = Fetch(env, cwd)
    try:
        yield fetch
    finally:
        fetch.kill()


def _demo_repo(home: Path) -> Path:
    return home / "workspace" / "demo"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fresh FETCH_HOME (resolved: fetch prints and uses resolved paths)."""
    return tmp_path.resolve() / "home"


def test_demo_flow_help_fix_commit_undo_ctrl_c(tmp_path: Path, home: Path) -> None:
    with running_fetch(_env(home), tmp_path) as fetch:
        banner = fetch.ready()
        assert "harness: demo" in banner
        assert f"workspace: {home / 'workspace'} (demo)" in banner
        repo = _demo_repo(home)
        original = _git(repo, "rev-parse", "HEAD")
        original_tree = _git(repo, "rev-parse", "HEAD^{tree}")
        readme = (repo / "README.md").read_text()
        assert "Teh quick" in readme

        fetch.type("/help")
        help_text = fetch.expect("/commands lists every command.")
        assert "fetch> 🐕 I'm Fetch." in help_text and "/undo reverts." in help_text

        fetch.type("fix the typo in README.md of demo")
        fetch.expect("On it (task #1)", 60)
        diff = fetch.expect("Apply? (yes/no)", 60)
        assert f"README.md +1 {MINUS}1" in diff
        assert re.search(r"-.*Teh quick", diff) and re.search(r"\+.*The quick", diff), diff

        fetch.type("yes")
        sha = fetch.expect_re(r"Committed ([0-9a-f]{7,40}) to demo").group(1)
        fetch.expect("Say undo to revert.")
        head = _git(repo, "rev-parse", "HEAD")
        assert head.startswith(sha)
        assert _git(repo, "rev-parse", "HEAD^") == original
        assert "fix the typo in README.md of demo" in _git(repo, "log", "-1", "--format=%B")
        assert "+The quick brown fox" in _git(repo, "show", "HEAD")
        assert "The quick" in (repo / "README.md").read_text()
        assert _git(repo, "status", "--porcelain") == ""

        fetch.type("/undo")
        reverted = fetch.expect_re(r"Reverted ([0-9a-f]{7,40}) in demo").group(1)
        assert head.startswith(reverted)
        fetch.expect("the files are as they were before it.")
        assert _git(repo, "rev-parse", "HEAD^") == head
        assert _git(repo, "rev-parse", "HEAD^{tree}") == original_tree
        assert (repo / "README.md").read_text() == readme
        assert _git(repo, "status", "--porcelain") == ""

        fetch.quit_with_ctrl_c()


def test_config_error_names_file_and_key_exits_2(tmp_path: Path) -> None:
    config = tmp_path.resolve() / "bad-config.yaml"
    config.write_text('model:\n  max_iterations: "lots"\n', encoding="utf-8")
    env = _env(tmp_path.resolve() / "home", FETCH_CONFIG=str(config))
    with running_fetch(env, tmp_path) as fetch:
        code = fetch.expect_exit(STARTUP, "start-up with a bad config")
        out = fetch.transcript.getvalue()
        assert code == 2, out
        assert str(config) in out and "model.max_iterations" in out, out
        assert "lots" in out, out
        assert "Traceback" not in out, out
        assert "Fetch is ready" not in out, out


async def _expect(fetch: Fetch, text: str, within: float = 30) -> str:
    """``Fetch.expect`` off the event loop, so the fake model server keeps serving."""
    return await asyncio.to_thread(fetch.expect, text, within)


async def test_claude_code_flow_fix_commit_undo_ctrl_c(tmp_path: Path, home: Path) -> None:
    require_binary("claude")
    repo = _demo_repo(home)
    async with ScriptedModelServer() as srv:
        srv.script(EditFile(str(repo / "README.md"), "Teh quick", "The quick"), Text("Fixed."))
        env = _env(
            home,
            FETCH_HARNESS="claude-code",
            ANTHROPIC_BASE_URL=srv.url,
            ANTHROPIC_API_KEY=FAKE_KEY,
        )
        with running_fetch(env, tmp_path) as fetch:
            await asyncio.to_thread(fetch.ready)
            assert "harness: claude-code" in fetch.transcript.getvalue()
            original = _git(repo, "rev-parse", "HEAD")
            original_tree = _git(repo, "rev-parse", "HEAD^{tree}")
            readme = (repo / "README.md").read_text()

            fetch.type("fix the typo in README.md of demo")
            await _expect(fetch, "On it (task #1)", 60)
            diff = await _expect(fetch, "Apply? (yes/no)", 120)
            assert f"README.md +1 {MINUS}1" in diff and "Fixed." in diff
            assert re.search(r"\+.*The quick", diff), diff
            assert not srv.pending and not srv.failures, (srv.pending, srv.failures)

            fetch.type("yes")
            match = await asyncio.to_thread(fetch.expect_re, r"Committed ([0-9a-f]{7,40})")
            head = _git(repo, "rev-parse", "HEAD")
            assert head.startswith(match.group(1))
            assert _git(repo, "rev-parse", "HEAD^") == original
            assert "The quick" in (repo / "README.md").read_text()

            fetch.type("/undo")
            await _expect(fetch, "Reverted")
            assert _git(repo, "rev-parse", "HEAD^{tree}") == original_tree
            assert (repo / "README.md").read_text() == readme
            assert _git(repo, "status", "--porcelain") == ""

            await asyncio.to_thread(fetch.quit_with_ctrl_c)
        calls = [r for r in srv.model_requests if r.path.endswith("/v1/messages")]
        assert calls and all(r.headers.get("x-api-key") == FAKE_KEY for r in calls)


async def test_stop_mid_run_with_claude_code(tmp_path: Path, home: Path) -> None:
    require_binary("claude")
    async with ScriptedModelServer() as srv:
        srv.script(Hang(60))
        env = _env(
            home,
            FETCH_HARNESS="claude-code",
            ANTHROPIC_BASE_URL=srv.url,
            ANTHROPIC_API_KEY=FAKE_KEY,
        )
        with running_fetch(env, tmp_path) as fetch:
            await asyncio.to_thread(fetch.ready)
            repo = _demo_repo(home)
            readme = (repo / "README.md").read_text()

            fetch.type("fix the typo in README.md of demo")
            await _expect(fetch, "On it (task #1)", 60)
            await srv.wait_for_requests(1, timeout=60)
            while srv.pending:  # until the CLI's model call is the hung one
                await srv.wait_for_requests(len(srv.requests) + 1, timeout=60)

            typed = time.monotonic()
            fetch.type("/stop")
            reply = await _expect(fetch, "Stopped", 10)
            elapsed = time.monotonic() - typed
            assert elapsed < 2.0, fetch._fail(f"'Stopped' took {elapsed:.2f}s after /stop")
            assert "still alive" not in reply
            assert (repo / "README.md").read_text() == readme
            assert _git(repo, "status", "--porcelain") == ""
