"""What a run's own layer costs per task, against today's direct mount, in one run
(issue "Trust III", point 8).

Real git repositories of 2, 1k, 10k and 50k small text files in nested folders, made and
committed (then packed, as a real repository's objects are) in a temporary folder. Each
task makes a one-line edit, reads the diff, and is answered "no" or "yes":

* **new, overlay** (bwrap as root): ``Layers.open`` (the base is already at HEAD: the
  steady state; an open after a "yes", when the base must first catch up with HEAD, is
  reported apart as ``open*``), the edit written into
  ``layer.tree`` as the kennel would, ``layer.read(repo)`` -> the ``Change``; "no" =
  ``layer.drop()``; "yes" = ``repo.commit(change, msg)`` (``read-tree -m -u`` into the
  owner's tree). The runner drops a layer once its change is read, so a "yes" task drops
  it too: "no" is sampled on both tasks, "yes" is the commit alone.
* **new, copy** (Docker): the same with ``host_mounts=False``: a ``cp -a`` of the base.
* **old, direct mount** (before Trust III, ``git show 8d17697:orchestrator/gitops.py``),
  rebuilt here on today's ``Repo`` plumbing: the edit in the owner's working tree,
  ``repo.change()`` (the whole tree snapshotted through a private index, ``git add -A``),
  ``repo.discard()`` for "no" (``reset --hard`` + ``clean``), and for "yes" the old
  commit: the change read again, ``commit-tree`` + ``update-ref`` + ``reset -q``.

The three flows share each repository and take turns within every round (the order
rotates), so a noisy machine slows them alike. Figures: p50/p99 per step; the ratio of
each p50 to the 2-file repository's p50 of the same flow (target: diff, "no" and "yes"
each within 3x, PASS/MISS); new over old; the programs spawned per step (every
``subprocess.Popen``, counted). The base's first build (a checkout of HEAD, handed to the
kennel's uid) is a one-time cost per repository, reported apart.

Last, the warm start of each backend (exec -> exit of ``true``, relay included, bwrap and
the built Docker image), measured by ``bench/kennel_start.py``'s own loop.

``python -m bench.layer`` (about 15 min on 2 cores) or ``--quick`` (2 and 1k files, 3
rounds: a smoke run). Needs root for the overlay rows (else only copy and old run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from bench import kennel_start
from bench._common import GIT_ID, ratio, summary, table
from core.errors import GitError
from kennel.bwrap import BwrapKennel
from orchestrator.boundary.gitops import AUTHOR, Change, Repo
from orchestrator.boundary.layer import Layers, Owner

SIZES = (2, 1_000, 10_000, 50_000)
QUICK_SIZES = (2, 1_000)
ROUNDS = 20  # tasks of each answer per flow, for the small repositories
QUICK_ROUNDS = 3
TARGET = 3.0  # diff, "no" and "yes" within 3x the 2-file repository's (p50)
OLD, OVERLAY, COPY = "old: direct mount", "new: overlay", "new: copy"
FLOWS = (OLD, OVERLAY, COPY)
# "follow": an open after HEAD moved (a "yes"), when the base must first catch up with it.
STEPS = ("open", "follow", "diff", "no", "yes")
FILES_PER_FOLDER = 50
T = TypeVar("T")


def rounds_for(size: int, n: int) -> int:
    """Fewer rounds for the big repositories: their figures move less, and cost more."""
    if size >= 50_000:
        return max(2, n // 4)
    if size >= 10_000:
        return max(2, n // 2)
    return n


# -- counting programs ---------------------------------------------------------------------
class _Spawns:
    """Every ``subprocess.Popen`` made while installed (``subprocess.run`` makes one)."""

    count = 0


@contextmanager
def _counting() -> Iterator[None]:
    original = subprocess.Popen.__init__

    def counted(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
        _Spawns.count += 1
        original(self, *args, **kwargs)

    subprocess.Popen.__init__ = counted  # type: ignore[method-assign]
    try:
        yield
    finally:
        subprocess.Popen.__init__ = original  # type: ignore[method-assign]


def _timed(fn: Callable[[], T]) -> tuple[float, int, T]:
    """(ms, programs spawned, result) of ``fn()``."""
    spawned = _Spawns.count
    started = time.perf_counter()
    out = fn()
    return (time.perf_counter() - started) * 1000, _Spawns.count - spawned, out


# -- repositories --------------------------------------------------------------------------
def _path(i: int) -> str:
    """File ``i``: 50 to a folder, 20 folders to a module, three levels deep."""
    folder = i // FILES_PER_FOLDER
    return f"src/m{folder // 20:03d}/p{folder % 20:02d}/f{i:05d}.txt"


def make_big_repo(root: Path, files: int) -> tuple[Path, str]:
    """A committed, packed repository of ``files`` small text files: (path, the file the
    tasks edit, in the middle of the tree)."""
    repo = root / f"repo{files}"
    repo.mkdir(parents=True)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for i in range(files):
        path = repo / _path(i)
        path.parent.mkdir(parents=True, exist_ok=True)
        body = "".join(f"line {k} of file {i}: the quick brown fox\n" for k in range(6))
        path.write_text(body, encoding="utf-8")
    for args in (
        ("init", "-q", "-b", "main"),
        ("add", "-A"),
        ("commit", "-q", "-m", "initial"),
        ("gc", "-q"),
    ):
        # No automatic gc in the background (a big commit starts one): packed here, once.
        subprocess.run(
            ["git", *GIT_ID, "-c", "gc.auto=0", "-c", "maintenance.auto=false", *args],
            cwd=repo,
            check=True,
            capture_output=True,
            env=env,
        )
    return repo, _path(files // 2)


def _edit(path: Path, text: str) -> None:
    """One line added, as a CLI's edit would."""
    with path.open("a", encoding="utf-8") as fh:
        fh.write(text)


