"""A ChatGPT sign-in held by the relay (kennel/relay_signin.py), through real HTTP: a
backend and an OAuth token endpoint of the test's own, the real relay on a unix socket.
The kennel's own credential and account headers are replaced by the sign-in's; only the
codex backend calls pass; a refused token is refreshed once (even for calls at once) and
asked again; the tokens never come back to the kennel; an endpoint that is down is not a
revoked sign-in; and /harness names each kind of credential, never its value."""

from __future__ import annotations

import asyncio
import json
import stat
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from kennel.credentials import save_chatgpt
from kennel.relay import ModelRelay
from kennel.relay_signin import (
    CODEX_CLIENT_ID,
    EXPIRED_LINE,
    ChatGptSignIn,
    SignInError,
    SignInExpired,
    claims,
)
from orchestrator.config import Settings
from tests.conftest import start_driver
from tests.harnesses.test_codex_signin import ACCOUNT, ID_TOKEN, access, auth_json
from tests.kennel.relay_vendor import SECRET, Vendor, call

BEARER = {"x-api-key": None, "Authorization": f"Bearer {SECRET}"}
TURN = "/backend-api/codex/responses"
CHECK = "/backend-api/wham/accounts/check"


class TokenEndpoint:
    """Grants refresh tokens it knows (once each); refuses others; or is down (500)."""

    def __init__(self) -> None:
        self.grants: dict[str, tuple[str, str]] = {}
        self.asked: list[dict[str, Any]] = []
        self.down = False
        self.delay = 0.0

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.asked.append(body)
        await asyncio.sleep(self.delay)
        if self.down:
            return web.json_response({"error": "server_error"}, status=500)
        grant = self.grants.pop(str(body.get("refresh_token")), None)
        if grant is None or body.get("client_id") != CODEX_CLIENT_ID:
            return web.json_response({"error": "invalid_grant"}, status=400)
        return web.json_response({"access_token": grant[0], "refresh_token": grant[1]})


