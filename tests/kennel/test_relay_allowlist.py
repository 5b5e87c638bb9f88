"""The relay forwards only each vendor's inference endpoints (kennel/relay_allow.py): through
real HTTP, a scripted vendor on 127.0.0.1 behind the real relay on a unix socket. What it
refuses is answered 403 with the path named, logged, and never reaches the vendor."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from kennel.relay_allow import allowed
from tests.kennel.relay_vendor import Vendor, call, logged, relay_to

# (provider, the upstream's own prefix, method, target): what the CLIs call (measured
# through the relay: tests/fakes/cli_recipes.md) and the model listings.
PASSES = [
    ("anthropic", "", "POST", "/v1/messages?beta=true"),  # Claude Code
    ("anthropic", "", "POST", "/v1/messages/count_tokens?beta=true"),
    ("anthropic", "", "GET", "/v1/models"),
    ("anthropic", "", "GET", "/v1/models/claude-sonnet-4-5"),
    ("anthropic", "/v1", "POST", "/messages"),  # an upstream that carries the version
    ("openai", "/v1", "POST", "/responses"),  # Codex
    ("openai", "/v1", "POST", "/chat/completions"),  # Copilot CLI (BYOK)
    ("openai", "/v1", "GET", "/models"),
    ("openai", "/v1", "GET", "/models/gpt-5.5"),
    ("gemini", "", "POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"),
    ("gemini", "", "POST", "/v1beta/models/gemini-2.5-flash:generateContent"),
    ("gemini", "", "POST", "/v1beta/models/gemini-2.5-flash:countTokens"),
    ("gemini", "", "GET", "/v1beta/models"),
    ("gemini", "", "GET", "/v1/models/gemini-2.5-pro"),
]
# The owner's files, batches, organisation, uploads, fine-tunes...: one path away.
REFUSED = [
    ("anthropic", "", "GET", "/v1/files"),
    ("anthropic", "", "DELETE", "/v1/files/file_011CNha8iCJcU1wXNR6q4V8w"),
    ("anthropic", "", "POST", "/v1/files"),
    ("anthropic", "", "POST", "/v1/messages/batches"),
    ("anthropic", "", "GET", "/v1/messages/batches/msgbatch_01/results"),
    ("anthropic", "", "GET", "/v1/organizations/api_keys"),
    ("anthropic", "", "POST", "/v1/skills"),
    ("anthropic", "", "GET", "/v1/messages"),  # right path, wrong method
    ("anthropic", "", "POST", "/v1/messages%2Fcount_tokens"),  # encoded: not a model call
    ("anthropic", "", "POST", "/v1/messages/"),
    ("anthropic", "", "HEAD", "/"),
    ("openai", "/v1", "GET", "/files"),
    ("openai", "/v1", "DELETE", "/files/file-abc123"),
    ("openai", "/v1", "POST", "/uploads"),
    ("openai", "/v1", "POST", "/batches"),
    ("openai", "/v1", "POST", "/fine_tuning/jobs"),
    ("openai", "/v1", "GET", "/organization/users"),
    ("openai", "/v1", "GET", "/responses/resp_123"),  # a stored response of the owner's
    ("openai", "/v1", "POST", "/vector_stores"),
    ("openai", "/v1", "DELETE", "/models/ft:gpt-4o:acme:x"),
    ("gemini", "", "POST", "/upload/v1beta/files"),
    ("gemini", "", "GET", "/v1beta/files"),
    ("gemini", "", "POST", "/v1beta/cachedContents"),
    ("gemini", "", "POST", "/v1beta/models/gemini-2.5-flash:batchGenerateContent"),
    ("gemini", "", "POST", "/v1beta/tunedModels"),
    ("gemini", "", "POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent/x"),
]


@pytest.fixture
async def vendor() -> AsyncIterator[Vendor]:
    async with Vendor() as v:
        yield v


def _body(provider: str, method: str) -> dict[str, object] | None:
    if method in ("GET", "HEAD", "DELETE"):
        return None
    if provider == "gemini":
        return {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    return {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(("provider", "suffix", "method", "target"), PASSES)
async def test_inference_calls_pass(
    provider: str, suffix: str, method: str, target: str, vendor: Vendor, tmp_path: Path
) -> None:
    async with relay_to(vendor, tmp_path / "r.sock", provider, suffix) as relay:
        answer = await call(relay.socket_path, method, target, _body(provider, method))
    assert answer.status == 200, answer.body
    assert [(s.method, s.raw_path) for s in vendor.seen] == [(method, suffix + target)]


@pytest.mark.parametrize(("provider", "suffix", "method", "target"), REFUSED)
async def test_everything_else_is_refused_and_never_forwarded(
    provider: str, suffix: str, method: str, target: str, vendor: Vendor, tmp_path: Path
) -> None:
    async with relay_to(vendor, tmp_path / "r.sock", provider, suffix) as relay:
        answer = await call(relay.socket_path, method, target, _body(provider, method))
    assert vendor.seen == []
    assert answer.status == 403
    if method != "HEAD":  # a HEAD answer has no body
        error = answer.json["error"]
        assert error["type"] == "permission_error"
        assert f"{method} {target.partition('?')[0]} is not a model call" in error["message"]
    (entry,) = logged(relay.socket_path)
    assert entry["status"] == 403 and "not a model call" in entry["error"]


async def test_refusals_are_logged(
    vendor: Vendor, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with relay_to(vendor, tmp_path / "r.sock") as relay:
        await call(relay.socket_path, "DELETE", "/v1/files/file_1")
    assert "refused DELETE /v1/files/file_1" in caplog.text


async def test_fetchs_own_mcp_route_stays(vendor: Vendor, tmp_path: Path) -> None:
    served: list[str] = []

    async def mcp(request: web.Request) -> web.StreamResponse:
        served.append(request.path)
        return web.json_response({"jsonrpc": "2.0", "id": 1, "result": {}})

    async with relay_to(vendor, tmp_path / "r.sock", mcp=mcp) as relay:
        answer = await call(
            relay.socket_path, "POST", "/mcp", {"jsonrpc": "2.0"}, {"x-api-key": None}
        )
        bearer = await call(
            relay.socket_path,
            "POST",
            "/mcp",
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            {"x-api-key": None, "Authorization": "Bearer run-secret-Qx7pT2mZ"},
        )
    assert answer.status == 401  # the run's secret is asked of MCP clients too
    assert bearer.status == 200 and served == ["/mcp"] and vendor.seen == []


def test_unknown_provider_forwards_nothing() -> None:
    assert not allowed("acme", "POST", "/v1/messages")
    assert not allowed("", "POST", "/v1/chat/completions")
