"""The loop with the real Gemini CLI, Codex and Copilot CLI, headless, in the local kennel,
reaching the scripted fake only through Fetch's model relay (Claude Code has its own file,
``test_claude_loop.py``)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from kennel.relay import PLACEHOLDER_KEY
from orchestrator.config import Settings
from tests.conftest import Driver, git, start_driver, tree_snapshot, works_in
from tests.fakes.model_server import (
    EditFile,
    Error,
    Hang,
    Recorded,
    ScriptedModelServer,
    Text,
    WriteFile,
)
from tests.fakes.require import require_binary

pytestmark = pytest.mark.real
REAL_KEY = "sk-canary-real-key-91c2"
PROMPT = "fix the typo in README.md of demo"


@dataclass(frozen=True)
class Cli:
    binary: str
    provider: str
    key_env: str
    upstream_suffix: str  # the vendor's default base URL shape: OpenAI's ends in /v1
    relay_path: str  # a model turn as the relay logs it (the path the CLI asked for)
    executables: frozenset[str]  # what must be running mid-request (besides the launcher)

    def credential(self, request: Recorded) -> str | None:
        if self.provider == "gemini":
            return request.headers.get("x-goog-api-key")
        return request.headers.get("authorization", "").removeprefix("Bearer ") or None


CLIS = {
    "gemini-cli": Cli(
        "gemini",
        "gemini",
        "GEMINI_API_KEY",
        "",
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
        frozenset({"node"}),
    ),
    # Native children: codex's musl binary, copilot's copilot-linux-x64.
    "codex": Cli(
        "codex", "openai", "OPENAI_API_KEY", "/v1", "/responses", frozenset({"node", "codex"})
    ),
    "copilot": Cli(
        "copilot",
        "openai",
        "OPENAI_API_KEY",
        "/v1",
        "/chat/completions",
        frozenset({"node", "copilot"}),
    ),
}


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
) -> AsyncIterator[tuple[str, Driver]]:
    name: str = request.param
    cli = CLIS[name]
    require_binary(cli.binary)
    unpacked = Path.home() / ".cache" / "copilot"
    if name == "copilot" and (unpacked / "pkg").is_dir():
        # The adapter's passthrough: reuse the host's unpacked package (235 MB, 1-6 s).
        monkeypatch.setenv("COPILOT_PKG_CACHE_HOME", str(unpacked))
    settings = make_settings(
        **{
            "FETCH_HARNESS": name,
            f"FETCH__PROVIDERS__{cli.provider.upper()}__BASE_URL": model.url + cli.upstream_suffix,
            cli.key_env: REAL_KEY,
        }
    )
    app, driver = await start_driver(settings)
    try:
        yield name, driver
    finally:
        await app.__aexit__(None, None, None)


def cli_processes(repo: Path) -> dict[int, str]:
    """Live processes started for this test's repo (found by their working folder, so
    native children count too; the sandbox shows them no FETCH_HOME), as pid ->
    executable name."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            exe = os.path.basename(os.readlink(f"/proc/{entry}/exe"))
        except (OSError, IndexError):
            continue
        inside = works_in(repo, cwd)
        if inside and state != "Z":  # a zombie has ended already
            found[int(entry)] = exe
    return found


