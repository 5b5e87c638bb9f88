"""Benchmark: what skills cost the orchestrator model's prompt (issue 14).

Phase 1 of skills puts every installed skill's name and description in the frozen system
prompt (bodies are loaded on demand by ``activate_skill``), so that list must stay small.
Measured with 0 skills, the shipped ones, and the shipped ones plus 50 of the owner's
(descriptions of a realistic ~100 characters):

* the bytes of the first "Say hello" request on the wire (the whole app, real HTTP to
  the scripted model server, the real openai SDK) and of its system prompt;
* the time to build the system prompt (``identity.build_system_prompt``), p50/p99, N
  builds each, and to discover the skills at start-up (reading and validating files);
* the ratio of the 50-skill request to the shipped one.

N is the number of timed builds per case.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from unittest import mock

from bench._common import fresh_dirs, ratio, summary, table

EXTRA = 50
DESCRIPTION = "Use when the owner asks about area {n} - what to check first, and the house rules."


def _owner_skills(home: Path, count: int) -> None:
    for n in range(count):
        path = home / "skills" / f"owner-skill-{n:02d}" / "SKILL.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"---\nname: owner-skill-{n:02d}\ndescription: {DESCRIPTION.format(n=n)}\n---\n"
            + "A body that phase 1 never sends.\n" * 40
        )


async def _hello(home: Path, workspace: Path, empty: bool) -> dict[str, int]:
    """The first request's bytes, through the whole app."""
    from bench._common import model_env
    from channels.terminal import TerminalChannel
    from orchestrator.app import build_app
    from orchestrator.config import load_settings
    from skills import Catalog
    from tests.fakes.model_server import ScriptedModelServer, Text

    with ExitStack() as stack:
        if empty:  # the baseline: no skills at all, not even the shipped ones
            stack.enter_context(mock.patch("orchestrator.app.discover", return_value=Catalog()))
        async with ScriptedModelServer() as model:
            settings = load_settings(None, model_env(home, workspace, model.url))
            terminal = TerminalChannel(settings.terminal.chat)
            app = build_app(settings, channels=[terminal])
            await app.__aenter__()
            try:
                model.script(Text("Hello there."))
                await terminal.submit("Say hello")
                while (
                    "Hello there." not in (await asyncio.wait_for(terminal.outbox.get(), 30)).text
                ):
                    pass
            finally:
                await app.__aexit__(None, None, None)
            raw = next(r.raw for r in model.requests if r.dialect == "openai_chat")
    body = json.loads(raw)
    return {
        "request_bytes": len(raw),
        "system_bytes": len(body["messages"][0]["content"].encode()),
    }


def _timings(home: Path, n: int, empty: bool) -> dict[str, Any]:
    """Build and discovery times (µs) for this home's skills."""
    from identity import FrozenContext, build_system_prompt, load_identity
    from orchestrator.app import SHIPPED_DATA
    from skills import discover

    identity = load_identity(SHIPPED_DATA / "identity")
    found = []
    for _ in range(max(3, n // 20)):
        t0 = time.perf_counter()
        catalog = discover(home / "skills", SHIPPED_DATA / "skills")
        found.append((time.perf_counter() - t0) * 1e6)
    pairs = () if empty else tuple((s.name, s.description) for s in catalog)
    ctx = FrozenContext(workspace="/ws", repos=("demo",), day="2026-11-23 (Monday)", skills=pairs)
    builds = []
    for _ in range(n):
        t0 = time.perf_counter()
        build_system_prompt(identity, ctx)
        builds.append((time.perf_counter() - t0) * 1e6)
    return {"skills": len(pairs), "build_us": summary(builds), "discover_us": summary(found)}


async def _measure(n: int) -> dict[str, Any]:
    cases: dict[str, Any] = {}
    for case, extra in (("none", 0), ("shipped", 0), ("shipped+50", EXTRA)):
        with fresh_dirs("skills") as (home, workspace):
            _owner_skills(home, extra)
            wire = await _hello(home, workspace, empty=case == "none")
            timed = _timings(home, n, empty=case == "none")
            cases[case] = {**wire, **timed}
    per_skill = (cases["shipped+50"]["system_bytes"] - cases["shipped"]["system_bytes"]) / EXTRA
    return {
        "n": n,
        "cases": cases,
        "bytes_per_skill": per_skill,
        "ratio_50_over_shipped": ratio(
            cases["shipped+50"]["request_bytes"], cases["shipped"]["request_bytes"]
        ),
    }


def run(n: int) -> dict[str, Any]:
    return asyncio.run(_measure(max(10, n)))


def render(result: dict[str, Any]) -> str:
    rows = [
        [
            name,
            c["skills"],
            c["request_bytes"],
            c["system_bytes"],
            c["build_us"]["p50"],
            c["build_us"]["p99"],
            c["discover_us"]["p50"],
        ]
        for name, c in result["cases"].items()
    ]
    return (
        table(
            f"Skills in the prompt (phase 1), N={result['n']} builds",
            [
                "skills installed",
                "count",
                "hello bytes",
                "system bytes",
                "build p50 µs",
                "build p99 µs",
                "discover p50 µs",
            ],
            rows,
        )
        + f"\n{result['bytes_per_skill']:.0f} bytes per installed skill; 'Say hello' with 50 "
        f"more skills / with the shipped ones: {result['ratio_50_over_shipped']:.2f}x"
    )


if __name__ == "__main__":
    print(render(run(int(sys.argv[1]) if len(sys.argv) > 1 else 2_000)))
