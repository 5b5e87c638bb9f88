"""Copilot CLI signed in with a GitHub token (issue 24, 1), through real parts: `fetch
login copilot` keeps the token on the host (0600; a classic ghp_ token is refused with the
reason); the real Copilot CLI in the bwrap kennel holds only the run's secret as its
GitHub token and talks to the Copilot API through the relay; the Copilot API of the test's
own sees the real token as the bearer; GitHub's own MCP server is not reached; nothing the
owner holds is in any file of the run; a revoked token ends the task with one line (a
GitHub token has nothing to refresh)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from orchestrator.config import Settings
from tests.conftest import Driver, start_driver
from tests.fakes.model_server import EditFile, ScriptedModelServer, Text
from tests.fakes.require import require_binary
from tests.harnesses.test_codex_signin import files_hold

pytestmark = pytest.mark.real
ROOT = Path(__file__).resolve().parents[2]
TOKEN = "github_pat_11REALTOKENOFTHETEST_9b3e0c7d1a"
MODEL = {
    "id": "gpt-5.4",
    "name": "GPT-5.4",
    "object": "model",
    "vendor": "OpenAI",
    "version": "gpt-5.4",
    "preview": False,
    "model_picker_enabled": True,
    "policy": {"state": "enabled"},
    "capabilities": {
        "family": "gpt-5.4",
        "object": "model_capabilities",
        "type": "chat",
        "tokenizer": "o200k_base",
        "limits": {
            "max_prompt_tokens": 128000,
            "max_output_tokens": 16000,
            "max_context_window_tokens": 200000,
        },
        "supports": {"streaming": True, "tool_calls": True, "parallel_tool_calls": True},
    },
    "supported_endpoints": ["/chat/completions", "/responses"],
}


@dataclass
class CopilotApi:
    """The Copilot API of the test's own: the model list, and turns played by the scripted
    model; only the owner's token passes."""

    model: ScriptedModelServer
    valid: set[str] = field(default_factory=lambda: {TOKEN})
    seen: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    url: str = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.seen.append((request.method, request.path, headers))
        if headers.get("authorization", "").removeprefix("Bearer ") not in self.valid:
            return web.json_response({"message": "Bad credentials"}, status=401)
        if request.path == "/models":
            return web.json_response({"object": "list", "data": [MODEL]})
        if request.path not in ("/responses", "/chat/completions"):
            return web.json_response({"message": "Not Found"}, status=404)
        async with (
            aiohttp.ClientSession() as client,
            client.post(
                f"{self.model.url}/v1{request.path}",
                data=await request.read(),
                headers={"Content-Type": "application/json"},
            ) as answer,
        ):
            body = await answer.read()
        return web.Response(body=body, status=answer.status, content_type="text/event-stream")


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture
async def api(model: ScriptedModelServer) -> AsyncIterator[CopilotApi]:
    found = CopilotApi(model)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", found.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = next(a[1] for a in runner.addresses if isinstance(a, tuple))
    found.url = f"http://127.0.0.1:{port}"
    try:
        yield found
    finally:
        await runner.cleanup()


def _login(home: Path, token: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", ""), "FETCH_HOME": str(home), "HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "login", "copilot"],
        input=token + "\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )


@pytest.fixture
async def copilot(
    api: CopilotApi,
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[Driver]:
    require_binary("copilot")
    unpacked = Path.home() / ".cache" / "copilot"
    if (unpacked / "pkg").is_dir():  # the host's unpacked package (235 MB, 1-6 s)
        monkeypatch.setenv("COPILOT_PKG_CACHE_HOME", str(unpacked))
    done = _login(tmp_path / "home", TOKEN)
    assert done.returncode == 0, done.stderr
    kept = tmp_path / "home" / "credentials" / "github.json"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    settings = make_settings(FETCH_HARNESS="copilot", FETCH__PROVIDERS__GITHUB__BASE_URL=api.url)
    assert settings.providers["openai"].api_key is None
    app, driver = await start_driver(settings)
    try:
        yield driver
    finally:
        await app.__aexit__(None, None, None)


async def test_copilot_runs_on_the_github_sign_in_the_cli_never_has_it(
    copilot: Driver, api: CopilotApi, model: ScriptedModelServer, tmp_path: Path
) -> None:
    status = await copilot.ask("/harness", "copilot")
    assert "GitHub sign-in" in status and TOKEN not in status, status
    # apply_patch replaces whole lines.
    model.script(
        EditFile("README.md", "Teh quick brown fox.", "The quick brown fox."), Text("Fixed.")
    )
    card = await copilot.ask("fix the typo in README.md of demo", "Apply? (yes/no)", 180)
    assert "+The quick" in card
    turns = [h for m, p, h in api.seen if p in ("/responses", "/chat/completions")]
    assert turns, api.seen
    for _, called, headers in api.seen:
        assert headers.get("authorization") == f"Bearer {TOKEN}", (called, headers)
        assert not called.startswith("/mcp"), called  # GitHub's own MCP server: refused
    home = tmp_path / "home"
    assert files_hold(home, [TOKEN], home / "credentials") == []
    await copilot.ask("no", "Discarded")


async def test_a_revoked_github_token_ends_the_task_in_one_line(
    copilot: Driver, api: CopilotApi
) -> None:
    api.valid = set()
    failed = await copilot.ask("fix the typo in README.md of demo", "failed", 180)
    assert TOKEN not in failed and "Traceback" not in failed, failed
    assert "GitHub token refused: run fetch login copilot" in " ".join(failed.split()), failed


def test_login_refuses_a_classic_token_with_the_reason(tmp_path: Path) -> None:
    done = _login(tmp_path / "home", "ghp_classicTokenOfTheTest000000000000000")
    assert done.returncode == 2 and "classic personal access tokens" in done.stderr
    assert not (tmp_path / "home" / "credentials" / "github.json").exists()
