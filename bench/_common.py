"""Helpers shared by the benchmarks: percentiles, tables, throwaway homes and workspaces.

Everything here is deliberately dependency-free (stdlib only) so the figures measure
Fetch, not the harness around it.
"""

from __future__ import annotations

import fnmatch
import math
import os
import re
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

GIT_ID = ("-c", "user.name=bench", "-c", "user.email=bench@localhost")


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of already sorted data (q in 0..100).

    Nearest rank, not interpolation: p99 of 10,000 samples is an observed sample
    (the 9,900th), so "p99 < 1 ms" means 99 % of real messages were under 1 ms.
    """
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def summary(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "n": float(len(ordered)),
        "min": ordered[0],
        "p50": percentile(ordered, 50),
        "p90": percentile(ordered, 90),
        "p99": percentile(ordered, 99),
        "max": ordered[-1],
        "mean": sum(ordered) / len(ordered),
    }


def ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator > 0 else math.inf


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain fixed-width table: readable in a terminal and in a pasted log alike."""
    cells = [[str(h) for h in header], *[[_fmt(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]

    # The first column is a label (left-aligned); the rest are numbers (right-aligned).
    def line(row: list[str]) -> str:
        padded = (
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        return "  ".join(padded).rstrip()

    rule = "-" * len(line(cells[0]))
    return "\n".join([f"== {title}", line(cells[0]), rule, *(line(r) for r in cells[1:])])


def _fmt(cell: Any) -> str:
    if isinstance(cell, float):
        if math.isinf(cell) or math.isnan(cell):
            return "-"
        return f"{cell:,.1f}" if abs(cell) >= 100 else f"{cell:.2f}"
    return str(cell)


def make_repo(root: Path, name: str = "demo") -> Path:
    """One tiny committed git repo, like a user's smallest project."""
    repo = root / name
    repo.mkdir(parents=True)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str) -> None:
        subprocess.run(["git", *GIT_ID, *args], cwd=repo, check=True, capture_output=True, env=env)

    git("init", "-q", "-b", "main")
    (repo / "README.md").write_text("# demo\n\nTeh quick brown fox.\n", encoding="utf-8")
    (repo / "app.py").write_text("print('hi')\n", encoding="utf-8")
    git("add", "-A")
    git("commit", "-q", "-m", "initial")
    return repo


@contextmanager
def fresh_dirs(prefix: str) -> Iterator[tuple[Path, Path]]:
    """A brand-new (FETCH_HOME, FETCH_WORKSPACE) pair holding one tiny repo, removed after."""
    root = Path(tempfile.mkdtemp(prefix=f"fetch-bench-{prefix}-"))
    try:
        workspace = root / "ws"
        make_repo(workspace)
        yield root / "home", workspace
    finally:
        shutil.rmtree(root, ignore_errors=True)


def model_env(home: Path, workspace: Path, model_url: str) -> dict[str, str]:
    """Settings for an in-process app whose orchestrator model is a scripted server at
    ``model_url`` (no retries: a benchmark counts every request)."""
    return {
        "FETCH_HOME": str(home),
        "FETCH_WORKSPACE": str(workspace),
        "FETCH_HARNESS": "demo",
        "FETCH_MODEL_BASE_URL": model_url + "/v1",
        "FETCH_MODEL": "bench-model",
        "FETCH__MODEL__MAX_RETRIES": "0",
    }


def fetch_env(home: Path, workspace: Path) -> dict[str, str]:
    """The environment for a spawned ``fetch``: ours minus any FETCH_* the shell had set
    (a developer's own config must not change the figures), plus the benchmark's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FETCH_")}
    env.update(FETCH_HOME=str(home), FETCH_WORKSPACE=str(workspace), FETCH_HARNESS="demo")
    return env


def fetch_command() -> list[str]:
    """The installed ``fetch`` console script, found next to this interpreter first.

    A version manager's shim on PATH (pyenv's is a bash script) would add its own
    start-up to every cold-start figure, so the real script is preferred.
    """
    beside = Path(sys.executable).parent / "fetch"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which("fetch")
    if found is None:
        raise SystemExit("bench: the `fetch` command is not installed; run `pip install -e .`")
    return [found]


def rss_kib(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak) of ``pid`` in KiB, straight from the kernel."""
    fields: dict[str, int] = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            name, _, rest = line.partition(":")
            if name in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                fields[name] = int(rest.split()[0])
    return fields


READY_PREFIX = "🐕 Fetch is ready"


class FetchProcess:
    """A real ``fetch`` child: started, waited on until its ready line, stopped by EOF.

    Stdout is read straight from the pipe with a deadline, so a start that hangs or
    crashes fails the benchmark with its stderr instead of hanging it.
    """

    def __init__(self, home: Path, workspace: Path) -> None:
        # Closed in stop(): it must outlive this call, so no ``with`` here.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        self.started_ns = time.perf_counter_ns()
        self.proc = subprocess.Popen(
            fetch_command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=fetch_env(home, workspace),
            cwd=workspace,
        )
        self.ready_ns: int | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_ready(self, timeout: float = 60.0) -> float:
        """Seconds from spawn to the ready line being readable by us."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        buffer = b""
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while READY_PREFIX.encode() not in buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    self._fail(f"no ready line within {timeout:.0f} s")
                chunk = os.read(fd, 65536)
                if not chunk:
                    self._fail("exited before it was ready")
                buffer += chunk
        self.ready_ns = time.perf_counter_ns()
        return (self.ready_ns - self.started_ns) / 1e9

    def stop(self, timeout: float = 10.0) -> float:
        """Close stdin (how a pipe says "done") and wait; SIGTERM, then SIGKILL, if it
        will not go. Returns seconds from EOF to exit."""
        t0 = time.perf_counter()
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        elapsed = time.perf_counter() - t0
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()
        return elapsed

    def _fail(self, why: str) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._stderr.seek(0)
        err = self._stderr.read().decode(errors="replace")[-2000:]
        raise RuntimeError(f"bench: `fetch` {why} (exit {self.proc.returncode}):\n{err}")


# -- figures: the `name: value` lines a run prints and bench/README.md quotes ---------------


def figure_key(key: str) -> str:
    """One key of a result as it appears in a figure's name: lower case, runs of anything
    but letters and digits as one ``_`` (``"fetch (spawn -> ready)"`` -> ``fetch_spawn_ready``)."""
    return re.sub(r"[^a-z0-9]+", "_", key.lower()).strip("_")


def figures(bench: str, result: dict[str, Any], patterns: Sequence[str]) -> list[tuple[str, float]]:
    """The numeric leaves of ``result`` whose names (``bench.key.key``) match one of
    ``patterns`` (fnmatch), in the result's order."""
    found: list[tuple[str, float]] = []

    def walk(name: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{name}.{figure_key(str(key))}", inner)
        elif isinstance(value, list):  # rows per size: named by their "n" (rows, files)
            for i, inner in enumerate(value):
                if isinstance(inner, dict):
                    walk(f"{name}.{figure_key(str(inner.get('n', i)))}", inner)
        elif _finite(value) and any(fnmatch.fnmatchcase(name, p) for p in patterns):
            found.append((name, float(value)))

    walk(bench, result)
    return found


def _finite(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return not (math.isinf(value) or math.isnan(value))


def figure_line(name: str, value: float) -> str:
    if value == int(value) and abs(value) >= 1:
        return f"{name}: {int(value)}"
    return f"{name}: {value:.1f}" if abs(value) >= 100 else f"{name}: {value:.3g}"
