"""Benchmark 2: cold start of the real ``fetch`` command, spawn to "ready".

Each run gets a brand-new FETCH_HOME (so the SQLite file, its migrations and the
home folder are created from nothing) and a new FETCH_WORKSPACE holding one tiny git
repo, with FETCH_HARNESS=demo so the figure does not depend on whether a coding CLI
is installed. The clock runs from just before the spawn until the line starting
"🐕 Fetch is ready" can be read from its stdout; then stdin is closed (EOF), which is
how a pipe tells ``fetch`` it is done, and the time to exit is recorded too.

``fetch --help`` is timed too, spawn to exit (the owner waits for both; target 200 ms),
against the same ``python -c pass`` floor.

Baselines, spawned with the same interpreter in the same loop:

* ``python -c pass`` (to exit)          - the interpreter's own start-up floor,
* ``python -c "import orchestrator.app"`` - what importing Fetch costs on top, timed
  like ``fetch``: to a line it prints once imported, so neither figure includes the
  ~0.2 s an interpreter full of modules takes to tear down.

Runs are interleaved (pass, import, fetch, pass, ...) so noise from a neighbour lands
on all three alike; one untimed round first warms the page cache and ``.pyc`` files.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

from bench._common import FetchProcess, fetch_command, fresh_dirs, ratio, summary, table

PASS = "python -c pass"
IMPORT = "python -c 'import orchestrator.app'"
BASELINES: dict[str, list[str]] = {
    PASS: [sys.executable, "-c", "pass"],
    IMPORT: [sys.executable, "-c", "import orchestrator.app; print('imported', flush=True)"],
}
FETCH = "fetch (spawn -> ready)"
HELP = "fetch --help (spawn -> exit)"
HELP_TARGET_MS = 200.0  # issue 26: `fetch --help` within 200 ms
READY_TARGET_MS = 800.0  # issue 26: start to healthy within 0.8 s (the default setup)


def _spawn_seconds(argv: list[str]) -> float:
    """Seconds from spawn to its first line of stdout, or to its exit if it prints none."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    with proc.stdout:
        line = proc.stdout.readline()  # b"" once it has exited without a line
        if line:
            took = time.perf_counter() - t0
            proc.kill()  # its teardown is not what is being measured
            proc.wait()
        else:
            proc.wait()
            took = time.perf_counter() - t0
            if proc.returncode != 0:
                raise RuntimeError(f"bench: {argv} failed (exit {proc.returncode})")
    return took


def _exit_seconds(argv: list[str]) -> float:
    """Seconds from spawn to exit (``fetch --help`` prints, then the interpreter ends:
    both are what the owner waits for)."""
    t0 = time.perf_counter()
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True)
    took = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"bench: {argv} failed (exit {done.returncode}): {done.stderr[-500:]!r}")
    return took


def _fetch_once() -> tuple[float, float]:
    """(seconds to ready, seconds from EOF to exit) for one fresh home and workspace."""
    with fresh_dirs("coldstart") as (home, workspace):
        proc = FetchProcess(home, workspace)
        try:
            ready = proc.wait_ready()
        finally:
            stopped = proc.stop()
        return ready, stopped


def run(n: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    samples: dict[str, list[float]] = {name: [] for name in (*BASELINES, HELP, FETCH)}
    stop_seconds: list[float] = []
    for i in range(n + 1):
        timed = {name: _spawn_seconds(argv) * 1000 for name, argv in BASELINES.items()}
        timed[HELP] = _exit_seconds([*fetch_command(), "--help"]) * 1000
        ready, stopped = _fetch_once()
        if i == 0:
            continue  # the warm-up round
        for name, ms in timed.items():
            samples[name].append(ms)
        samples[FETCH].append(ready * 1000)
        stop_seconds.append(stopped * 1000)
    stats = {name: summary(values) for name, values in samples.items()}
    fetch_stats = stats[FETCH]
    ratios = {
        f"{q}_vs_{base}": ratio(fetch_stats[q], stats[base][q])
        for base in BASELINES
        for q in ("p50", "p99")
    }
    ratios["help_p50_vs_python_c_pass"] = ratio(stats[HELP]["p50"], stats[PASS]["p50"])
    return {
        "unit": "milliseconds",
        "runs": n,
        "command": fetch_command(),
        "stats": stats,
        "ratios": ratios,
        "fetch_beyond_import_p50_ms": fetch_stats["p50"] - stats[IMPORT]["p50"],
        "help_within_target": stats[HELP]["p50"] <= HELP_TARGET_MS,
        "ready_within_target": fetch_stats["p50"] <= READY_TARGET_MS,
        "stop_after_eof": summary(stop_seconds),
        "seconds": round(time.perf_counter() - t0, 1),
    }


def render(result: dict[str, Any]) -> str:
    stats = result["stats"]
    rows: list[list[Any]] = [
        [name, s["min"], s["p50"], s["p99"], s["max"]] for name, s in stats.items()
    ]
    stop = result["stop_after_eof"]
    rows.append(["fetch: EOF on stdin -> exit", stop["min"], stop["p50"], stop["p99"], stop["max"]])
    out = [
        table(
            f"2. cold start of `fetch`, fresh FETCH_HOME each run ({result['runs']} runs, ms)",
            ["", "min", "p50", "p99", "max"],
            rows,
        )
    ]
    r = result["ratios"]
    out.append(
        table(
            "ratios: fetch / baseline, same run",
            ["", "p50", "p99"],
            [[base, r[f"p50_vs_{base}"], r[f"p99_vs_{base}"]] for base in BASELINES],
        )
    )
    out.append(
        f"   fetch spends {result['fetch_beyond_import_p50_ms']:,.0f} ms (p50) past "
        "importing orchestrator.app"
    )
    if HELP in stats:
        verdict = {True: "PASS", False: "MISS"}
        out.append(
            f"   targets (p50): --help <= {HELP_TARGET_MS:.0f} ms "
            f"{verdict[result['help_within_target']]} "
            f"({stats[HELP]['p50']:,.0f} ms, {r['help_p50_vs_python_c_pass']:.1f}x "
            "python -c pass); "
            f"ready <= {READY_TARGET_MS:.0f} ms {verdict[result['ready_within_target']]}"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.coldstart",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-n", type=int, default=10, help="timed runs of each")
    args = parser.parse_args()
    result = run(args.n)
    print(render(result))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