# -- the flows -----------------------------------------------------------------------------
def _old_commit(repo: Repo, change: Change, message: str) -> str:
    """``Repo.commit`` as it was before Trust III (8d17697): the whole tree read again and
    compared, then plumbing, then the index reset to HEAD (the files already are)."""
    current = repo.change()
    if current.base_sha != change.base_sha:
        raise GitError("the branch moved since the diff was made; nothing committed")
    if current.digest != change.digest:
        raise GitError("the files changed since the diff was shown; nothing committed")
    # The old code ran these two without a preflight of their own (change() had one).
    sha = repo._run(
        "commit-tree", change.tree_sha, "-p", change.base_sha, "-m", message, env=AUTHOR
    )
    repo._run("update-ref", "-m", "fetch: approved change", "HEAD", sha, change.base_sha)
    repo.run("reset", "-q", "--", ".")
    return sha


class _Subject:
    """One repository and what each flow's tasks need."""

    def __init__(self, path: Path, edit: str, layers: Layers) -> None:
        self.path = path
        self.repo = Repo(path)
        self.edit = edit
        self.layers = layers
        self.task_id = 0
        self.head = self.repo.head()
        self.base_at = ""  # the commit the base was last brought to

    def task(self, flow: str, answer: str, label: str) -> dict[str, tuple[float, int]]:
        """One task of ``flow`` answered ``answer``: {step: (ms, programs)}."""
        self.task_id += 1
        line = f"{label}: task {self.task_id} says {answer}\n"
        steps: dict[str, tuple[float, int]] = {}
        if flow == OLD:
            _edit(self.path / self.edit, line)
            ms, spawned, change = _timed(self.repo.change)
            steps["diff"] = (ms, spawned)
            self._check(change)
            if answer == "no":
                ms, spawned, _ = _timed(self.repo.discard)
                steps["no"] = (ms, spawned)
                self._check_owner(line, present=False)
            else:
                ms, spawned, self.head = _timed(lambda: _old_commit(self.repo, change, line))
                steps["yes"] = (ms, spawned)
                self._check_owner(line, present=True)
            return steps
        kind = "overlay" if flow == OVERLAY else "copy"
        moved = self.base_at != self.head
        ms, spawned, layer = _timed(
            lambda: self.layers.open(self.repo, self.task_id, host_mounts=kind == "overlay")
        )
        steps["follow" if moved else "open"] = (ms, spawned)
        self.base_at = layer.base_sha
        try:
            if layer.kind != kind:
                raise RuntimeError(f"asked for a {kind} layer, got a {layer.kind}")
            _edit(layer.tree / self.edit, line)
            ms, spawned, change = _timed(lambda: layer.read(self.repo))
            steps["diff"] = (ms, spawned)
            self._check(change)
        finally:
            ms, spawned, _ = _timed(layer.drop)
        steps["no"] = (ms, spawned)
        if answer == "yes":
            ms, spawned, self.head = _timed(lambda: self.repo.commit(change, line))
            steps["yes"] = (ms, spawned)
            self._check_owner(line, present=True)
        else:
            self._check_owner(line, present=False)
        return steps

    def _check(self, change: Change) -> None:
        if [f.path for f in change.files] != [self.edit] or change.files[0].added != 1:
            raise RuntimeError(
                f"{self.path.name}: expected one line added to {self.edit}, got "
                f"{[(f.path, f.added, f.removed) for f in change.files]}"
            )

    def _check_owner(self, line: str, *, present: bool) -> None:
        text = (self.path / self.edit).read_text(encoding="utf-8")
        if text.endswith(line) != present:
            raise RuntimeError(f"{self.path.name}: the owner's file is not as the answer says")


