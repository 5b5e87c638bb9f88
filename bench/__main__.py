"""``python -m bench``: run every benchmark, print a table each, write the JSON.

``--quick`` cuts every N (for a smoke run, not for figures worth quoting);
``--only`` picks benchmarks. After its table each benchmark prints its figures as
``name: value`` lines (bench/figures.py's ``FIGURES`` declares which); ``--write-readme``
also writes them into the generated section of bench/README.md, so the figures quoted
there are the benchmarks' own output (tests/unit/test_bench_figures.py checks each still
exists).
Each benchmark is also runnable alone:
``python -m bench.roundtrip [--profile]``, ``python -m bench.coldstart``,
``python -m bench.memory``, ``python -m bench.flood``, ``python -m bench.agent``,
``python -m bench.model_path [-n N]``,
``python -m bench.prompt_cache [N]``,
``python -m bench.webchat [N]``, ``python -m bench.voice [N]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import (
    agent,
    coldstart,
    costs,
    dashboard,
    flood,
    kennel_start,
    layer,
    mcp_relay,
    memory,
    memory_bench,
    memory_pg,
    memory_scale,
    model_path,
    prompt_cache,
    roundtrip,
    scheduler_bench,
    setup_phase,
    skills_prompt,
    voice,
    webchat,
)
from bench._common import figure_line, figures
from bench.figures import FIGURES, README, write_readme

RESULTS = Path(__file__).resolve().parent / "results"

# name -> (run(n), render(result), full N, quick N)
Benchmark = tuple[Callable[[int], dict[str, Any]], Callable[[dict[str, Any]], str], int, int]
BENCHMARKS: dict[str, Benchmark] = {
    "roundtrip": (roundtrip.run, roundtrip.render, 10_000, 1_000),
    "coldstart": (coldstart.run, coldstart.render, 10, 3),
    "memory": (memory.run, memory.render, 1, 1),
    "memory_search": (memory_bench.run, memory_bench.render, 300, 50),
    # /remember and keyword search at 10k and 1M memories (100k quick) vs the old queries.
    "memory_scale": (memory_scale.run, memory_scale.render, 300, 50),
    # Memory on PostgreSQL + pgvector at 1M memories (20k quick): HNSW + GIN vs an exact scan.
    "memory_pg": (memory_pg.run, memory_pg.render, 300, 50),
    "kennel_start": (kennel_start.run, kennel_start.render, 6, 2),
    # The run's layer against the old direct mount; the quick N runs the small repos only.
    "layer": (
        lambda n: layer.run(n, layer.SIZES if n > layer.QUICK_ROUNDS else layer.QUICK_SIZES),
        layer.render,
        layer.ROUNDS,
        layer.QUICK_ROUNDS,
    ),
    # A call of the owner's MCP server through the relay vs the host's own session.
    "mcp": (mcp_relay.run, mcp_relay.render, mcp_relay.CALLS, mcp_relay.QUICK_CALLS),
    # First task with a setup script vs a repeat (layer reused) vs none, both kennels.
    "setup": (setup_phase.run, setup_phase.render, setup_phase.ROUNDS, setup_phase.QUICK_ROUNDS),
    "scheduler": (scheduler_bench.run, scheduler_bench.render, 10_000, 1_000),
    "flood": (flood.run, flood.render, 1_000, 200),
    "agent": (agent.run, agent.render, 10, 10),
    # A model message end to end (instant model): first after start, warm, CPU, the knee.
    "model_path": (model_path.run, model_path.render, 300, 50),
    # Prefix hits and summary calls over a long conversation: blocks vs the sliding window.
    "prompt_cache": (prompt_cache.run, prompt_cache.render, 200, 100),
    "dashboard": (dashboard.run, dashboard.render, 200, 20),
    "skills": (skills_prompt.run, skills_prompt.render, 2_000, 100),
    "costs": (costs.run, costs.render, 200, 20),
    "webchat": (webchat.run, webchat.render, 500, 50),
    # A voice note's arrival to "🎙 heard" against a text's answer (instant transcription).
    "voice": (voice.run, voice.render, 100, 20),
}


def _git_head() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parent,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _meta(quick: bool) -> dict[str, Any]:
    # The load average is recorded because these figures are only comparable between
    # runs on equally quiet machines; the ratios are what survives a noisy one.
    return {
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "git_head": _git_head(),
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, {platform.platform()}",
        "loadavg_start": os.getloadavg(),
        "quick": quick,
        # With this set, Fetch's own modules are compiled on every start, which shows
        # in the cold-start figures.
        "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE", ""),
    }


def _jsonable(value: Any) -> Any:
    """JSON has no inf/nan (a ratio over a zero baseline becomes null); three decimals
    are already below any unit's noise here (µs, ms, MiB)."""
    if isinstance(value, float):
        return None if math.isinf(value) or math.isnan(value) else round(value, 3)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="small N everywhere (smoke run)")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=list(BENCHMARKS),
        default=list(BENCHMARKS),
        help="run only these benchmarks",
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=None,
        help=f"where to write the figures (default: {RESULTS}/latest.json, "
        "or latest-quick.json with --quick, so a smoke run never "
        "overwrites real figures)",
    )
    parser.add_argument(
        "--write-readme",
        action="store_true",
        help="also write the figures into bench/README.md's generated section (a benchmark "
        "that fails is named there instead of its old figures)",
    )
    args = parser.parse_args(argv)
    if args.json is None:
        args.json = RESULTS / ("latest-quick.json" if args.quick else "latest.json")

    started = time.perf_counter()
    report: dict[str, Any] = {"meta": _meta(args.quick)}
    failed: dict[str, str] = {}
    for name in args.only:
        run, render, full_n, quick_n = BENCHMARKS[name]
        n = quick_n if args.quick else full_n
        print(f"[running {name}, N={n:,} ...]", file=sys.stderr, flush=True)
        try:
            result = run(n)
        except Exception as err:
            if not args.write_readme:
                raise
            failed[name] = (
                f"{type(err).__name__}: {str(err).splitlines()[0][:120] if str(err) else ''}"
            )
            print(f"[{name} failed: {failed[name]}]", file=sys.stderr, flush=True)
            continue
        report[name] = result
        print(render(result), flush=True)
        for figure, value in figures(name, result, FIGURES.get(name, ())):
            print("   " + figure_line(figure, value))
        print(flush=True)
    report["meta"]["loadavg_end"] = os.getloadavg()
    report["meta"]["seconds"] = round(time.perf_counter() - started, 1)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(_jsonable(report), indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    if args.write_readme:
        write_readme(report, failed, list(BENCHMARKS))
        print(f"wrote the figures of {len(args.only) - len(failed)} benchmarks into {README}")
    load = report["meta"]["loadavg_start"][0], report["meta"]["loadavg_end"][0]
    print(
        f"wrote {args.json} in {report['meta']['seconds']:.0f} s "
        f"(1-min load average {load[0]:.2f} -> {load[1]:.2f} on {os.cpu_count()} cpus)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
