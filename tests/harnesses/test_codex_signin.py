"""Codex signed in with ChatGPT (issue 24, 1), through real parts: `fetch login codex`
keeps the owner's auth.json on the host (0600); the real codex in the bwrap kennel holds
only a stand-in (its access token the run's secret); the relay sends the ChatGPT backend
of the test's own the real access token and account header; Fetch refreshes the token
at an OAuth token endpoint of the test's own before it expires and again when the
backend refuses it (401), and keeps the new tokens; a revoked refresh token ends the task
with one line. Nothing the owner holds is in any file of the run."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from kennel.relay_signin import CODEX_CLIENT_ID, claims
from orchestrator.config import Settings
from tests.conftest import Driver, start_driver
from tests.fakes.model_server import Delay, EditFile, ScriptedModelServer, Text
from tests.fakes.require import require_binary

pytestmark = pytest.mark.real
ROOT = Path(__file__).resolve().parents[2]
ACCOUNT = "acct-owner-of-the-test-41"


def jwt(payload: dict[str, Any], sig: str) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'RS256', 'typ': 'JWT'})}.{part(payload)}.{sig}"


def access(n: int, expires_in: float) -> str:
    return jwt({"exp": int(time.time() + expires_in), "n": n}, f"real-access-{n}-9d1f")


ID_TOKEN = jwt(
    {
        "email": "owner@example.invalid",
        "https://api.openai.com/auth": {
            "chatgpt_plan_type": "pro",
            "chatgpt_account_id": ACCOUNT,
            "chatgpt_user_id": "user-real-77",
        },
    },
    "real-id-token-sig-5c2e",
)


@dataclass
class Vendor:
    """The ChatGPT backend (``/backend-api``) and its OAuth token endpoint (``/oauth/token``)
    in one server of the test's own. The backend accepts only the access token now valid,
    as a bearer, with the account header; its turns are played by the scripted model."""

    model: ScriptedModelServer
    valid: set[str] = field(default_factory=set)
    # refresh token -> (new access, new refresh); a refresh token not here is refused.
    grants: dict[str, tuple[str, str]] = field(default_factory=dict)
    revoke_after_turns: int = 0  # after this many turns, the access token is refused
    seen: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    refreshes: list[dict[str, Any]] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)
    url: str = ""
    turns: int = 0

    async def token(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.refreshes.append(body)
        if body.get("client_id") != CODEX_CLIENT_ID or body.get("grant_type") != "refresh_token":
            self.bad.append(f"token request {body}")
            return web.json_response({"error": "invalid_request"}, status=400)
        grant = self.grants.pop(str(body.get("refresh_token")), None)
        if grant is None:
            return web.json_response({"error": "invalid_grant"}, status=401)
        new_access, new_refresh = grant
        self.valid = {new_access}
        return web.json_response(
            {"access_token": new_access, "refresh_token": new_refresh, "id_token": ID_TOKEN}
        )

    async def backend(self, request: web.Request) -> web.StreamResponse:
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.seen.append((request.method, request.path, headers))
        bearer = headers.get("authorization", "")
        if headers.get("chatgpt-account-id") != ACCOUNT:
            self.bad.append(f"{request.path}: account header {headers.get('chatgpt-account-id')}")
        if "x-api-key" in headers or not bearer.startswith("Bearer "):
            self.bad.append(f"{request.path}: credential shape {sorted(headers)}")
        if bearer.removeprefix("Bearer ") not in self.valid:
            return web.json_response({"error": {"message": "token expired"}}, status=401)
        tail = request.path.removeprefix("/backend-api")
        if tail == "/wham/accounts/check":
            return web.json_response(
                {
                    "accounts": [
                        {
                            "id": ACCOUNT,
                            "plan_type": "pro",
                            "workspace_backend_origin": "https://backend.example.invalid",
                            "account_routing_override": "NO_CONSTRAINT",
                        }
                    ],
                    "account_ordering": [ACCOUNT],
                }
            )
        if tail != "/codex/responses":
            return web.json_response({"error": {"message": "not here"}}, status=404)
        self.turns += 1
        if self.revoke_after_turns and self.turns >= self.revoke_after_turns:
            self.valid = set()  # the vendor expires this token early: a 401 next time
        async with (
            aiohttp.ClientSession() as client,
            client.post(
                f"{self.model.url}/v1/responses",
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
async def vendor(model: ScriptedModelServer) -> AsyncIterator[Vendor]:
    found = Vendor(model)
    app = web.Application()
    app.router.add_post("/oauth/token", found.token)
    app.router.add_route("*", "/backend-api/{tail:.*}", found.backend)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = next(a[1] for a in runner.addresses if isinstance(a, tuple))
    found.url = f"http://127.0.0.1:{port}"
    try:
        yield found
    finally:
        await runner.cleanup()


def _env(home: Path, vendor: Vendor) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "FETCH_HOME": str(home),
        "HOME": str(home),
        "FETCH__PROVIDERS__OPENAI__TOKEN_URL": f"{vendor.url}/oauth/token",
        "FETCH__PROVIDERS__OPENAI__SIGNIN_BASE_URL": f"{vendor.url}/backend-api",
    }


def _login(home: Path, vendor: Vendor, text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "login", "codex"],
        input=text,
        capture_output=True,
        text=True,
        env=_env(home, vendor),
        cwd=ROOT,
        timeout=60,
    )


def auth_json(access_token: str, refresh_token: str) -> str:
    return json.dumps(
        {
            "OPENAI_API_KEY": None,
            "tokens": {
                "id_token": ID_TOKEN,
                "access_token": access_token,
                "refresh_token": refresh_token,
                "account_id": ACCOUNT,
            },
            "last_refresh": "2026-11-20T10:00:00Z",
        }
    )


@pytest.fixture
def signed_in(tmp_path: Path, vendor: Vendor) -> Callable[[str, str], Path]:
    def sign(access_token: str, refresh_token: str) -> Path:
        home = tmp_path / "home"
        done = _login(home, vendor, auth_json(access_token, refresh_token))
        assert done.returncode == 0, done.stderr
        assert "codex now runs on your ChatGPT sign-in" in done.stdout
        kept = home / "credentials" / "openai.json"
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600
        assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
        return kept

    return sign


@pytest.fixture
async def codex(
    vendor: Vendor, make_settings: Callable[..., Settings], tmp_path: Path
) -> AsyncIterator[Driver]:
    require_binary("codex")
    env = _env(tmp_path / "home", vendor)
    settings = make_settings(
        FETCH_HARNESS="codex",
        FETCH__PROVIDERS__OPENAI__TOKEN_URL=env["FETCH__PROVIDERS__OPENAI__TOKEN_URL"],
        FETCH__PROVIDERS__OPENAI__SIGNIN_BASE_URL=env["FETCH__PROVIDERS__OPENAI__SIGNIN_BASE_URL"],
    )
    assert settings.providers["openai"].api_key is None
    app, driver = await start_driver(settings)
    try:
        yield driver
    finally:
        await app.__aexit__(None, None, None)


def _running_codex() -> list[tuple[str, str, dict[str, Any]]]:
    """Each signed-in codex of a kennel now running (its environment names the relay as
    its token endpoint): environment, command line and the auth.json it reads, as root
    sees them through /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            env = (entry / "environ").read_bytes().replace(b"\0", b"\n").decode("utf-8", "replace")
            argv = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if "CODEX_REFRESH_TOKEN_URL_OVERRIDE=" not in env or "codex" not in argv:
            continue
        home = next(line[11:] for line in env.splitlines() if line.startswith("CODEX_HOME="))
        try:
            stand_in = json.loads((entry / "root" / home.lstrip("/") / "auth.json").read_text())
        except (OSError, ValueError):
            continue
        found.append((env, argv, stand_in))
    return found


