"""What a kennel on another Docker engine adds to a task (issue 25, 5), in one run.

A second dockerd is started here (tests/docker/remote_daemon.py: its own data root and
a TLS port on 127.0.0.1, the real kennel image copied in), beside the local engine. The
same task, an edit of a file in the run's tree by a shell in the kennel, runs on a run
of the same repository through the local Docker kennel (bind mounts) and the remote one
(the tree put there as a tar, the result taken back and read as data), rounds
interleaved, warm kennels, timed from ``exec`` to the end of ``wait`` (so the remote
figure includes the push and the pull). Two repositories: the tiny demo one and one of
1,000 files (8 MB), since the remote cost grows with the tree. The first task on each
(the container made) is reported apart, as cold.

The engine is on the same machine here, so the figures are the protocol's cost (tar,
TLS, archive API, reading back), not a network's: add the link's transfer time for
the tree's size on a real one.

    python -m bench.remote_kennel [ROUNDS]
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import GIT_ID, make_repo, summary, table
from kennel.base import ExecSpec, Kennel
from kennel.build import image_tag
from kennel.docker_backend import DockerKennel
from kennel.remote import RemoteDockerKennel
from kennel.remote_engine import Engine
from kennel.settings import DockerKennelSettings
from orchestrator.boundary.gitops import Repo
from orchestrator.boundary.layer import build_layers
from orchestrator.boundary.remote_files import RemoteFiles
from tests.docker.remote_daemon import SecondEngine

TASK = "sed -i s/Teh/The/ README.md && echo done > result.txt"


def _big_repo(root: Path) -> Path:
    """1,000 files of 8 KB in 20 folders, committed."""
    repo = make_repo(root, "big")
    for i in range(1000):
        path = repo / f"pkg{i % 20}" / f"mod{i}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes((f"# module {i}\n" + "x = 1\n" * 1360)[:8192].encode())
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (("add", "-A"), ("commit", "-q", "-m", "big")):
        subprocess.run(["git", *GIT_ID, *args], cwd=repo, check=True, env=env)
    return repo


async def _task(kennel: Kennel, home: Path, repo: Path, n: int) -> float:
    """One task on a fresh run of ``repo``: ms from exec to the end of wait."""
    layer = build_layers(home, kennel).open(Repo(repo), n, host_mounts=kennel.host_mounts)
    try:
        layer.fresh_state("bench")
        layer.prepared()
        layout = kennel.layout(layer.tree, "bench", repo)
        spec = ExecSpec(("sh", "-c", TASK), {"PATH": layout.path_env}, layer.tree, layout)
        started = time.perf_counter()
        proc = await kennel.exec(spec)
        async for _line in proc.lines():
            pass
        code = await proc.wait()
        took = (time.perf_counter() - started) * 1000
        if code != 0 or "The quick" not in (layer.tree / "README.md").read_text():
            raise RuntimeError(f"the task did not run (exit {code}): {proc.stderr_tail()}")
        return took
    finally:
        layer.drop()


async def _run(rounds: int) -> dict[str, Any]:
    tag = image_tag()
    root = Path(tempfile.mkdtemp(prefix="fetch-bench-remote-"))
    engine = SecondEngine(root / "engine")
    (root / "engine").mkdir()
    local: DockerKennel | None = None
    remote: RemoteDockerKennel | None = None
    try:
        engine.start()
        engine.load_image(tag)
        repos = {"demo": make_repo(root / "ws"), "1,000 files": _big_repo(root / "ws")}
        local = DockerKennel(root / "home-local", DockerKennelSettings(), tag)
        remote = RemoteDockerKennel(
            root / "home-remote",
            DockerKennelSettings(),
            tag,
            Engine.parse(engine.url, engine.certs, True),
            files=RemoteFiles(root / "home-remote"),
        )
        samples: dict[str, list[float]] = {}
        cold: dict[str, float] = {}
        n = 0
        for name, repo in repos.items():
            for kind, kennel in (("local", local), ("remote", remote)):
                n += 1
                home = root / f"home-{kind}"
                cold[f"{kind} {name}"] = await _task(kennel, home, repo, n)
            for _ in range(rounds):
                for kind, kennel in (("local", local), ("remote", remote)):
                    n += 1
                    home = root / f"home-{kind}"
                    took = await _task(kennel, home, repo, n)
                    samples.setdefault(f"{kind} {name}", []).append(took)
        stats = {k: summary(v) for k, v in samples.items()}
        added = {
            name: stats[f"remote {name}"]["p50"] - stats[f"local {name}"]["p50"] for name in repos
        }
        return {
            "ms": stats,
            "cold_ms": cold,
            "added_p50_ms": added,
            "engine": engine.figures,
        }
    finally:
        for made in (local, remote):
            if made is not None:
                await made.close()
        await asyncio.to_thread(engine.stop)
        await asyncio.to_thread(_remove, root)


def _remove(root: Path) -> None:
    subprocess.run(["rm", "-rf", "--one-file-system", "--", str(root)], check=False)
    shutil.rmtree(root, ignore_errors=True)


def run(n: int) -> dict[str, Any]:
    return asyncio.run(_run(n))


def render(result: dict[str, Any]) -> str:
    cold = result["cold_ms"]
    rows = [[k, s["p50"], s["p90"], s["max"], cold[k]] for k, s in result["ms"].items()]
    text = table(
        "a task on the local engine vs another engine (TLS, same machine): exec -> wait (ms)",
        ["", "p50", "p90", "max", "cold"],
        rows,
    )
    for name, ms in result["added_p50_ms"].items():
        text += f"\nremote_added_p50_ms[{name}]: {ms:.0f}"
    engine = result["engine"]
    text += f"\nsecond_engine_start_s: {engine.get('engine_start_s', 0):.2f}"
    text += f"\nkennel_image_copy_s: {engine.get('image_copy_s', 0):.1f}"
    return text


if __name__ == "__main__":
    print(render(run(int(sys.argv[1]) if len(sys.argv) > 1 else 5)))
