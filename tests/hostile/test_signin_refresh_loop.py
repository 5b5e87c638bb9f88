"""A kennel steering the relay's sign-in (kennel/relay_signin.py) into a refresh loop.

A vendor that refuses every call with 401 (an account it suspended, an outage, or a
call the kennel shaped so the vendor says 401) made the relay refresh the owner's
sign-in once per kennel request: a kennel asking in a loop spent the owner's refresh
tokens (each one rotated) at the token endpoint as fast as it liked. Real HTTP: the real
relay on a unix socket, a backend and a token endpoint of the test's own on 127.0.0.1.
"""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from tests.harnesses.test_codex_signin import access
from tests.kennel.relay_vendor import Vendor, call
from tests.kennel.test_signin_credential import (
    BEARER,
    TURN,
    TokenEndpoint,
    _only,
    _signin,
    endpoint,
    signed_relay,
    vendor,
)

__all__ = ["endpoint", "vendor"]  # the fixtures, used by name


async def test_a_vendor_refusing_every_call_costs_one_refresh_not_one_per_call(
    vendor: Vendor, endpoint: tuple[TokenEndpoint, str], tmp_path: Path
) -> None:
    found, url = endpoint
    for n in range(1, 30):  # every refresh token is good, and rotated
        found.grants[f"real-refresh-{n}"] = (access(n + 1, 3600), f"real-refresh-{n + 1}")
    signin = _signin(tmp_path, url, access(1, 3600), "real-refresh-1")
    vendor.reply = _only(set())  # 401 to everything
    async with signed_relay(vendor, tmp_path / "r.sock", signin) as relay:
        answers = [
            await call(relay.socket_path, "POST", TURN, {"model": "gpt-5.5"}, BEARER)
            for _ in range(12)
        ]
    assert all(a.status == 401 for a in answers), [a.status for a in answers]
    assert len(found.asked) <= 2, f"{len(found.asked)} refreshes for 12 refused calls"


async def test_a_token_that_served_and_is_then_refused_is_refreshed_at_once(
    vendor: Vendor, endpoint: tuple[TokenEndpoint, str], tmp_path: Path
) -> None:
    """The bound is no brake on a real expiry: the refreshed token served a call, then
    the vendor refused it; the next call gets a new one."""
    found, url = endpoint
    second, third = access(2, 3600), access(3, 3600)
    found.grants = {"real-refresh-1": (second, "real-refresh-2")}
    found.grants["real-refresh-2"] = (third, "real-refresh-3")
    signin = _signin(tmp_path, url, access(1, 3600), "real-refresh-1")
    vendor.reply = _only({second})
    async with signed_relay(vendor, tmp_path / "r.sock", signin) as relay:
        first = await call(relay.socket_path, "POST", TURN, {"model": "gpt-5.5"}, BEARER)
        vendor.reply = _only({third})  # the second is revoked after serving a call
        again = await call(relay.socket_path, "POST", TURN, {"model": "gpt-5.5"}, BEARER)
    assert (first.status, again.status) == (200, 200)
    assert [a["refresh_token"] for a in found.asked] == ["real-refresh-1", "real-refresh-2"]


async def test_a_kennel_alternating_a_401_and_a_200_gets_a_few_refreshes_only(
    vendor: Vendor, endpoint: tuple[TokenEndpoint, str], tmp_path: Path
) -> None:
    """The kennel shapes every other call so the vendor answers 401 to a good token, and
    the call between is served: each pair would be a refresh."""
    found, url = endpoint
    good = {access(1, 3600)}
    for n in range(1, 30):
        token = access(n + 1, 3600)
        good.add(token)
        found.grants[f"real-refresh-{n}"] = (token, f"real-refresh-{n + 1}")
    signin = _signin(tmp_path, url, access(1, 3600), "real-refresh-1")

    async def shaped(request: web.Request) -> web.StreamResponse:
        bearer = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if bearer not in good or "x-shaped" in request.headers:
            return web.json_response({"error": {"message": "no"}}, status=401)
        return web.json_response({"ok": True, "usage": {"input_tokens": 1}})

    vendor.reply = shaped
    async with signed_relay(vendor, tmp_path / "r.sock", signin) as relay:
        for _ in range(10):
            for extra in ({"x-shaped": "1"}, {}):
                await call(relay.socket_path, "POST", TURN, {"model": "m"}, {**BEARER, **extra})
    assert len(found.asked) <= 3, f"{len(found.asked)} refreshes for 10 shaped 401s"
