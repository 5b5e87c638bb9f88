"""Gemini CLI signed in with Google (issue 24, 1), through real parts: `fetch login
gemini-cli` keeps the owner's oauth_creds.json on the host (0600); the real Gemini CLI in
the bwrap kennel holds only the run's secret as its access token and talks to Code Assist
through the relay; the Code Assist backend of the test's own sees the real access token as
a bearer (no API key), refreshed by Fetch at a token endpoint of the test's own before it
expires and again when the backend refuses it; a revoked refresh token ends the task with
one line. Nothing the owner holds is in any file of the run."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from kennel.relay_signin_google import gemini_oauth_client
from orchestrator.config import Settings
from tests.conftest import Driver, start_driver
from tests.fakes.model_server import EditFile, ScriptedModelServer, Text
from tests.fakes.require import require_binary
from tests.harnesses.test_codex_signin import files_hold

pytestmark = pytest.mark.real
ROOT = Path(__file__).resolve().parents[2]
PROJECT = "proj-of-the-owner-3"


@dataclass
class CodeAssist:
    """Code Assist (``/v1internal:…``) and Google's token endpoint, of the test's own: only
    the access token now valid passes; turns are played by the scripted model (Gemini's
    dialect, unwrapped from and wrapped back into Code Assist's envelope)."""

    model: ScriptedModelServer
    valid: set[str] = field(default_factory=set)
    # refresh token -> the access tokens it is good for, in turn (Google keeps the refresh
    # token: the same one refreshes again)
    grants: dict[str, list[str]] = field(default_factory=dict)
    revoke_after_turns: int = 0
    seen: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    refreshes: list[dict[str, str]] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)
    url: str = ""
    turns: int = 0

    async def token(self, request: web.Request) -> web.Response:
        form = {k: str(v) for k, v in (await request.post()).items()}
        self.refreshes.append(form)
        client_id, client_secret = gemini_oauth_client()
        if (form.get("client_id"), form.get("client_secret")) != (client_id, client_secret):
            self.bad.append("the refresh is not Gemini CLI's client")
        left = self.grants.get(form.get("refresh_token", ""), [])
        access = left.pop(0) if left else None
        if form.get("grant_type") != "refresh_token" or access is None:
            return web.json_response({"error": "invalid_grant"}, status=400)
        self.valid = {access}
        return web.json_response({"access_token": access, "expires_in": 3599})

    async def backend(self, request: web.Request) -> web.StreamResponse:
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.seen.append((request.path, headers))
        if "x-goog-api-key" in headers or "key" in request.query:
            self.bad.append(f"{request.path}: an API key was sent")
        if headers.get("authorization", "").removeprefix("Bearer ") not in self.valid:
            return web.json_response(
                {"error": {"code": 401, "status": "UNAUTHENTICATED"}}, status=401
            )
        method = request.path.rpartition(":")[2]
        body = await request.json()
        if method == "loadCodeAssist":
            return web.json_response(
                {"currentTier": {"id": "standard-tier"}, "cloudaicompanionProject": PROJECT}
            )
        if method != "streamGenerateContent" or body.get("project") != PROJECT:
            return web.json_response({"error": {"code": 404}}, status=404)
        self.turns += 1
        if self.revoke_after_turns and self.turns >= self.revoke_after_turns:
            self.valid = set()
        url = f"{self.model.url}/v1beta/models/{body['model']}:streamGenerateContent?alt=sse"
        async with (
            aiohttp.ClientSession() as client,
            client.post(url, json=body["request"]) as answer,
        ):
            text = await answer.text()
        wrapped = "".join(
            f"data: {json.dumps({'response': json.loads(line[6:])})}\n\n"
            for line in text.splitlines()
            if line.startswith("data: ")
        )
        return web.Response(text=wrapped, content_type="text/event-stream")


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


@pytest.fixture
async def assist(model: ScriptedModelServer) -> AsyncIterator[CodeAssist]:
    require_binary("gemini")
    found = CodeAssist(model)
    app = web.Application()
    app.router.add_post("/token", found.token)
    app.router.add_route("*", "/{tail:v1internal:.*}", found.backend)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = next(a[1] for a in runner.addresses if isinstance(a, tuple))
    found.url = f"http://127.0.0.1:{port}"
    try:
        yield found
    finally:
        await runner.cleanup()


