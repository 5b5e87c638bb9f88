"""The run's secret and the owner's key (issue "Trust III"): through real HTTP, the relay
serves only a request carrying this run's secret, wherever the CLI puts its key, and the
real key never comes back to the kennel, not even split across two chunks of a stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from kennel.base import RelaySpec
from kennel.relay import PLACEHOLDER_KEY, ModelRelay
from kennel.relay_scrub import REDACTED, Scrubber
from tests.kennel.relay_vendor import KEY, SECRET, Vendor, call, logged, relay_to

MESSAGES = "/v1/messages"
BODY = {"model": "claude-x", "messages": []}


@pytest.fixture
async def vendor() -> AsyncIterator[Vendor]:
    async with Vendor() as v:
        yield v


@pytest.mark.parametrize(
    "headers",
    [
        {"x-api-key": None},  # none at all
        {"x-api-key": PLACEHOLDER_KEY},  # the old shared placeholder
        {"x-api-key": SECRET[:-1]},
        {"x-api-key": SECRET + "x"},
        {"x-api-key": KEY},  # even the real key is not this run's secret
        {"x-api-key": None, "Authorization": SECRET},  # not a bearer
        {"x-api-key": None, "Authorization": "Basic " + SECRET},
        {"x-api-key": "another-run-secret-0000"},
    ],
)
async def test_without_the_runs_secret_nothing_is_forwarded(
    headers: dict[str, str | None], vendor: Vendor, tmp_path: Path
) -> None:
    async with relay_to(vendor, tmp_path / "r.sock") as relay:
        answer = await call(relay.socket_path, "POST", MESSAGES, BODY, headers)
    assert answer.status == 401 and answer.json["error"]["type"] == "authentication_error"
    assert vendor.seen == [] and KEY.encode() not in answer.body
    (entry,) = logged(relay.socket_path)
    assert entry["status"] == 401


@pytest.mark.parametrize(
    ("provider", "suffix", "target", "headers"),
    [
        ("anthropic", "", MESSAGES, {"x-api-key": SECRET}),
        ("openai", "/v1", "/responses", {"x-api-key": None, "Authorization": f"Bearer {SECRET}"}),
        ("openai", "/v1", "/chat/completions", {"x-api-key": None, "api-key": SECRET}),
        (
            "gemini",
            "",
            "/v1beta/models/g:generateContent",
            {"x-api-key": None, "x-goog-api-key": SECRET},
        ),
        (
            "gemini",
            "",
            f"/v1beta/models/g:generateContent?alt=sse&key={SECRET}",
            {"x-api-key": None},
        ),
    ],
)
async def test_the_secret_is_taken_wherever_the_cli_puts_its_key(
    provider: str,
    suffix: str,
    target: str,
    headers: dict[str, str | None],
    vendor: Vendor,
    tmp_path: Path,
) -> None:
    async with relay_to(vendor, tmp_path / "r.sock", provider, suffix) as relay:
        answer = await call(relay.socket_path, "POST", target, BODY, headers)
    assert answer.status == 200
    (seen,) = vendor.seen
    assert SECRET not in seen.raw_path and all(SECRET not in v for v in seen.headers.values())
    assert KEY in seen.headers.get("x-api-key", "") + seen.headers.get(
        "authorization", ""
    ) + seen.headers.get("x-goog-api-key", "")
    if "alt=sse" in target:
        assert seen.raw_path.endswith("?alt=sse")  # the secret's ?key= is not passed on


async def test_mcp_wants_the_secret_too(vendor: Vendor, tmp_path: Path) -> None:
    served: list[str] = []

    async def mcp(request: web.Request) -> web.StreamResponse:
        served.append(request.headers.get("Authorization", ""))
        return web.json_response({"jsonrpc": "2.0", "id": 1, "result": {}})

    async with relay_to(vendor, tmp_path / "r.sock", mcp=mcp) as relay:
        refused = await call(relay.socket_path, "POST", "/mcp", {}, {"x-api-key": None})
        wrong = await call(
            relay.socket_path, "POST", "/mcp", {}, {"x-api-key": None, "Authorization": "Bearer x"}
        )
        ok = await call(
            relay.socket_path,
            "POST",
            "/mcp",
            {},
            {"x-api-key": None, "Authorization": f"Bearer {SECRET}"},
        )
    assert (refused.status, wrong.status, ok.status) == (401, 401, 200)
    assert served == [f"Bearer {SECRET}"] and vendor.seen == []


def test_each_run_has_its_own_secret(tmp_path: Path) -> None:
    def spec() -> RelaySpec:
        return RelaySpec(
            upstream="http://127.0.0.1:9",
            provider="anthropic",
            api_key=KEY,
            harness="h",
            task_id=1,
            log_path=tmp_path / "l",
        )

    one, two = spec(), spec()
    assert one.secret != two.secret and len(one.secret) >= 40
    assert one.secret != PLACEHOLDER_KEY
    assert one.secret not in repr(one) and KEY not in repr(one)  # logs never show them
    with pytest.raises(ValueError, match="secret"):
        ModelRelay(
            socket_path=tmp_path / "r.sock",
            upstream="http://127.0.0.1:9",
            provider="anthropic",
            api_key=KEY,
            secret="",
            harness="h",
            task_id=1,
            log_path=tmp_path / "l",
        )


# -- the real key never comes back --------------------------------------------------------


async def test_the_key_is_scrubbed_from_a_stream_even_split_across_chunks(
    vendor: Vendor, tmp_path: Path
) -> None:
    """The vendor echoes the key in a header and, in an SSE stream, cut in two between
    chunks the relay receives separately (each is flushed and waited for)."""
    cut = 11
    events = [
        b'event: message_start\ndata: {"type":"message_start","message":{"usage":'
        b'{"input_tokens":7,"output_tokens":1}}}\n\n',
        b'event: error\ndata: {"error":"invalid x-api-key ' + KEY[:cut].encode(),
        KEY[cut:].encode() + b' (that was the key)"}\n\n',
        b"data: " + KEY.encode() + KEY.encode()[:5] + b"\n\n",  # whole, and a false start
    ]

    async def stream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"content-type": "text/event-stream", "x-echo": f"key={KEY}"}
        )
        await response.prepare(request)
        for event in events:
            await response.write(event)
            await asyncio.sleep(0.05)  # separate reads on the relay's side
        return response

    vendor.reply = stream
    async with relay_to(vendor, tmp_path / "r.sock") as relay:
        answer = await call(relay.socket_path, "POST", MESSAGES, BODY)
    assert answer.status == 200
    assert KEY.encode() not in answer.body and KEY[:cut].encode() not in answer.body
    assert KEY not in str(answer.headers) and answer.headers["x-echo"] == f"key={REDACTED}"
    expected = b"".join(events).replace(KEY.encode(), REDACTED.encode())
    assert answer.body == expected  # nothing else changed, nothing lost
    (entry,) = logged(relay.socket_path)
    assert entry["tokens_in"] == 7  # usage is still read from what the vendor sent


def test_scrubber_byte_by_byte() -> None:
    scrub = Scrubber(KEY)
    text = f"a{KEY}b{KEY[:-1]}c{KEY}".encode()
    out = b"".join(scrub.feed(text[i : i + 1]) for i in range(len(text))) + scrub.close()
    assert out == f"a{REDACTED}b{KEY[:-1]}c{REDACTED}".encode()
    # Only what could start the key is held back: an event's end goes out at once.
    fresh = Scrubber(KEY)
    assert fresh.feed(b"data: {}\n\n") == b"data: {}\n\n"
    assert fresh.feed(b"x" + KEY[:4].encode()) == b"x" and fresh.close() == KEY[:4].encode()