@pytest.fixture
async def endpoint() -> AsyncIterator[tuple[TokenEndpoint, str]]:
    found = TokenEndpoint()
    app = web.Application()
    app.router.add_post("/oauth/token", found.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = next(a[1] for a in runner.addresses if isinstance(a, tuple))
    try:
        yield found, f"http://127.0.0.1:{port}/oauth/token"
    finally:
        await runner.cleanup()


@pytest.fixture
async def vendor() -> AsyncIterator[Vendor]:
    async with Vendor() as v:
        yield v


@asynccontextmanager
async def signed_relay(
    vendor: Vendor, sock: Path, signin: ChatGptSignIn
) -> AsyncIterator[ModelRelay]:
    """The real relay holding ``signin``, in front of ``vendor``'s ChatGPT backend."""
    relay = ModelRelay(
        socket_path=sock,
        upstream=f"{vendor.url}/backend-api",
        provider="openai",
        api_key=None,
        secret=SECRET,
        harness="codex",
        task_id=1,
        log_path=sock.parent / "relay.jsonl",
        auth="chatgpt",
        signin=signin,
    )
    async with relay:
        yield relay


def _signin(tmp_path: Path, url: str, access_token: str, refresh: str) -> ChatGptSignIn:
    path = save_chatgpt(tmp_path / "home", auth_json(access_token, refresh))
    return ChatGptSignIn(path, url)


def _only(valid: set[str], body: dict[str, Any] | None = None) -> Any:
    async def reply(request: web.Request) -> web.StreamResponse:
        if request.headers.get("Authorization", "").removeprefix("Bearer ") not in valid:
            return web.json_response({"error": {"message": "expired"}}, status=401)
        return web.json_response(body or {"ok": True, "usage": {"input_tokens": 1}})

    return reply


async def test_the_sign_in_replaces_the_kennels_credential_and_account(
    vendor: Vendor, endpoint: tuple[TokenEndpoint, str], tmp_path: Path
) -> None:
    token = access(1, 3600)
    signin = _signin(tmp_path, endpoint[1], token, "real-refresh-1")
    # The vendor echoes the token: it must not come back to the kennel.
    vendor.reply = _only({token}, {"echo": token, "refresh": "real-refresh-1"})
    async with signed_relay(vendor, tmp_path / "r.sock", signin) as relay:
        headers = {**BEARER, "chatgpt-account-id": "acct-the-kennel-chose"}
        answer = await call(relay.socket_path, "POST", TURN, {"model": "gpt-5.5"}, headers)
        check = await call(
            relay.socket_path, "GET", "/backend-api/wham/accounts/check", None, BEARER
        )
        refused = [
            await call(relay.socket_path, m, p, None, BEARER)
            for m, p in (
                ("GET", "/backend-api/wham/settings/user"),
                ("POST", "/backend-api/wham/tasks"),
                ("POST", "/codex/responses"),  # not under the sign-in's prefix
                ("GET", "/backend-api/../v1/files"),
            )
        ]
    assert answer.status == 200 and check.status == 200
    assert token.encode() not in answer.body and b"real-refresh-1" not in answer.body
    assert [r.status for r in refused][:3] == [403, 403, 403] and refused[3].status in (400, 403)
    assert [s.raw_path for s in vendor.seen] == [
        "/backend-api/codex/responses",
        "/backend-api/wham/accounts/check",
    ]
    for seen in vendor.seen:
        assert seen.headers["authorization"] == f"Bearer {token}"
        assert seen.headers["chatgpt-account-id"] == ACCOUNT
        assert SECRET not in json.dumps(seen.headers)
    assert endpoint[0].asked == []  # a fresh token is not refreshed


async def test_a_refused_token_is_refreshed_once_for_calls_at_once_and_kept(
    vendor: Vendor, endpoint: tuple[TokenEndpoint, str], tmp_path: Path
) -> None:
    old, new = access(1, 3600), access(2, 3600)
    tokens, url = endpoint
    tokens.grants = {"real-refresh-1": (new, "real-refresh-2")}
    tokens.delay = 0.3  # the calls all wait on the one refresh
    signin = _signin(tmp_path, url, old, "real-refresh-1")
    vendor.reply = _only({new})  # the vendor revoked the old one early
    async with signed_relay(vendor, tmp_path / "r.sock", signin) as relay:
        answers = await asyncio.gather(
            *(call(relay.socket_path, "POST", TURN, {"model": "m"}, BEARER) for _ in range(4))
        )
    assert [a.status for a in answers] == [200] * 4
    assert len(tokens.asked) == 1 and tokens.asked[0]["grant_type"] == "refresh_token"
    kept = signin.path
    stored = json.loads(kept.read_text())["tokens"]
    assert (stored["access_token"], stored["refresh_token"]) == (new, "real-refresh-2")
    assert stored["id_token"] == ID_TOKEN  # an answer without one keeps the old
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert [p.name for p in kept.parent.iterdir()] == ["openai.json"]  # no temp file left


async def test_an_expiring_token_is_refreshed_before_it_is_sent(
    endpoint: tuple[TokenEndpoint, str], tmp_path: Path
) -> None:
    tokens, url = endpoint
    soon = access(1, 60)  # inside the skew: refreshed before use
    tokens.grants = {"real-refresh-1": (access(2, 3600), "real-refresh-2")}
    signin = _signin(tmp_path, url, soon, "real-refresh-1")
    headers = await signin.headers()
    assert claims(headers["Authorization"].removeprefix("Bearer "))["n"] == 2
    assert headers["chatgpt-account-id"] == ACCOUNT and len(tokens.asked) == 1


async def test_a_revoked_sign_in_is_one_line_and_asked_once(
    vendor: Vendor, endpoint: tuple[TokenEndpoint, str], tmp_path: Path
) -> None:
    signin = _signin(tmp_path, endpoint[1], access(1, -5), "real-refresh-revoked")
    async with signed_relay(vendor, tmp_path / "r.sock", signin) as relay:
        first = await call(relay.socket_path, "POST", TURN, {"model": "m"}, BEARER)
        again = await call(relay.socket_path, "POST", TURN, {"model": "m"}, BEARER)
    for answer in (first, again):
        assert answer.status == 401 and answer.json["error"]["message"] == EXPIRED_LINE
    assert vendor.seen == [] and len(endpoint[0].asked) == 1 and signin.expired


async def test_a_token_endpoint_that_is_down_is_not_a_revoked_sign_in(
    endpoint: tuple[TokenEndpoint, str], tmp_path: Path
) -> None:
    tokens, url = endpoint
    tokens.down = True
    signin = _signin(tmp_path, url, access(1, -5), "real-refresh-1")
    with pytest.raises(SignInError, match="answered 500"):
        await signin.headers()
    assert not signin.expired
    tokens.down = False
    with pytest.raises(SignInExpired):  # no grant for it: now it is refused
        await signin.headers()


def test_a_bad_auth_json_says_what_is_wrong_and_keeps_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    no_account = json.dumps(
        {"tokens": {"id_token": "x.e30.y", "access_token": "a", "refresh_token": "r"}}
    )
    for text, why in (
        ("[]", "no ChatGPT sign-in"),
        (json.dumps({"tokens": {"id_token": "x"}}), "no access_token, refresh_token"),
        (no_account, "names no ChatGPT account"),
        ("{", "not JSON"),
    ):
        with pytest.raises(ValueError, match=why):
            save_chatgpt(home, text)
    assert not (home / "credentials" / "openai.json").exists()


async def test_harness_names_each_kind_of_credential_never_its_value(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    save_chatgpt(tmp_path / "home", auth_json(access(1, 3600), "real-refresh-1"))
    settings = make_settings(
        ANTHROPIC_API_KEY="sk-ant-api-key-of-the-test-5b1",
        CLAUDE_CODE_OAUTH_TOKEN="sk-ant-oat01-unused-4d",
        GEMINI_API_KEY="gemini-key-of-the-test-8c2",
    )
    app, driver = await start_driver(settings)
    try:
        runner = driver.services.runner
        said = {
            name: runner.availability(driver.services.harnesses.get(name)).detail
            for name in ("claude-code", "codex", "gemini-cli", "copilot")
        }
        shown = await driver.ask("/harness", "codex")
    finally:
        await app.__aexit__(None, None, None)
    installed = {n for n, d in said.items() if "not installed" not in d}
    expected = {
        "claude-code": "(API key)",  # a key wins over a subscription token
        "codex": "(ChatGPT sign-in)",
        "gemini-cli": "(API key)",
    }
    for name, kind in expected.items():
        if name in installed:
            assert kind in said[name], said
    if "copilot" in installed:  # codex's sign-in is nothing to the Copilot CLI
        assert "no openai API key" in said["copilot"], said
    for value in ("sk-ant-", "gemini-key", "real-refresh", access(1, 3600)[:20]):
        assert value not in shown and value not in json.dumps(said)
