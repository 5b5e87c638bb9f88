"""The model relay: the only holder of keys. Real HTTP upstream on 127.0.0.1, real unix
socket in front; credentials stripped and injected, usage logged, budget enforced."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from kennel.relay import ModelRelay
from tests.fakes.relay_servers import SECRET, Upstream, servers


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    async with servers() as (up, _thief):
        yield up


async def _post(
    sock: Path, headers: dict[str, str], path: str = "/v1/messages?beta=true"
) -> tuple[int, str]:
    conn = aiohttp.UnixConnector(path=str(sock))
    async with (
        aiohttp.ClientSession(connector=conn) as client,
        client.post(
            f"http://relay{path}",
            headers={"x-api-key": SECRET, **headers},
            json={"model": "claude-x", "stream": True},
        ) as resp,
    ):
        return resp.status, await resp.text()


async def test_strips_client_credentials_and_injects_the_real_key(
    upstream: Upstream, tmp_path: Path
) -> None:
    relay = ModelRelay(
        socket_path=tmp_path / "r.sock",
        upstream=upstream.url,
        provider="anthropic",
        api_key="sk-real",
        secret=SECRET,
        harness="claude-code",
        task_id=7,
        log_path=tmp_path / "relay.jsonl",
    )
    async with relay:
        assert (tmp_path / "r.sock").stat().st_mode & 0o777 == 0o600  # Fetch's own uid only
        status, body = await _post(
            relay.socket_path,
            {
                "authorization": "Bearer stolen",
                "x-goog-api-key": "g",
                "cookie": "c=1",
            },
        )
    assert status == 200 and "message_delta" in body
    seen = upstream.seen[0][2]  # its headers
    assert seen["x-api-key"] == "sk-real"
    assert "authorization" not in seen and "x-goog-api-key" not in seen and "cookie" not in seen
    entry = json.loads((tmp_path / "relay.jsonl").read_text().splitlines()[0])
    assert entry["harness"] == "claude-code" and entry["task"] == 7
    assert entry["model"] == "claude-x" and entry["status"] == 200
    assert entry["tokens_in"] == 120 and entry["tokens_out"] == 30
    assert not relay.socket_path.exists()


async def test_openai_style_bearer(upstream: Upstream, tmp_path: Path) -> None:
    relay = ModelRelay(
        socket_path=tmp_path / "r.sock",
        upstream=upstream.url,
        provider="openai",
        api_key="sk-oai",
        secret=SECRET,
        harness="codex",
        task_id=1,
        log_path=tmp_path / "relay.jsonl",
    )
    async with relay:
        await _post(
            relay.socket_path,
            {"x-api-key": "", "authorization": f"Bearer {SECRET}"},
            "/v1/chat/completions",
        )
    assert upstream.seen[0][2]["authorization"] == "Bearer sk-oai"


async def test_budget_exceeded_is_a_clear_error(upstream: Upstream, tmp_path: Path) -> None:
    relay = ModelRelay(
        socket_path=tmp_path / "r.sock",
        upstream=upstream.url,
        provider="anthropic",
        api_key="k",
        secret=SECRET,
        harness="claude-code",
        task_id=1,
        log_path=tmp_path / "relay.jsonl",
        token_budget=100,
    )
    async with relay:
        assert (await _post(relay.socket_path, {}))[0] == 200
        status, body = await _post(relay.socket_path, {})
    assert status == 429 and "budget exceeded" in body and "150 tokens of its 100" in body
    assert len(upstream.seen) == 1


async def test_unreachable_upstream(tmp_path: Path) -> None:
    relay = ModelRelay(
        socket_path=tmp_path / "r.sock",
        upstream="http://127.0.0.1:9",
        provider="anthropic",
        api_key="k",
        secret=SECRET,
        harness="claude-code",
        task_id=1,
        log_path=tmp_path / "relay.jsonl",
    )
    async with relay:
        status, body = await _post(relay.socket_path, {})
    assert status == 502 and "upstream unreachable" in body


# -- where a request goes, and what it cost (pure functions) -----------------------------


def test_join_keeps_every_vendor_path_under_the_upstream() -> None:
    from kennel.relay_url import join, upstream_base

    base = upstream_base("https://api.example.com/v1/")
    for target, expected in [
        ("/messages?beta=true", "https://api.example.com/v1/messages?beta=true"),
        ("/chat/completions", "https://api.example.com/v1/chat/completions"),
        (
            "/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
            "https://api.example.com/v1/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
        ),
        ("/a%20b/@x", "https://api.example.com/v1/a%20b/@x"),
    ]:
        assert str(join(base, target)) == expected


def test_join_refuses_whatever_could_leave_the_upstream() -> None:
    from kennel.relay_url import BadTarget, join, upstream_base

    base = upstream_base("http://127.0.0.1:8080")
    for target in (
        "http://evil/x",
        "//evil/x",
        "@evil/x",
        "evil/x",
        "/../x",
        "/a/%2e%2e/x",
        "/%252e%252e/x",
        "/a/..;/x",
        "/a\\b",
        "/x#frag",
        "/x\r\nHost: evil",
        "",
    ):
        with pytest.raises(BadTarget):
            join(base, target)


def test_usage_scan_is_linear_and_bounded() -> None:
    import time

    from kennel.relay_usage import LINE_LIMIT, UsageScanner, model_of

    scanner = UsageScanner()
    started = time.monotonic()
    chunk = b"x" * 65536
    for _ in range((LINE_LIMIT * 2) // len(chunk)):  # 32 MB without a newline
        scanner.feed(chunk)
    scanner.feed(b'\n{"usage":{"input_tokens":7,"output_tokens":9}}\n')
    assert time.monotonic() - started < 2.0
    assert (scanner.close().tokens_in, scanner.usage.tokens_out) == (7, 9)
    assert len(scanner._line) == 0
    big = b'{"model":"claude-x","messages":"' + b"y" * (1024 * 1024) + b'"}'
    assert model_of(big, "/v1/messages") == "claude-x"


async def test_an_upstream_that_is_not_a_base_url_fails_the_task_clearly(tmp_path: Path) -> None:
    from core.errors import KennelError
    from kennel.base import ExecSpec, Layout, RelaySpec
    from kennel.relayed import start_relayed

    layout = Layout(
        workdir=tmp_path,
        state_host=tmp_path,
        state_seen=tmp_path,
        relay_socket=tmp_path / "r.sock",
        relay_port=4100,
        path_env="/bin",
    )
    spec = ExecSpec(
        ("true",),
        {},
        tmp_path,
        layout,
        RelaySpec(
            upstream="http://user:pw@127.0.0.1:9",
            provider="anthropic",
            api_key="k",
            harness="h",
            task_id=1,
            log_path=tmp_path / "relay.jsonl",
        ),
    )
    started: list[str] = []

    async def start() -> object:
        started.append("process")
        raise AssertionError("never started")

    with pytest.raises(KennelError, match="plain base URL"):
        await start_relayed(spec, start)  # type: ignore[arg-type]
    assert started == [] and not layout.relay_socket.exists()