def _owner(home: Path) -> Owner | None:
    """The bwrap kennel's uid when Fetch is root (as ``build_layers`` asks it), else None."""
    if os.geteuid() != 0:
        return None
    try:
        ids = BwrapKennel(home).owner()
    except Exception:
        return None
    return Owner(*ids) if ids is not None else None


def _overlay_possible(layers: Layers, subject: _Subject) -> bool:
    layer = layers.open(subject.repo, 0, host_mounts=True)
    kind = layer.kind
    layer.drop()
    return kind == "overlay"


def run_layers(n: int, sizes: tuple[int, ...]) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="fetch-bench-layer-"))
    samples: dict[str, dict[int, dict[str, list[float]]]] = {
        f: {s: {step: [] for step in STEPS} for s in sizes} for f in FLOWS
    }
    spawns: dict[str, dict[int, dict[str, list[int]]]] = {
        f: {s: {step: [] for step in STEPS} for s in sizes} for f in FLOWS
    }
    first: dict[int, dict[str, float]] = {}
    notes: list[str] = []
    subjects: dict[int, _Subject] = {}
    try:
        with _counting():
            home = root / "home"
            home.mkdir()
            owner = _owner(home)
            layers = Layers(home, lambda: owner, overlay=True)
            for size in sizes:
                ms_gen, _, (path, edit) = _timed(partial(make_big_repo, root, size))
                subject = subjects[size] = _Subject(path, edit, layers)
                ms_base, spawned, (_tree, subject.base_at) = _timed(
                    partial(layers.base, subject.repo)
                )
                first[size] = {"make repo": ms_gen, "base build": ms_base, "procs": spawned}
                print(
                    f"   {size:,} files: repository made in {ms_gen / 1000:.1f} s, "
                    f"base built in {ms_base:,.0f} ms",
                    file=sys.stderr,
                )
            flows = list(FLOWS)
            if not _overlay_possible(layers, subjects[sizes[0]]):
                flows.remove(OVERLAY)
                notes.append("no overlay here (not root, or no overlayfs): overlay rows skipped")
            for r in range(n + 1):  # round 0 warms caches and is not counted
                for size in sizes:
                    if r > rounds_for(size, n):
                        continue
                    order = flows[r % len(flows) :] + flows[: r % len(flows)]
                    for answer in ("no", "yes"):
                        for flow in order:
                            steps = subjects[size].task(flow, answer, f"round {r}")
                            if not r:
                                continue
                            for step, (ms, spawned) in steps.items():
                                samples[flow][size][step].append(ms)
                                spawns[flow][size][step].append(spawned)
                print(f"   round {r}/{n} done", file=sys.stderr)
    finally:
        for subject in subjects.values():
            subject.layers.sweep_all()
        shutil.rmtree(root, ignore_errors=True)
    return _layer_result(samples, spawns, first, notes, sizes, flows)


