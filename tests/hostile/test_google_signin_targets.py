"""A kennel trying to steer the relay's Google sign-in (kennel/relay_signin_google.py)
elsewhere, or to read the owner's token back. Real HTTP: the real relay on a unix socket
holding a Google sign-in, Code Assist played by a vendor on 127.0.0.1, and a second
server ("elsewhere") that must never see a request. Raw request lines over the socket:
absolute-form targets, ``//host``, an ``@host`` in the path, encoded slashes, a Host
header naming elsewhere, a redirect to elsewhere, a vendor echoing the bearer."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from aiohttp import web

from kennel.relay import ModelRelay
from kennel.relay_signin_google import GoogleSignIn
from tests.kennel.relay_vendor import SECRET, Vendor

ACCESS = "ya29.real-google-access-5c1e7d"
REFRESH = "1//real-google-refresh-90ab"
CALL = "/v1internal:generateContent"


async def _raw(sock: Path, request: bytes) -> bytes:
    reader, writer = await asyncio.open_unix_connection(str(sock))
    writer.write(request)
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(), 15)
    finally:
        writer.close()


def _request(target: str, host: str = "relay") -> bytes:
    body = json.dumps({"model": "gemini-2.5-pro", "request": {}}).encode()
    return (
        f"POST {target} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {SECRET}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode() + body


async def test_the_google_token_goes_to_code_assist_only_and_never_back(tmp_path: Path) -> None:
    creds = tmp_path / "home" / "credentials" / "gemini.json"
    creds.parent.mkdir(parents=True)
    creds.write_text(
        json.dumps(
            {
                "access_token": ACCESS,
                "refresh_token": REFRESH,
                "expiry_date": int((time.time() + 3600) * 1000),
            }
        )
    )
    async with Vendor() as vendor, Vendor() as elsewhere:
        far = elsewhere.url.removeprefix("http://")

        async def echo(request: web.Request) -> web.StreamResponse:
            if request.path.endswith(":loadCodeAssist"):  # a redirect to elsewhere
                raise web.HTTPFound(f"{elsewhere.url}/steal?t={ACCESS}")
            said = request.headers.get("Authorization", "")
            return web.json_response({"you_sent": said}, headers={"X-Echo": said})

        vendor.reply = echo
        relay = ModelRelay(
            socket_path=tmp_path / "r.sock",
            upstream=vendor.url,
            provider="gemini",
            api_key=None,
            secret=SECRET,
            harness="gemini-cli",
            task_id=1,
            log_path=tmp_path / "relay.jsonl",
            auth="google",
            signin=GoogleSignIn(creds, f"{elsewhere.url}/token"),
        )
        async with relay:
            sock = relay.socket_path
            answers = {
                "plain": await _raw(sock, _request(CALL)),
                "host header": await _raw(sock, _request(CALL, host=far)),
                "absolute": await _raw(sock, _request(f"http://{far}{CALL}")),
                "//host": await _raw(sock, _request(f"//{far}{CALL}")),
                "@host": await _raw(sock, _request(f"{CALL}@{far}")),
                "%2f%2f": await _raw(sock, _request(f"/%2f%2f{far}{CALL}")),
                "redirect": await _raw(sock, _request("/v1internal:loadCodeAssist")),
            }
    assert elsewhere.seen == [], [(s.method, s.raw_path) for s in elsewhere.seen]
    assert b" 200 " in answers["plain"].split(b"\r\n", 1)[0], answers["plain"][:200]
    assert all(s.headers.get("authorization") == f"Bearer {ACCESS}" for s in vendor.seen)
    for name, raw in answers.items():
        assert ACCESS.encode() not in raw, f"{name}: the token came back"
        assert REFRESH.encode() not in raw, name
