"""What a kennel adds to starting a CLI, two ways, every row interleaved in one run:

1. **Start overhead** (issue 10.8): ``true`` started bare on the host vs inside the bwrap
   sandbox (the default without Docker) and a warm Docker kennel, timed from exec to
   exit, relay included. Targets: bwrap overhead under 100 ms, Docker under 300 ms (p50).
2. **First model request** (issue 3): the real Claude Code asked "say ok", timed to its
   first request at the project's scripted fake model (real HTTP on 127.0.0.1), bare and
   through each kennel's real relay on a unix socket, plus a cold Docker kennel.
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
from kennel.bwrap import BwrapKennel
from kennel.bwrap import probe as bwrap_probe
from kennel.local import LocalKennel
from kennel.relay import PLACEHOLDER_KEY
from orchestrator.boundary.gitops import Repo
from orchestrator.boundary.layer import Layer, build_layers
from tests.fakes.model_server import ScriptedModelServer, Text

TARGET_MS = 300.0  # docker warm, over the bare CLI (p50)
BWRAP_TARGET_MS = 100.0  # the bwrap sandbox, over the bare CLI (p50)
START_REPEAT = 5  # `true` samples per claude sample: it is cheap and the figure is small


async def _first_request(srv: ScriptedModelServer, before: int, started: float) -> float:
    # The fake records requests in a list; a 2 ms poll is finer than what is measured.
    # A CLI that never asks (refused by the relay, crashed) fails the run, not hangs it.
    while len(srv.model_requests) <= before:
        if time.perf_counter() - started > 120:
            raise RuntimeError("no model request within 120 s (see the relay log)")
        await asyncio.sleep(0.002)
    return (time.perf_counter() - started) * 1000


async def _bare(srv: ScriptedModelServer, repo: Path, state: Path) -> float:
    harness = ClaudeCode()
    argv, env = harness.command(
        HarnessRequest(
            prompt="say ok",
            workdir=repo,
            state_dir=state,
            model_url=srv.url,
            placeholder_key=PLACEHOLDER_KEY,
            path_env=os.environ.get("PATH", ""),
        )
    )
    before = len(srv.model_requests)
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=repo,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    took = await _first_request(srv, before, started)
    await proc.wait()
    return took


def open_run(kennel: Kennel, home: Path, repo: Path, harness: str) -> Layer:
    """A run's own layer over ``repo`` for ``kennel``, as the runner opens one: its tree
    (``<runs>/<repo>/<run>/tree``) and a fresh ``state/<harness>`` owned by the kennel's
    uid. Made before the clock starts; ``drop()`` it after. Each kennel has its own base
    (one Fetch runs one kennel: its base belongs to that kennel's uid)."""
    # Its own base per kennel (the uids differ); Docker's runs must live in its own
    # home, whose runs folder it shares with its containers.
    own = home if kennel.name == "docker" else home / "layers" / kennel.name
    layers = build_layers(own, kennel)
    layer = layers.open(Repo(repo), 0, host_mounts=kennel.host_mounts)
    layer.fresh_state(harness)
    layer.prepared()
    return layer


async def _kennel(
    srv: ScriptedModelServer, kennel: Kennel, run: Layer, repo: Path, log: Path
) -> float:
    run.fresh_state("claude-code")
    layout = kennel.layout(run.tree, "claude-code", repo)
    started = time.perf_counter()
    before = len(srv.model_requests)
    relay = RelaySpec(
        upstream=srv.url,
        provider="anthropic",
        api_key="sk-bench-key-000000",
        harness="bench",
        task_id=0,
        log_path=log,
    )
    harness = ClaudeCode()
    req = HarnessRequest(
        prompt="say ok",
        workdir=layout.workdir,
        state_dir=layout.state_seen,
        model_url=f"http://127.0.0.1:{layout.relay_port}",
        placeholder_key=relay.secret,  # the run's own: the relay refuses any other
        path_env=layout.path_env,
        confined=layout.confined,
    )
    harness.prepare(req, layout.state_host)
    run.prepared()
    argv, env = harness.command(req)
    # The kennel starts the relay with the process and stops it when the process ends.
    proc: KennelProcess = await kennel.exec(
        ExecSpec(tuple(argv), env, run.tree, layout, relay=relay, git=repo / ".git")
    )
    took = await _first_request(srv, before, started)
    async for _line in proc.lines():
        pass
    await proc.wait()
    return took


async def _bare_true() -> float:
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        "true",
        env={"PATH": "/usr/bin:/bin"},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    await proc.wait()
    return (time.perf_counter() - started) * 1000


async def _kennel_true(kennel: Kennel, run: Layer, repo: Path, url: str, log: Path) -> float:
    """exec -> exit of `true` on the run's layer (``open_run``), with the relay the kennel
    starts and stops around it."""
    layout = kennel.layout(run.tree, "bench", repo)
    relay = RelaySpec(
        upstream=url,
        provider="anthropic",
        api_key="sk-bench-key-000000",
        harness="bench",
        task_id=0,
        log_path=log,
    )
    started = time.perf_counter()
    proc = await kennel.exec(
        ExecSpec(
            ("true",), {"PATH": "/usr/bin:/bin"}, run.tree, layout, relay=relay, git=repo / ".git"
        )
    )
    async for _line in proc.lines():
        pass
    code = await proc.wait()
    if code != 0:
        raise RuntimeError(f"{kennel.name}: true exited {code}: {proc.stderr_tail()}")
    return (time.perf_counter() - started) * 1000


async def _run(n: int) -> dict[str, Any]:
    start = await _run_start(n * START_REPEAT)
    first = await _run_first_request(n)
    return {"start": start, **first}


async def _run_start(n: int) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="fetch-bench-kstart-"))
    results: dict[str, list[float]] = {"bare `true`": [], "bwrap sandbox": [], "docker warm": []}
    notes: list[str] = []
    runs: list[Layer] = []
    try:
        repo = make_repo(root / "ws")
        home = root / "home"
        log = home / "relay.jsonl"
        sandbox = BwrapKennel(home) if bwrap_probe() is None else None
        if sandbox is None:
            notes.append(f"bwrap: {bwrap_probe()}; skipped")
        else:
            runs.append(bwrap_run := open_run(sandbox, home, repo, "bench"))
        docker_kennel = _docker(home)
        if docker_kennel is None:
            notes.append("docker: no engine or no kennel image; skipped")
        else:
            runs.append(docker_run := open_run(docker_kennel, home, repo, "bench"))
        async with ScriptedModelServer() as srv:
            for i in range(n + 1):  # the first round warms caches and the container
                row = {"bare `true`": await _bare_true()}
                if sandbox is not None:
                    row["bwrap sandbox"] = await _kennel_true(
                        sandbox, bwrap_run, repo, srv.url, log
                    )
                if docker_kennel is not None:
                    row["docker warm"] = await _kennel_true(
                        docker_kennel, docker_run, repo, srv.url, log
                    )
                if i:
                    for name, ms in row.items():
                        results[name].append(ms)
            if docker_kennel is not None:
                await docker_kennel.close()
    finally:
        for run in runs:
            run.drop()
        shutil.rmtree(root, ignore_errors=True)
    stats = {k: summary(v) for k, v in results.items() if v}
    bare = stats["bare `true`"]["p50"]
    return {
        "ms": stats,
        "notes": notes,
        "ratios_p50": {k: ratio(s["p50"], bare) for k, s in stats.items()},
        "overhead_p50_ms": {k: s["p50"] - bare for k, s in stats.items()},
        "overhead_p99_ms": {k: s["p99"] - stats["bare `true`"]["p99"] for k, s in stats.items()},
        "targets_ms": {"bwrap sandbox": BWRAP_TARGET_MS, "docker warm": TARGET_MS},
    }