def _layer_result(
    samples: dict[str, dict[int, dict[str, list[float]]]],
    spawns: dict[str, dict[int, dict[str, list[int]]]],
    first: dict[int, dict[str, float]],
    notes: list[str],
    sizes: tuple[int, ...],
    flows: list[str],
) -> dict[str, Any]:
    stats: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    procs: dict[str, dict[str, dict[str, int]]] = {}
    for flow in flows:
        stats[flow], procs[flow] = {}, {}
        for size in sizes:
            by_step = samples[flow][size]
            stats[flow][str(size)] = {k: summary(v) for k, v in by_step.items() if v}
            procs[flow][str(size)] = {k: max(v) for k, v in spawns[flow][size].items() if v}
    small = str(sizes[0])
    ratios: dict[str, dict[str, dict[str, float]]] = {}
    verdicts: dict[str, dict[str, dict[str, str]]] = {}
    for flow in flows:
        ratios[flow], verdicts[flow] = {}, {}
        for size in sizes:
            here, base = stats[flow][str(size)], stats[flow][small]
            ratios[flow][str(size)] = {
                step: ratio(here[step]["p50"], base[step]["p50"]) for step in here if step in base
            }
            verdicts[flow][str(size)] = {
                step: "PASS" if ratios[flow][str(size)][step] <= TARGET else "MISS"
                for step in ("diff", "no", "yes")
                if step in here
            }
    new_old: dict[str, dict[str, dict[str, float]]] = {}
    for flow in flows:
        if flow == OLD:
            continue
        new_old[flow] = {}
        for size in sizes:
            new, old = stats[flow][str(size)], stats[OLD][str(size)]
            row = {step: ratio(new[step]["p50"], old[step]["p50"]) for step in ("diff", "no")}
            row["yes"] = ratio(new["yes"]["p50"], old["yes"]["p50"])
            # A whole task, as the owner waits for it: new = open + diff + drop (+ commit),
            # the open with the base already at HEAD.
            opened = new.get("open", new.get("follow", {"p50": math.nan}))["p50"]
            new_no = opened + new["diff"]["p50"] + new["no"]["p50"]
            row["task no"] = ratio(new_no, old["diff"]["p50"] + old["no"]["p50"])
            row["task yes"] = ratio(
                new_no + new["yes"]["p50"], old["diff"]["p50"] + old["yes"]["p50"]
            )
            new_old[flow][str(size)] = row
    return {
        "sizes": list(sizes),
        "flows": flows,
        "ms": stats,
        "procs": procs,
        "x_smallest_p50": ratios,
        "verdicts": verdicts,
        "new_over_old_p50": new_old,
        "first_time_ms": {str(k): v for k, v in first.items()},
        "target_x": TARGET,
        "notes": notes,
    }


def run(n: int, sizes: tuple[int, ...] = SIZES) -> dict[str, Any]:
    layer = run_layers(n, sizes)
    start = asyncio.run(kennel_start._run_start(max(10, 2 * n)))
    return {"layer": layer, "start": start}


# -- the report ----------------------------------------------------------------------------
def _cell(stats: dict[str, dict[str, float]], step: str, q: str) -> float | str:
    return stats[step][q] if step in stats else "-"


