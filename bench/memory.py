"""Benchmark 3: idle resident memory of the running ``fetch`` process.

``fetch`` is started as in benchmark 2 (fresh home, tiny workspace, demo harness),
left idle for ~1 s after its ready line, then ``VmRSS`` is read from
``/proc/PID/status``. RssAnon (heap, Python objects) and RssFile (mapped
interpreter, shared libraries, extension modules) are kept too, because only the
first is memory Fetch itself allocates.

Baselines, read the same way after the same idle second:

* ``python -c "import time; time.sleep(5)"``                 - a bare interpreter,
* ``python -c "import orchestrator.app; ..."`` (then sleeps) - Fetch's imports alone,
  so "fetch minus imports" is what the running app adds (SQLite, tasks, caches).

With -n above 1 the figure is the median; RSS varies by under 1 % between runs, so
one run is the default.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench._common import FetchProcess, fresh_dirs, ratio, rss_kib, table

IDLE_SECONDS = 1.0
BARE = "python (sleep)"
IMPORTS = "python + import orchestrator.app"
FETCH = "fetch (ready, idle 1 s)"
FIELDS = ("VmRSS", "RssAnon", "RssFile", "VmHWM")


def _children_rss_kib(pid: int) -> int:
    """RSS of the direct children, if any (fetch should have none while idle)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                total += rss_kib(int(child)).get("VmRSS", 0)
            except FileNotFoundError:
                continue  # it exited between listing and reading
    return total


def _python_rss(code: str, wait_for_line: bool) -> dict[str, int]:
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True
    )
    try:
        if wait_for_line:
            assert proc.stdout is not None
            proc.stdout.readline()  # imports done
        time.sleep(IDLE_SECONDS)
        return rss_kib(proc.pid)
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _fetch_rss() -> dict[str, int]:
    with fresh_dirs("memory") as (home, workspace):
        proc = FetchProcess(home, workspace)
        try:
            proc.wait_ready()
            time.sleep(IDLE_SECONDS)
            fields = rss_kib(proc.pid)
            fields["children"] = _children_rss_kib(proc.pid)
            return fields
        finally:
            proc.stop()


def run(n: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    runs: dict[str, list[dict[str, int]]] = {BARE: [], IMPORTS: [], FETCH: []}
    for _ in range(n):
        runs[BARE].append(_python_rss("import time; time.sleep(5)", wait_for_line=False))
        runs[IMPORTS].append(
            _python_rss(
                "import orchestrator.app, time; print('ready', flush=True); time.sleep(30)",
                wait_for_line=True,
            )
        )
        runs[FETCH].append(_fetch_rss())
    # MiB, median over runs, per field.
    stats = {
        name: {
            f: statistics.median(r.get(f, 0) for r in samples) / 1024
            for f in (*FIELDS, "children")
            if any(f in r for r in samples)
        }
        for name, samples in runs.items()
    }
    fetch = stats[FETCH]["VmRSS"]
    return {
        "unit": "MiB",
        "runs": n,
        "idle_seconds": IDLE_SECONDS,
        "stats": stats,
        "ratios": {
            "VmRSS_vs_bare_python": ratio(fetch, stats[BARE]["VmRSS"]),
            "VmRSS_vs_imports_only": ratio(fetch, stats[IMPORTS]["VmRSS"]),
        },
        "fetch_minus_bare_MiB": fetch - stats[BARE]["VmRSS"],
        "fetch_minus_imports_MiB": fetch - stats[IMPORTS]["VmRSS"],
        "seconds": round(time.perf_counter() - t0, 1),
    }


def render(result: dict[str, Any]) -> str:
    rows = [
        [name, s["VmRSS"], s["RssAnon"], s["RssFile"], s["VmHWM"]]
        for name, s in result["stats"].items()
    ]
    r = result["ratios"]
    return "\n".join(
        [
            table(
                f"3. idle resident memory (median of {result['runs']} run(s), MiB)",
                ["", "VmRSS", "RssAnon", "RssFile", "VmHWM"],
                rows,
            ),
            f"   fetch VmRSS = {r['VmRSS_vs_bare_python']:.2f}x bare python "
            f"(+{result['fetch_minus_bare_MiB']:.1f} MiB), "
            f"{r['VmRSS_vs_imports_only']:.2f}x its imports alone "
            f"(+{result['fetch_minus_imports_MiB']:.1f} MiB)",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.memory",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-n", type=int, default=1, help="runs of each")
    args = parser.parse_args()
    result = run(args.n)
    print(render(result))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