async def test_fix_typo_approve_commit(
    fetch_cli: tuple[str, Driver], model: ScriptedModelServer
) -> None:
    name, fetch = fetch_cli
    cli = CLIS[name]
    repo = fetch.services.workspace.path("demo")
    original = git(repo, "rev-parse", "HEAD")
    # apply_patch (codex, copilot) replaces whole lines, so the edit names the whole line.
    model.script(
        EditFile("README.md", "Teh quick brown fox.", "The quick brown fox."),
        Text("Fixed the typo in README.md."),
    )
    started = time.monotonic()
    diff = await fetch.ask(PROMPT, "Apply? (yes/no)", 90)
    print(f"\n{name}: task to diff in {time.monotonic() - started:.1f} s")
    assert "README.md +1 −1" in diff and "+The quick" in diff
    assert "Fixed the typo" in diff  # what the CLI said, relayed
    done = await fetch.ask("yes", "Committed")
    assert git(repo, "rev-parse", "HEAD")[:7] in done
    assert git(repo, "rev-parse", "HEAD^") == original
    assert (repo / "README.md").read_text().startswith("# demo\n\nThe quick")
    assert not model.pending and not model.mismatches and not model.failures

    # Every model call went through the relay: the fake saw the real key, injected there,
    # on the vendor's own path (the relay appends the CLI's path to the upstream base).
    calls = model.model_requests
    assert len(calls) == 2 and len(model.requests) == 2
    assert all(cli.credential(r) == REAL_KEY for r in calls)
    assert all(PLACEHOLDER_KEY not in json.dumps(r.headers) for r in calls)
    assert {r.path for r in calls} == {cli.upstream_suffix + cli.relay_path}
    log = fetch.services.settings.home_dir / "relay.jsonl"
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["harness"], e["path"], e["status"]) for e in entries] == [
        (name, cli.relay_path, 200)
    ] * 2
    assert sum(e["tokens_out"] for e in entries) > 0
    # No credential ever reached the CLI's own state.
    for path in (fetch.services.settings.home_dir / "kennel").rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert REAL_KEY.encode() not in path.read_bytes(), path


async def test_edit_outside_the_workspace_is_denied(
    fetch_cli: tuple[str, Driver], model: ScriptedModelServer, tmp_path: Path
) -> None:
    """Every CLI exits 0 after a refused write; Fetch must still call it a failure."""
    _, fetch = fetch_cli
    outside = tmp_path / "outside.txt"
    model.script(WriteFile(str(outside), "pwned\n"), Text("All done."))
    reply = await fetch.ask(PROMPT, "Task #1 failed", 90)
    assert "failed" in reply and "denied" in reply, reply
    assert "Apply?" not in reply
    assert not outside.exists()
    assert "ALERT" in await fetch.ask("/status", "Fetch ·")


async def test_stop_kills_every_process_within_two_seconds(
    fetch_cli: tuple[str, Driver], model: ScriptedModelServer
) -> None:
    name, fetch = fetch_cli
    repo = fetch.services.workspace.path("demo")
    before = tree_snapshot(repo)
    model.script(Hang(60))
    await fetch.ask(PROMPT, "On it")
    async with asyncio.timeout(60):
        while not model.model_requests:
            await model.wait_for_requests(len(model.requests) + 1, timeout=60)
    running = cli_processes(repo)
    assert CLIS[name].executables <= set(running.values()), running
    started = time.monotonic()
    reply = await fetch.ask("/stop", "Stopped", 10)
    took = time.monotonic() - started
    print(f"\n{name}: /stop answered in {took:.2f} s: {reply}")
    assert took < 2.0
    assert "still alive" not in reply
    assert cli_processes(repo) == {}
    assert tree_snapshot(repo) == before
    assert "ALERT" in await fetch.ask("/status", "Fetch ·")


async def test_auth_error_fails_fast_and_clearly(
    fetch_cli: tuple[str, Driver], model: ScriptedModelServer
) -> None:
    name, fetch = fetch_cli
    model.default = Error(401, "invalid api key")  # every call, retries included
    started = time.monotonic()
    reply = await fetch.ask(PROMPT, "failed", 60)
    took = time.monotonic() - started
    print(f"\n{name}: 401 reported in {took:.1f} s after {len(model.model_requests)} call(s)")
    assert "Task #1 failed" in reply and "demo is unchanged" in reply
    assert "401" in reply, reply
    # Retries are off; copilot has no knob for them and tries 3 times (~1 s apart).
    assert len(model.model_requests) == (3 if name == "copilot" else 1)
    assert took < 20
    assert "ALERT" in await fetch.ask("/status", "Fetch ·")