async def _run_first_request(n: int) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="fetch-bench-kennel-"))
    results: dict[str, list[float]] = {
        "bare CLI on host": [],
        "bwrap sandbox": [],
        "unsafe-local": [],
        "docker warm": [],
        "docker cold": [],
    }
    notes: list[str] = []
    runs: dict[str, Layer] = {}
    try:
        repo = make_repo(root / "ws")
        home = root / "home"
        log = home / "relay.jsonl"
        async with ScriptedModelServer() as srv:
            srv.default = Text("ok")
            local = LocalKennel(home, "auto", os.environ.get("PATH", ""))
            sandbox = (
                BwrapKennel(home, path_env=os.environ.get("PATH", ""))
                if bwrap_probe() is None
                else None
            )
            docker_kennel = _docker(home)
            if docker_kennel is None:
                notes.append("docker: no engine or no kennel image; skipped")
            for kennel in (local, sandbox, docker_kennel):
                if kennel is not None:
                    runs[kennel.name] = open_run(kennel, home, repo, "claude-code")
            for i in range(n):
                results["bare CLI on host"].append(await _bare(srv, repo, root / f"bare{i}"))
                if sandbox is not None:
                    results["bwrap sandbox"].append(
                        await _kennel(srv, sandbox, runs[sandbox.name], repo, log)
                    )
                results["unsafe-local"].append(
                    await _kennel(srv, local, runs[local.name], repo, log)
                )
                if docker_kennel is not None:
                    results["docker warm" if i else "docker cold"].append(
                        await _kennel(srv, docker_kennel, runs[docker_kennel.name], repo, log)
                    )
            if docker_kennel is not None:
                for _ in range(max(1, n // 3)):
                    await docker_kennel.close()  # the next exec creates the container
                    results["docker cold"].append(
                        await _kennel(srv, docker_kennel, runs[docker_kennel.name], repo, log)
                    )
                await docker_kennel.close()
    finally:
        for run in runs.values():
            run.drop()
        shutil.rmtree(root, ignore_errors=True)
    stats = {k: summary(v) for k, v in results.items() if v}
    bare = stats["bare CLI on host"]["p50"]
    warm = stats.get("docker warm", {}).get("p50", float("nan"))
    return {
        "ms": stats,
        "notes": notes,
        "ratios_p50": {k: ratio(s["p50"], bare) for k, s in stats.items()},
        "warm_overhead_ms": warm - bare,
        "target_ms": TARGET_MS,
    }


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
    start = result.get("start")
    text = ""
    if start is not None:
        rows = [
            [
                name,
                s["p50"],
                s["p99"],
                s["max"],
                start["ratios_p50"][name],
                start["overhead_p50_ms"][name],
            ]
            for name, s in start["ms"].items()
        ]
        text += (
            table(
                "kennel start overhead: exec -> exit of `true` (ms)",
                ["", "p50", "p99", "max", "x bare p50", "+ms p50"],
                rows,
            )
            + "\n"
        )
        for name, target in start["targets_ms"].items():
            if name in start["overhead_p50_ms"]:
                over = start["overhead_p50_ms"][name]
                verdict = "PASS" if over < target else "MISS"
                text += (
                    f"   {name} overhead over bare: p50 {over:,.0f} ms, p99 "
                    f"{start['overhead_p99_ms'][name]:,.0f} ms "
                    f"(target < {target:.0f} ms) {verdict}\n"
                )
        for note in start["notes"]:
            text += f"   note: {note}\n"
        text += "\n"
    rows = [
        [name, s["p50"], s["p90"], s["max"], result["ratios_p50"][name]]
        for name, s in result["ms"].items()
    ]
    text += table(
        "kennel start: task start -> first model request (ms)",
        ["", "p50", "p90", "max", "x bare p50"],
        rows,
    )
    overhead = result["warm_overhead_ms"]
    verdict = "PASS" if overhead < result["target_ms"] else "MISS"
    text += (
        f"\n   warm docker overhead over the bare CLI: {overhead:,.0f} ms "
        f"(target < {result['target_ms']:.0f} ms) {verdict}"
    )
    bwrap = result["ms"].get("bwrap sandbox")
    if bwrap is not None:
        over = bwrap["p50"] - result["ms"]["bare CLI on host"]["p50"]
        text += f"\n   bwrap sandbox overhead over the bare CLI: {over:,.0f} ms"
    for note in result["notes"]:
        text += f"\n   note: {note}"
    return text


if __name__ == "__main__":
    print(render(run(6)))