def files_hold(root: Path, secrets: list[str], skip: Path) -> list[str]:
    """Which files under ``root`` (not under ``skip``) hold one of ``secrets``. A run's
    folder may be going away meanwhile: what vanishes is not read."""
    found = []
    for folder, _dirs, names in os.walk(root):
        if Path(folder) == skip or skip in Path(folder).parents:
            continue
        for name in names:
            path = Path(folder) / name
            try:
                if path.is_symlink() or not path.is_file():
                    continue
                data = path.read_bytes()
            except OSError:
                continue
            found += [f"{path}: {s[:24]}…" for s in secrets if s.encode() in data]
    return found


async def test_codex_runs_on_the_sign_in_refreshed_on_the_host(
    signed_in: Callable[[str, str], Path],
    vendor: Vendor,
    model: ScriptedModelServer,
    codex: Driver,
    tmp_path: Path,
) -> None:
    first, second = access(1, -60), access(2, 3600)
    kept = signed_in(first, "real-refresh-1-aa")
    # The first access token has expired: Fetch refreshes it before the first call. (A
    # token the backend refuses is refreshed too: tests/harnesses/test_gemini_signin.py.)
    vendor.grants = {"real-refresh-1-aa": (second, "real-refresh-2-bb")}
    status = await codex.ask("/harness", "codex")
    assert "ChatGPT sign-in" in status and first not in status, status
    # apply_patch takes whole lines.
    # The first turn is held a moment: the CLI is looked at while it runs.
    edit = EditFile("README.md", "Teh quick brown fox.", "The quick brown fox.")
    model.script(Delay(3.0, edit), Text("Fixed."))
    await codex.ask("fix the typo in README.md of demo", "On it")
    await model.wait_for_requests(1, timeout=90)
    running = _running_codex()
    assert running, "no signed-in codex process found while its turn was held"
    card = await codex.expect("Apply? (yes/no)", 180)
    assert "+The quick" in card
    assert not vendor.bad, vendor.bad
    assert [r["refresh_token"] for r in vendor.refreshes] == ["real-refresh-1-aa"]
    turns = [h for m, p, h in vendor.seen if p == "/backend-api/codex/responses"]
    assert len(turns) >= 2
    bearers = {h["authorization"] for _, _, h in vendor.seen}
    assert bearers == {f"Bearer {second}"}, bearers  # the expired token never went out
    assert any(p == "/backend-api/wham/accounts/check" for _, p, _ in vendor.seen)
    # The new tokens are kept, whole and private.
    stored = json.loads(kept.read_text())
    assert stored["tokens"]["access_token"] == second
    assert stored["tokens"]["refresh_token"] == "real-refresh-2-bb"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    # Nothing the owner holds is in any file of the run (the stand-in only).
    secrets = [first, second, ID_TOKEN, "real-refresh-1", "real-refresh-2"]
    home = tmp_path / "home"
    assert files_hold(home, secrets, home / "credentials") == []
    # Nor in the running CLI's environment, command line or stand-in auth.json: there the
    # access token is the run's secret, and the id token carries only account and plan.
    for env, argv, stand_in in running:
        seen = env + argv + json.dumps(stand_in)
        assert not [s for s in secrets if s in seen], "a real token reached the kennel"
        tokens = stand_in["tokens"]
        assert tokens["account_id"] == ACCOUNT and tokens["access_token"] not in secrets
        assert f"FETCH_RELAY_KEY={tokens['access_token']}" in env
        assert claims(tokens["id_token"])["https://api.openai.com/auth"] == {
            "chatgpt_account_id": ACCOUNT,
            "chatgpt_plan_type": "pro",
        }
    # ChatGPT's apps (ps/mcp) are off: never asked for, so never refused either.
    log = (home / "relay.jsonl").read_text()
    assert "ps/mcp" not in log and "settings/user" in log  # the latter refused (403)
    await codex.ask("no", "Discarded")


