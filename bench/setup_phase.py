"""What the setup phase costs (issue 21, point 8): the first task on a repository with a
``.fetch/setup.sh`` against a repeat task that reuses the kept setup layer, and the
same task on the same repository without a setup layer at all, on both kennels, in one
run.

The whole app (``build_app`` with the terminal channel, the demo harness, the tests
before approval), through the real kennel: the script makes a venv and installs a wheel
and an npm package from a package index of the benchmark's own on 127.0.0.1 through the
egress proxy. Each task is "fix the typo", timed from the message to the diff card, and
answered "no". Figures per backend: the first task (setup included; p50 over fresh
homes), the repeat task (layer reused), the same task on a repository with no script
(baseline), and the ratios repeat/baseline (the per-task overhead of the layer: target
within 1.2x) and first/repeat.

``python -m bench.setup_phase`` (about 5 min on 2 cores) or ``--quick``.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import GIT_ID, ratio, summary, table
from channels.terminal import TerminalChannel
from orchestrator.app import build_app
from orchestrator.config import load_settings
from tests.fakes.package_index import PackageIndex

ROUNDS = 5
QUICK_ROUNDS = 2
TARGET = 1.2  # a repeat task within 1.2x the same task with no setup layer (p50)
SCRIPT = """\
python3 -m venv --system-site-packages .venv
.venv/bin/python -m pip install -q --index-url {index}/simple/ --trusted-host 127.0.0.1 tinydep
npm install --silent --no-audit --no-fund --registry {index}/ tinynode@1.0.0
"""
TEST = "import tinydep\n\n\ndef test_value():\n    assert tinydep.VALUE == 42\n"


def _repo(root: Path, name: str, index: str | None) -> None:
    repo = root / name
    (repo / ".fetch").mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    # teh sum\n    return a + b\n")
    (repo / ".gitignore").write_text(".venv/\nnode_modules/\npackage*.json\n")
    if index is not None:
        (repo / ".fetch" / "setup.sh").write_text(SCRIPT.format(index=index))
        (repo / "test_calc.py").write_text(TEST)
    else:
        (repo / "test_calc.py").write_text(TEST.replace("import tinydep", "tinydep = None"))
    git = ["git", *GIT_ID, "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)


async def _task(terminal: TerminalChannel, repo: str) -> float:
    started = time.perf_counter()
    await terminal.submit(f"fix the typo in calc.py of {repo}")
    while True:
        message = await asyncio.wait_for(terminal.outbox.get(), 900)
        if "Apply?" in message.text:
            took = time.perf_counter() - started
            break
        if message.text.startswith("❌"):
            raise RuntimeError(message.text)
    await terminal.submit("no")
    while "Discarded" not in (await asyncio.wait_for(terminal.outbox.get(), 60)).text:
        pass
    return took


async def _backend(backend: str, rounds: int, index: PackageIndex) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"first": [], "repeat": [], "baseline": []}
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(prefix="fetch-bench-setup-") as scratch:
            root = Path(scratch)
            ws = root / "ws"
            _repo(ws, "deps", index.url)
            _repo(ws, "plain", None)
            config = root / "config.yaml"
            config.write_text(f"kennel:\n  setup:\n    registries: ['127.0.0.1:{index.port}']\n")
            settings = load_settings(
                config,
                {
                    "FETCH_HOME": str(root / "home"),
                    "FETCH_WORKSPACE": str(ws),
                    "FETCH_HARNESS": "demo",
                    "FETCH_KENNEL": backend,
                },
            )
            terminal = TerminalChannel(settings.terminal.chat)
            app = build_app(settings, channels=[terminal])
            await app.__aenter__()
            try:
                await _task(terminal, "plain")  # warms the kennel (a container's start)
                out["first"].append(await _task(terminal, "deps"))
                out["repeat"].append(await _task(terminal, "deps"))
                out["baseline"].append(await _task(terminal, "plain"))
            finally:
                await app.__aexit__(None, None, None)
    return out


def _docker_ready() -> bool:
    try:
        import docker

        from kennel.build import image_tag

        docker.from_env().images.get(image_tag())
        return True
    except Exception:
        return False


async def _run(rounds: int) -> dict[str, Any]:
    backends = ["bwrap"] + (["docker"] if _docker_ready() else [])
    result: dict[str, Any] = {"rounds": rounds, "backends": {}}
    async with PackageIndex() as index:
        for backend in backends:
            samples = await _backend(backend, rounds, index)
            stats = {k: summary(v) for k, v in samples.items()}
            result["backends"][backend] = {
                "stats": stats,
                "repeat_over_baseline": ratio(stats["repeat"]["p50"], stats["baseline"]["p50"]),
                "first_over_repeat": ratio(stats["first"]["p50"], stats["repeat"]["p50"]),
            }
    if "docker" not in result["backends"]:
        result["note"] = "Docker kennel not available: bwrap only"
    return result


def run(n: int = ROUNDS) -> dict[str, Any]:
    return asyncio.run(_run(n))


def render(result: dict[str, Any]) -> str:
    rows = []
    for backend, data in result["backends"].items():
        stats = data["stats"]
        for what in ("first", "repeat", "baseline"):
            rows.append(
                [
                    backend,
                    what,
                    f"{stats[what]['p50']:.2f} s",
                    f"{stats[what]['p99']:.2f} s",
                ]
            )
        over = data["repeat_over_baseline"]
        verdict = "PASS" if over <= TARGET else "MISS"
        rows.append([backend, "repeat / baseline", f"{over:.2f}x", f"target {TARGET}x {verdict}"])
        rows.append([backend, "first / repeat", f"{data['first_over_repeat']:.1f}x", ""])
    text = table(
        "setup phase: first task, repeat task, no setup", ["kennel", "task", "p50", "p99"], rows
    )
    if "note" in result:
        text += f"\n{result['note']}"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    result = run(QUICK_ROUNDS if args.quick else ROUNDS)
    print(render(result))


if __name__ == "__main__":
    main()
