"""Benchmark: the web chat round trip through real HTTP and Server-Sent Events.

One real app (SQLite in a temp FETCH_HOME, a temp workspace with one tiny git repo, the
demo harness in the bwrap kennel) built as ``fetch`` builds it: the web chat and the
terminal channel, the HTTP listener on 127.0.0.1 (an ephemeral port). A real HTTP client
logs in with the login link, keeps one event stream open (as the page does) and posts
like the page (JSON + CSRF header + session cookie). Interleaved, so a noisy neighbour
slows all alike:

* ``/status`` via the web chat: POST -> its reply read off the event stream;
* ``/status`` via the terminal channel (baseline: the same app, no HTTP at all);
* ``GET /healthz`` (baseline: the bare HTTP round trip of the same listener);
* the demo task via the web chat: POST "fix the typo ..." -> first streamed reply
  ("On it"), and -> the diff with its buttons; then "no" (discarded, the tree restored)
  so every task starts from the same repository. Against the same task typed on the
  terminal channel.

Each message is sent once the previous one has settled (its last SQLite write), as in
``bench.roundtrip``: the figure is latency, not contention.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import aiohttp

from bench._common import fresh_dirs, ratio, summary, table
from bench.roundtrip import Settled
from channels.http.auth import CSRF_HEADER
from channels.terminal import TerminalChannel
from core.events import Outbound
from orchestrator.app import build_app
from orchestrator.config import load_settings

WARMUP = 20
TASK = "fix the typo in README.md of demo"
SUBJECTS = ("web /status", "terminal /status", "GET /healthz")
TASK_SUBJECTS = (
    "web task: first reply",
    "web task: diff",
    "terminal task: first reply",
    "terminal task: diff",
)


class EventStream:
    """The page's EventSource, reduced to what the figure needs: the next event's data."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response

    async def next(self) -> dict[str, Any]:
        data = ""
        while True:
            raw = await self._response.content.readline()
            if not raw:
                raise RuntimeError("bench: the event stream ended")
            line = raw.decode().rstrip("\n")
            if line.startswith("data:"):
                data = line[5:].strip()
            elif line == "" and data:
                parsed: dict[str, Any] = json.loads(data)
                return parsed

    async def until(self, check: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        while not check(event := await self.next()):
            pass
        return event


def _us(ns: int) -> float:
    return ns / 1000.0


async def _terminal_until(terminal: TerminalChannel, check: Callable[[Outbound], bool]) -> Outbound:
    while not check(reply := await terminal.outbox.get()):
        pass
    return reply


async def _measure(n: int, tasks: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in (*SUBJECTS, *TASK_SUBJECTS)}
    with fresh_dirs("webchat") as (home, workspace):
        settings = load_settings(
            None,
            {
                "FETCH_HOME": str(home),
                "FETCH_WORKSPACE": str(workspace),
                "FETCH_HARNESS": "demo",
                "FETCH_KENNEL": "bwrap",
                "FETCH__HTTP__PORT": "0",
            },
        )
        terminal = TerminalChannel(settings.terminal.chat)
        async with build_app(settings, terminal=terminal) as app:
            assert app.services is not None and app.http is not None
            assert app.web_auth is not None
            settled = Settled(app.services.store)
            base = app.http.url
            headers = {CSRF_HEADER: app.web_auth.csrf_token()}
            jar = aiohttp.CookieJar(unsafe=True)  # the cookie of 127.0.0.1, as a browser
            async with aiohttp.ClientSession(cookie_jar=jar) as http:
                async with http.get(app.web_auth.login_url(base), allow_redirects=False) as r:
                    assert r.status == 303, await r.text()
                async with http.get(base + "/chat/events") as response:
                    stream = EventStream(response)

                    async def web(text: str) -> None:
                        async with http.post(
                            base + "/chat/send", json={"text": text}, headers=headers
                        ) as r:
                            if r.status != 202:
                                raise RuntimeError(f"bench: send refused: {await r.text()}")

                    async def web_status() -> int:
                        settled.event.clear()
                        t0 = time.perf_counter_ns()
                        await web("/status")
                        reply = await stream.until(lambda e: e["kind"] == "message")
                        took = time.perf_counter_ns() - t0
                        if "Fetch ·" not in reply["text"]:
                            raise RuntimeError(f"bench: unexpected reply {reply['text'][:80]!r}")
                        await settled.event.wait()
                        return took

                    async def terminal_status() -> int:
                        settled.event.clear()
                        t0 = time.perf_counter_ns()
                        await terminal.submit("/status")
                        reply = await terminal.outbox.get()
                        took = time.perf_counter_ns() - t0
                        if "Fetch ·" not in reply.text:
                            raise RuntimeError(f"bench: unexpected reply {reply.text[:80]!r}")
                        await settled.event.wait()
                        return took

                    async def healthz() -> int:
                        t0 = time.perf_counter_ns()
                        async with http.get(base + "/healthz") as r:
                            await r.read()
                        return time.perf_counter_ns() - t0

                    steps = (
                        ("web /status", web_status),
                        ("terminal /status", terminal_status),
                        ("GET /healthz", healthz),
                    )
                    for i in range(WARMUP + n):
                        for name, step in steps:
                            took = await step()
                            if i >= WARMUP:
                                samples[name].append(_us(took))

                    for _ in range(tasks):
                        t0 = time.perf_counter_ns()
                        await web(TASK)
                        await stream.until(lambda e: e["kind"] == "message")
                        samples["web task: first reply"].append(_us(time.perf_counter_ns() - t0))
                        await stream.until(lambda e: bool(e.get("nonce")))
                        samples["web task: diff"].append(_us(time.perf_counter_ns() - t0))
                        await web("no")
                        await stream.until(lambda e: "Discarded" in e["text"])

                        t0 = time.perf_counter_ns()
                        await terminal.submit(TASK)
                        await terminal.outbox.get()
                        first = time.perf_counter_ns() - t0
                        samples["terminal task: first reply"].append(_us(first))
                        await _terminal_until(terminal, lambda m: m.approval_nonce is not None)
                        samples["terminal task: diff"].append(_us(time.perf_counter_ns() - t0))
                        await terminal.submit("no")
                        await _terminal_until(terminal, lambda m: "Discarded" in m.text)
                        await app.drain()
    return samples


def run(n: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    tasks = max(3, min(10, n // 50))
    samples = asyncio.run(_measure(n, tasks))
    stats = {name: summary(values) for name, values in samples.items()}
    ratios = {
        "web /status vs terminal /status": {
            q: ratio(stats["web /status"][q], stats["terminal /status"][q]) for q in ("p50", "p99")
        },
        "web /status vs GET /healthz": {
            q: ratio(stats["web /status"][q], stats["GET /healthz"][q]) for q in ("p50", "p99")
        },
        "web task diff vs terminal task diff": {
            q: ratio(stats["web task: diff"][q], stats["terminal task: diff"][q])
            for q in ("p50", "p99")
        },
        "web task first reply vs terminal": {
            q: ratio(stats["web task: first reply"][q], stats["terminal task: first reply"][q])
            for q in ("p50", "p99")
        },
    }
    return {
        "unit": "microseconds",
        "messages": n,
        "tasks": tasks,
        "warmup": WARMUP,
        "stats": stats,
        "ratios": ratios,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def render(result: dict[str, Any]) -> str:
    stats = result["stats"]
    rows = [
        [name, int(s["n"]), s["p50"], s["p90"], s["p99"], s["max"]] for name, s in stats.items()
    ]
    out = [
        table(
            f"web chat round trip over HTTP + SSE ({result['messages']:,} /status each, "
            f"{result['tasks']} demo tasks each, µs)",
            ["", "n", "p50", "p90", "p99", "max"],
            rows,
        ),
        table(
            "ratios, same run",
            ["", "p50", "p99"],
            [[name, r["p50"], r["p99"]] for name, r in result["ratios"].items()],
        ),
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    n = int(argv[0]) if argv else 500
    print(render(run(n)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