async def test_a_revoked_sign_in_ends_the_task_in_one_line(
    signed_in: Callable[[str, str], Path], vendor: Vendor, codex: Driver
) -> None:
    signed_in(access(1, -60), "real-refresh-revoked")  # no grant: the endpoint refuses it
    failed = await codex.ask("fix the typo in README.md of demo", "failed", 180)
    assert "Codex sign-in expired: run fetch login codex" in " ".join(failed.split()), failed
    assert "Traceback" not in failed and "real-" not in failed, failed
    # Asked once: a refused refresh token is not offered again for every call.
    assert [r["refresh_token"] for r in vendor.refreshes] == ["real-refresh-revoked"]
    assert not any(p.endswith("/codex/responses") for _, p, _ in vendor.seen)


async def test_login_takes_a_refresh_token_or_refuses_in_one_line(
    tmp_path: Path, vendor: Vendor
) -> None:
    # In a thread: the token endpoint answers on this test's event loop.
    def login(text: str) -> subprocess.CompletedProcess[str]:
        return _login(home, vendor, text)

    home = tmp_path / "home"
    done = await asyncio.to_thread(login, "not json and has spaces")
    assert done.returncode == 2 and "neither codex's auth.json" in done.stderr, done.stderr
    done = await asyncio.to_thread(login, json.dumps({"OPENAI_API_KEY": "sk-x", "tokens": None}))
    assert done.returncode == 2 and "no ChatGPT sign-in" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not (home / "credentials" / "openai.json").exists()
    done = await asyncio.to_thread(login, "real-refresh-unknown")
    assert done.returncode == 2 and "refused" in done.stderr, done.stderr
    # A pasted refresh token is exchanged at once; the account comes from the id token.
    vendor.grants = {"real-refresh-pasted": (access(9, 3600), "real-refresh-next")}
    done = await asyncio.to_thread(login, "real-refresh-pasted\n")
    assert done.returncode == 0, done.stderr
    stored = json.loads((home / "credentials" / "openai.json").read_text())
    assert stored["tokens"]["account_id"] == ACCOUNT
    assert stored["tokens"]["refresh_token"] == "real-refresh-next"
    doctor = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "orchestrator", "doctor"],
        capture_output=True,
        text=True,
        env=_env(home, vendor),
        cwd=ROOT,
        timeout=120,
    )
    assert "codex: " in doctor.stdout and "ChatGPT sign-in configured" in doctor.stdout
    assert "real-" not in doctor.stdout + doctor.stderr