def _login(home: Path, text: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", ""), "FETCH_HOME": str(home), "HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "login", "gemini-cli"],
        input=text,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )


def creds(access_token: str, refresh_token: str, expires_in: float) -> str:
    return json.dumps(
        {
            "access_token": access_token,
            "refresh_token": refresh_token,
            "scope": "https://www.googleapis.com/auth/cloud-platform openid",
            "token_type": "Bearer",
            "expiry_date": int((time.time() + expires_in) * 1000),
        }
    )


@pytest.fixture
async def gemini(
    assist: CodeAssist, make_settings: Callable[..., Settings]
) -> AsyncIterator[Driver]:
    settings = make_settings(
        FETCH_HARNESS="gemini-cli",
        FETCH__PROVIDERS__GEMINI__TOKEN_URL=f"{assist.url}/token",
        FETCH__PROVIDERS__GEMINI__SIGNIN_BASE_URL=assist.url,
    )
    assert settings.providers["gemini"].api_key is None
    app, driver = await start_driver(settings)
    try:
        yield driver
    finally:
        await app.__aexit__(None, None, None)


def _sign_in(home: Path, access_token: str, refresh_token: str, expires_in: float) -> Path:
    done = _login(home, creds(access_token, refresh_token, expires_in))
    assert done.returncode == 0, done.stderr
    assert "gemini-cli now runs on your Google sign-in" in done.stdout
    kept = home / "credentials" / "gemini.json"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    return kept


async def test_gemini_runs_on_the_google_sign_in_refreshed_on_the_host(
    assist: CodeAssist, model: ScriptedModelServer, gemini: Driver, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    kept = _sign_in(home, "ya29.real-access-1-e4", "1//real-refresh-g1", 3600)
    # The backend refuses the first access token after one turn (before its expiry):
    # Fetch refreshes it and asks again. (A token that expires is refreshed before it is
    # sent: tests/harnesses/test_codex_signin.py.)
    assist.valid = {"ya29.real-access-1-e4"}
    assist.grants = {"1//real-refresh-g1": ["ya29.real-access-2-f5"]}
    assist.revoke_after_turns = 1
    status = await gemini.ask("/harness", "gemini-cli")
    assert "Google sign-in" in status and "real-" not in status, status
    model.script(
        EditFile("README.md", "Teh quick brown fox.", "The quick brown fox."), Text("Fixed.")
    )
    card = await gemini.ask("fix the typo in README.md of demo", "Apply? (yes/no)", 180)
    assert "+The quick" in card
    assert not assist.bad, assist.bad
    turns = [h["authorization"] for p, h in assist.seen if p.endswith(":streamGenerateContent")]
    assert turns[0] == "Bearer ya29.real-access-1-e4", turns
    assert turns[-1] == "Bearer ya29.real-access-2-f5", turns
    assert [r["refresh_token"] for r in assist.refreshes] == ["1//real-refresh-g1"]
    stored = json.loads(kept.read_text())
    assert stored["access_token"] == "ya29.real-access-2-f5"
    assert stored["expiry_date"] > time.time() * 1000 + 3000 * 1000
    secrets = ["real-access-", "real-refresh-g1"]
    assert files_hold(home, secrets, home / "credentials") == []
    await gemini.ask("no", "Discarded")


async def test_a_revoked_google_sign_in_ends_the_task_in_one_line(
    assist: CodeAssist, gemini: Driver, tmp_path: Path
) -> None:
    _sign_in(tmp_path / "home", "ya29.real-access-1-e4", "1//real-refresh-revoked", -60)
    failed = await gemini.ask("fix the typo in README.md of demo", "failed", 180)
    said = " ".join(failed.split())
    assert "Gemini sign-in expired: run fetch login gemini-cli" in said, failed
    assert "real-" not in failed and "Traceback" not in failed
    assert [r["refresh_token"] for r in assist.refreshes] == ["1//real-refresh-revoked"]
    assert not any(p.endswith(":streamGenerateContent") for p, _ in assist.seen)


def test_login_refuses_what_is_not_a_google_sign_in(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for text, why in (("nope", "not JSON"), ('{"access_token": "a"}', "no refresh_token")):
        done = _login(home, text)
        assert done.returncode == 2 and why in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    assert not (home / "credentials" / "gemini.json").exists()
