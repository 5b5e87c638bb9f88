"""Benchmark: the owner first (issue 11.3). A member floods, the owner asks ``/status``.

A real app behind the real WhatsApp adapter; WhatsApp itself is the test suite's fake
client (``tests/channels/whatsapp/fake_client.py``): events are real neonize protobufs,
serialised and handed over from a foreign thread as neonize does. The owner's latency
runs from handing the ``/status`` event over until the adapter's send of the answer.

* ``quiet``: the owner's ``/status`` alone, one after another.
* ``flood``: an allowlisted member sends N messages back to back (default rate limit:
  most are refused at once, the member is told once a window), then the owner's
  ``/status``.
* ``flood, no limit``: the same with the limit out of the way, so all N are accepted
  and queue in the member's session: the owner's answer must not wait for them.

Rounds alternate quiet and flood samples, so a noisy neighbour slows both alike and the
ratio stays meaningful. Target: the owner's ``/status`` answered within 1 s.

``python -m bench.flood [N]``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from bench._common import fresh_dirs, ratio, summary, table
from orchestrator.app import build_app
from orchestrator.config import load_settings
from tests.channels.whatsapp.builders import FRIEND, OWNER, text_from
from tests.channels.whatsapp.fake_client import FakeWhatsAppClient
from tests.channels.whatsapp.whole_app import whatsapp_channel

TARGET_MS = 1000.0
ROUNDS = 8
OWNER_CHAT = f"{OWNER}@s.whatsapp.net"


def _ms(seconds: float) -> float:
    return seconds * 1000.0


async def _answered(client: FakeWhatsAppClient, after: int) -> float:
    """Wait (30 s at most) for the answer past call ``after``; when it was sent."""
    deadline = time.perf_counter() + 30.0
    while time.perf_counter() < deadline:
        for call in client.calls[after:]:
            if call.name == "send" and call.chat == OWNER_CHAT and "Fetch ·" in call.text:
                return call.at
        await asyncio.sleep(0.001)
    raise TimeoutError("the owner's /status was not answered")


async def _owner_status(client: FakeWhatsAppClient, tag: str) -> float:
    after = len(client.calls)
    started = time.monotonic()  # Call.at is monotonic
    client.emit(text_from(OWNER, "/status", id=f"3EBST{tag}"))
    return await _answered(client, after) - started


async def _settle(app: Any) -> None:
    while not app.gateway.idle() or app.services.supervisor.running("limit:"):  # noqa: ASYNC110
        await asyncio.sleep(0.01)


async def _variant(home: Path, workspace: Path, n: int, rate: str | None) -> dict[str, Any]:
    env = {
        "FETCH_HOME": str(home),
        "FETCH_WORKSPACE": str(workspace),
        "FETCH_HARNESS": "demo",
        "FETCH_KENNEL": "unsafe-local",
        "FETCH__WHATSAPP__ENABLED": "true",
        "FETCH_WHATSAPP_OWNER": f"+{OWNER}",  # a fictional number: written with its +
        "FETCH__WHATSAPP__MIN_SEND_INTERVAL_SECONDS": "0",
        "FETCH__WHATSAPP__SENDS_PER_MINUTE": "1000000",
        "FETCH__ALLOWLIST": f'["whatsapp:{FRIEND}"]',
    }
    if rate is not None:
        env["FETCH__GATEWAY__RATE_PER_MINUTE"] = rate
    settings = load_settings(None, env)
    client = FakeWhatsAppClient()
    channel = whatsapp_channel(settings, client)
    quiet: list[float] = []
    flooded: list[float] = []
    member_handed_over: list[float] = []
    async with build_app(settings, channels=[channel]) as app:
        await _owner_status(client, "warm")
        for r in range(ROUNDS):
            quiet.append(await _owner_status(client, f"q{r}"))
            started = time.perf_counter()
            for i in range(n):
                client.emit(text_from(FRIEND, "/help", id=f"3EBFL{r}x{i}"))
            member_handed_over.append(time.perf_counter() - started)
            flooded.append(await _owner_status(client, f"f{r}"))
            await _settle(app)
        refused_notices = sum("faster than" in c.text for c in client.named("send"))
    return {
        "quiet_ms": summary([_ms(v) for v in quiet]),
        "flood_ms": summary([_ms(v) for v in flooded]),
        "hand_over_ms": summary([_ms(v) for v in member_handed_over]),
        "limit_notices": refused_notices,
    }


def run(n: int) -> dict[str, Any]:
    result: dict[str, Any] = {"flood_messages": n, "rounds": ROUNDS, "target_ms": TARGET_MS}
    for name, rate in (("default limit", None), ("no limit", "1000000")):
        with fresh_dirs("flood") as (home, workspace):
            figures = asyncio.run(_variant(home, workspace, n, rate))
        figures["ratio_p50"] = ratio(figures["flood_ms"]["p50"], figures["quiet_ms"]["p50"])
        figures["ratio_p99"] = ratio(figures["flood_ms"]["p99"], figures["quiet_ms"]["p99"])
        figures["within_target"] = figures["flood_ms"]["max"] <= TARGET_MS
        result[name] = figures
    return result


def render(result: dict[str, Any]) -> str:
    rows = []
    for name in ("default limit", "no limit"):
        f = result[name]
        rows.append([f"{name}: quiet", f["quiet_ms"]["p50"], f["quiet_ms"]["p99"], "", ""])
        rows.append(
            [
                f"{name}: after {result['flood_messages']:,} from a member",
                f["flood_ms"]["p50"],
                f["flood_ms"]["p99"],
                f"{f['ratio_p50']:.1f}x / {f['ratio_p99']:.1f}x",
                "yes" if f["within_target"] else "NO",
            ]
        )
    return table(
        f"owner's /status latency (ms), {result['rounds']} rounds each",
        ["", "p50", "p99", "ratio p50/p99", f"all <= {TARGET_MS:.0f} ms"],
        rows,
    )


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    print(render(run(count)))