def render(result: dict[str, Any]) -> str:
    layer = result["layer"]
    sizes = [str(s) for s in layer["sizes"]]
    parts: list[str] = []
    for flow in layer["flows"]:
        rows = []
        for size in sizes:
            s, x = layer["ms"][flow][size], layer["x_smallest_p50"][flow][size]
            spawned = layer["procs"][flow][size]
            rows.append(
                [
                    f"{int(size):,}",
                    _cell(s, "open", "p50"),
                    _cell(s, "open", "p99"),
                    _cell(s, "follow", "p50"),
                    _cell(s, "diff", "p50"),
                    _cell(s, "diff", "p99"),
                    x.get("diff", "-"),
                    _cell(s, "no", "p50"),
                    _cell(s, "no", "p99"),
                    x.get("no", "-"),
                    _cell(s, "yes", "p50"),
                    _cell(s, "yes", "p99"),
                    x.get("yes", "-"),
                    "/".join(str(spawned.get(step, "-")) for step in STEPS),
                    " ".join(f"{k}:{v}" for k, v in layer["verdicts"][flow][size].items()),
                ]
            )
        parts.append(
            table(
                f"per task, {flow} (ms; x2 = p50 over the {int(sizes[0]):,}-file repo's, "
                f"target <= {layer['target_x']:g}x; open* = open after HEAD moved)",
                [
                    "files",
                    "open p50",
                    "p99",
                    "open* p50",
                    "diff p50",
                    "p99",
                    "x2",
                    "no p50",
                    "p99",
                    "x2",
                    "yes p50",
                    "p99",
                    "x2",
                    "procs o/o*/d/n/y",
                    "verdict",
                ],
                rows,
            )
        )
    rows = [
        [
            f"{flow.removeprefix('new: ')} {int(size):,}",
            *(by_size[size][k] for k in ("diff", "no", "yes", "task no", "task yes")),
        ]
        for flow, by_size in layer["new_over_old_p50"].items()
        for size in sizes
    ]
    if rows:
        parts.append(
            table(
                "new / old, p50 (a task: open + diff + drop [+ commit] vs diff + discard|commit)",
                ["", "diff", "no", "yes", "task no", "task yes"],
                rows,
            )
        )
    rows = [
        [f"{int(size):,}", f["make repo"], f["base build"], int(f["procs"])]
        for size, f in layer["first_time_ms"].items()
    ]
    parts.append(
        table(
            "first time per repository (ms): HEAD checked out as its base, owned by the kennel uid",
            ["files", "make repo", "base build", "procs"],
            rows,
        )
    )
    parts.extend(f"   note: {note}" for note in layer["notes"])
    start = result.get("start")
    if start is not None:
        rows = [
            [name, s["p50"], s["p99"], s["max"], start["ratios_p50"][name], over]
            for name, s in start["ms"].items()
            for over in (start["overhead_p50_ms"][name],)
        ]
        text = table(
            "warm start: kennel.exec of `true` -> exit (ms; bench/kennel_start.py's loop)",
            ["", "p50", "p99", "max", "x bare p50", "+ms p50"],
            rows,
        )
        for name, target in start["targets_ms"].items():
            if name in start["overhead_p50_ms"]:
                over = start["overhead_p50_ms"][name]
                verdict = "PASS" if over < target else "MISS"
                text += (
                    f"\n   {name}: +{over:,.0f} ms over bare (target < {target:.0f} ms) {verdict}"
                )
        for note in start["notes"]:
            text += f"\n   note: {note}"
        parts.append(text)
    return "\n\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.layer", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2 and 1k files, 3 rounds")
    parser.add_argument("-n", type=int, default=None, help="rounds for the small repos")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    n = args.n or (QUICK_ROUNDS if args.quick else ROUNDS)
    result = run(n, QUICK_SIZES if args.quick else SIZES)
    print(render(result))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
