"""Time from task start to the CLI's first model request: the bare CLI on the host, the
local kennel, a warm Docker kennel and a cold one (container created first), in one run.

The CLI is the real Claude Code; the model is the project's scripted fake (real HTTP on
127.0.0.1) answering "ok". Every kennel run goes through the real relay on a unix socket.
Target (issue 3): warm-kennel overhead over the bare CLI under 300 ms (p50).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import make_repo, ratio, summary, table
from harnesses.base import HarnessRequest
from harnesses.claude_code import ClaudeCode
from kennel.base import ExecSpec, Kennel, KennelProcess, RelaySpec
from kennel.local import LocalKennel
from kennel.relay import PLACEHOLDER_KEY
from tests.fakes.model_server import ScriptedModelServer, Text

TARGET_MS = 300.0


async def _first_request(srv: ScriptedModelServer, before: int, started: float) -> float:
    # The fake records requests in a list; a 2 ms poll is finer than what is measured.
    while len(srv.model_requests) <= before:  # noqa: ASYNC110
        await asyncio.sleep(0.002)
    return (time.perf_counter() - started) * 1000


async def _bare(srv: ScriptedModelServer, repo: Path, state: Path) -> float:
    harness = ClaudeCode()
    argv, env = harness.command(HarnessRequest(
        prompt="say ok", workdir=repo, state_dir=state, model_url=srv.url,
        placeholder_key=PLACEHOLDER_KEY, path_env=os.environ.get("PATH", "")))
    before = len(srv.model_requests)
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=repo, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    took = await _first_request(srv, before, started)
    await proc.wait()
    return took


async def _kennel(srv: ScriptedModelServer, kennel: Kennel, repo: Path, log: Path) -> float:
    layout = kennel.layout(repo, "claude-code")
    started = time.perf_counter()
    before = len(srv.model_requests)
    relay = RelaySpec(upstream=srv.url, provider="anthropic", api_key="sk-bench-key-000000",
                      harness="bench", task_id=0, log_path=log)
    harness = ClaudeCode()
    req = HarnessRequest(prompt="say ok", workdir=layout.workdir,
                         state_dir=layout.state_seen,
                         model_url=f"http://127.0.0.1:{layout.relay_port}",
                         placeholder_key=PLACEHOLDER_KEY,
                         path_env=layout.path_env, confined=layout.confined)
    layout.state_host.mkdir(parents=True, exist_ok=True)
    harness.prepare(req, layout.state_host)
    argv, env = harness.command(req)
    # The kennel starts the relay with the process and stops it when the process ends.
    proc: KennelProcess = await kennel.exec(
        ExecSpec(tuple(argv), env, repo, layout, relay=relay))
    took = await _first_request(srv, before, started)
    async for _line in proc.lines():
        pass
    await proc.wait()
    return took


async def _run(n: int) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="fetch-bench-kennel-"))
    results: dict[str, list[float]] = {"bare CLI on host": [], "local kennel": [],
                                       "docker warm": [], "docker cold": []}
    notes: list[str] = []
    try:
        repo = make_repo(root / "ws")
        home = root / "home"
        async with ScriptedModelServer() as srv:
            srv.default = Text("ok")
            local = LocalKennel(home, "auto", os.environ.get("PATH", ""))
            docker_kennel = _docker(home)
            if docker_kennel is None:
                notes.append("docker: no engine or no kennel image; skipped")
            for i in range(n):
                results["bare CLI on host"].append(await _bare(srv, repo, root / f"bare{i}"))
                results["local kennel"].append(
                    await _kennel(srv, local, repo, home / "relay.jsonl"))
                if docker_kennel is not None:
                    results["docker warm" if i else "docker cold"].append(
                        await _kennel(srv, docker_kennel, repo, home / "relay.jsonl"))
            if docker_kennel is not None:
                for _ in range(max(1, n // 3)):
                    await docker_kennel.close()  # the next exec creates the container
                    results["docker cold"].append(
                        await _kennel(srv, docker_kennel, repo, home / "relay.jsonl"))
                await docker_kennel.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    stats = {k: summary(v) for k, v in results.items() if v}
    bare = stats["bare CLI on host"]["p50"]
    warm = stats.get("docker warm", {}).get("p50", float("nan"))
    return {"ms": stats, "notes": notes,
            "ratios_p50": {k: ratio(s["p50"], bare) for k, s in stats.items()},
            "warm_overhead_ms": warm - bare, "target_ms": TARGET_MS}


def _docker(home: Path) -> Any:
    try:
        import docker

        from kennel.build import image_tag
        from kennel.docker_backend import DockerKennel
        from kennel.settings import DockerKennelSettings

        client = docker.from_env(timeout=10)
        tag = image_tag()
        client.images.get(tag)
        client.close()
        return DockerKennel(home, DockerKennelSettings(), tag)
    except Exception:
        return None


def run(n: int) -> dict[str, Any]:
    return asyncio.run(_run(n))


def render(result: dict[str, Any]) -> str:
    rows = [[name, s["p50"], s["p90"], s["max"], result["ratios_p50"][name]]
            for name, s in result["ms"].items()]
    text = table("kennel start: task start -> first model request (ms)",
                 ["", "p50", "p90", "max", "x bare p50"], rows)
    overhead = result["warm_overhead_ms"]
    verdict = "PASS" if overhead < result["target_ms"] else "MISS"
    text += (f"\n   warm docker overhead over the bare CLI: {overhead:,.0f} ms "
             f"(target < {result['target_ms']:.0f} ms) {verdict}")
    for note in result["notes"]:
        text += f"\n   note: {note}"
    return text


if __name__ == "__main__":
    print(render(run(6)))
