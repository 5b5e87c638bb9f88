"""Limits on one kennel run: processes, memory, CPU time, file size.

Two layers, so a fork bomb or a memory hog in a task cannot take the host down:

* **rlimits, always** (set by kennel/launcher.py inside the sandbox, before the CLI
  starts, inherited by everything it starts): ``RLIMIT_NPROC`` (counted per uid *in the
  run's own user namespace*: the bwrap kennel gives every run one, and the limit is set
  after it is made, so it caps that run alone and not the other runs of the same uid),
  ``RLIMIT_DATA`` per process (not ``RLIMIT_AS``: V8 reserves address space for
  WebAssembly memories, and node 20 fails ``new WebAssembly.Instance`` under a 4 GiB
  ``RLIMIT_AS``, while it runs under a 4 GiB ``RLIMIT_DATA``; measured), ``RLIMIT_CPU``
  per process, ``RLIMIT_FSIZE`` per file.
* **a cgroup of the run, where Fetch can make one** (root, or a delegated cgroup): the
  whole run's processes and memory, tmpfs included, which per-process rlimits cannot
  bound. cgroup v2 when ``/sys/fs/cgroup/cgroup.controllers`` exists (a child of Fetch's
  own cgroup with ``pids.max`` and ``memory.max``), cgroup v1 otherwise (``pids`` and
  ``memory`` hierarchies: ``pids.max``, ``memory.limit_in_bytes``). The group is made
  below Fetch's own, so whatever limits Fetch has still apply to its kennels.

The run joins its groups before bwrap starts (``RunGroup.wrap``: a shell that writes its
own pid into each ``cgroup.procs``, then execs bwrap), so nothing the sandbox forks is
ever outside them; the groups are removed when the run has ended (``Limited``).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import re
import signal
import time
from collections.abc import AsyncIterator
from contextlib import suppress
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from core.errors import KennelError
from kennel.base import BackendProcess

if TYPE_CHECKING:
    from kennel.settings import BwrapKennelSettings, KennelSettings

log = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_SELF_CGROUP = Path("/proc/self/cgroup")
GIB = 1 << 30
_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_serial = itertools.count(1)


def parse_size(text: str | int) -> int:
    """``"4g"``, ``"512m"``, ``"1073741824"`` → bytes (powers of 1024, like Docker)."""
    if isinstance(text, int):
        return text
    found = _SIZE.match(text)
    if found is None:
        raise ValueError(f"not a size: {text!r} (e.g. 4g, 512m)")
    return int(found.group(1)) * _UNITS[found.group(2).lower()]


def show_size(n: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


@dataclass(frozen=True, slots=True)
class Limits:
    processes: int = 512
    memory: int = 4 * GIB  # bytes: the run's cgroup; RLIMIT_DATA of each process
    cpu_seconds: int = 3600  # per process
    file_size: int = GIB  # bytes, per file
    cgroups: bool = True  # False: rlimits only

    @classmethod
    def from_settings(cls, s: BwrapKennelSettings) -> Limits:
        return cls(
            processes=s.processes,
            memory=parse_size(s.memory),
            cpu_seconds=s.cpu_seconds,
            file_size=parse_size(s.file_size),
            cgroups=s.cgroups != "off",
        )

    def launcher_args(self) -> list[str]:
        """kennel/launcher.py's options: the rlimits, and a session keyring of its own."""
        out = ["--new-keyring"]
        for name, value in (
            ("nproc", self.processes),
            ("data", self.memory),
            ("cpu", self.cpu_seconds),
            ("fsize", self.file_size),
        ):
            out += ["--rlimit", f"{name}={value}"]
        return out

    def summary(self) -> str:
        return (
            f"{self.processes} processes, {show_size(self.memory)} memory, "
            f"{self.cpu_seconds} s CPU per process, {show_size(self.file_size)} per file"
        )


# -- cgroups ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CgroupSupport:
    """What this host lets Fetch do: ``kind`` and, per controller, the folder under which
    a run's group is made (Fetch's own group there)."""

    kind: Literal["v2", "v1", "none"]
    why: str  # one line: what is used, or why nothing is
    parents: dict[str, Path] = field(default_factory=dict)  # "pids"/"memory"/"unified"


def _own_groups(proc_self: Path) -> dict[str, str]:
    """Controller name (``""`` for the v2 line) → Fetch's path in that hierarchy."""
    out: dict[str, str] = {}
    try:
        text = proc_self.read_text(encoding="utf-8")
    except OSError:
        return out
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for name in parts[1].split(",") if parts[1] else [""]:
                out[name] = parts[2]
    return out


def _under_root(root: Path, path: str) -> Path:
    return root / path.lstrip("/") if path.strip("/") else root


def _writable(folder: Path) -> bool:
    return folder.is_dir() and os.access(folder, os.W_OK)


@cache
def host_support() -> CgroupSupport:
    """``detect()`` for this host, once: after ``_delegate`` has moved Fetch into a leaf
    of its cgroup v2 group, a second look would find that leaf instead."""
    return detect()


def detect(root: Path = CGROUP_ROOT, proc_self: Path = PROC_SELF_CGROUP) -> CgroupSupport:
    """Which cgroups a run can get here. Reads only; changes nothing."""
    own = _own_groups(proc_self)
    if (root / "cgroup.controllers").exists():
        here = _under_root(root, own.get("", "/"))
        try:
            available = set((here / "cgroup.controllers").read_text().split())
            enabled = set((here / "cgroup.subtree_control").read_text().split())
        except OSError as err:
            return CgroupSupport("none", f"cgroup v2, but {here} cannot be read ({err})")
        missing = {"pids", "memory"} - available
        if missing:
            return CgroupSupport(
                "none", f"cgroup v2, but {here} offers no {' or '.join(sorted(missing))}"
            )
        if not _writable(here):
            return CgroupSupport("none", f"cgroup v2, but Fetch cannot write {here}")
        if {"pids", "memory"} - enabled and not _can_delegate(here, root):
            return CgroupSupport(
                "none",
                f"cgroup v2, but Fetch's cgroup {here} holds other processes and does not "
                "hand pids and memory to sub-groups (give Fetch a cgroup of its own)",
            )
        return CgroupSupport("v2", f"cgroup v2 under {here}", {"unified": here})
    parents: dict[str, Path] = {}
    refused: list[str] = []
    for name in ("pids", "memory"):
        top = root / name
        if not (top / "cgroup.procs").exists():
            refused.append(f"no {name} hierarchy")
            continue
        here = _under_root(top, own.get(name, "/"))
        if _writable(here):
            parents[name] = here
        else:
            refused.append(f"cannot write {here}")
    if not parents:
        return CgroupSupport("none", "no usable cgroup: " + "; ".join(refused))
    why = f"cgroup v1 ({', '.join(parents)})"
    if refused:
        why += f"; {'; '.join(refused)}"
    return CgroupSupport("v1", why, parents)


def _can_delegate(here: Path, root: Path) -> bool:
    """A v2 group may enable controllers for its children when it is the root or holds
    no process but Fetch (which then moves into a leaf of its own: ``_delegate``)."""
    if here == root:
        return True
    try:
        pids = (here / "cgroup.procs").read_text().split()
    except OSError:
        return False
    return pids == [str(os.getpid())]


def _delegate(here: Path, root: Path) -> None:
    """Enable pids and memory for ``here``'s children; a non-root v2 group must hold no
    process for that ("no internal processes"), so Fetch moves into ``here/fetch``."""
    control = here / "cgroup.subtree_control"
    if {"pids", "memory"} <= set(control.read_text().split()):
        return
    if here != root:
        leaf = here / "fetch"
        leaf.mkdir(exist_ok=True)
        (leaf / "cgroup.procs").write_text(str(os.getpid()))
    control.write_text("+pids +memory")


class RunGroup:
    """The cgroups of one run: made with its limits, joined before bwrap, removed after."""

    def __init__(self, folders: list[Path]) -> None:
        self.folders = folders

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` started from a shell that first moves itself into every group (its
        children are born there), then execs it; exit 125 if any move fails."""
        script = (
            'for f do if [ "$f" = -- ]; then shift; break; fi; '
            'echo $$ > "$f" || exit 125; shift; done; exec "$@"'
        )
        procs = [str(f / "cgroup.procs") for f in self.folders]
        return ["/bin/sh", "-c", script, "fetch-limits", *procs, "--", *argv]

    def remove(self, patience: float = 3.0) -> bool:
        """Kill anything still in the groups (the run has ended: nothing should be) and
        remove them; True when all are gone. A group that stays busy is left for the
        next ``open_run`` to retry."""
        deadline = time.monotonic() + patience
        left = list(self.folders)
        while left:
            for folder in list(left):
                for pid in _members(folder):
                    with suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                try:
                    folder.rmdir()
                except FileNotFoundError:
                    pass
                except OSError:
                    continue
                left.remove(folder)
            if left and time.monotonic() < deadline:
                time.sleep(0.005)
            elif left:
                _LEFTOVERS.update(left)
                log.warning("kennel cgroups still busy, removed later: %s", left)
                return False
        return True


_LEFTOVERS: set[Path] = set()


def _sweep_dead(support: CgroupSupport) -> None:
    """Remove the empty groups a Fetch that is gone left (killed before its runs ended:
    nothing removed them). Only those of dead pids: an empty group of a live Fetch may
    be one it has just made and is about to join. A group that is not empty stays."""
    for parent in support.parents.values():
        try:
            names = [e.name for e in os.scandir(parent) if e.name.startswith("fetch-kennel-")]
        except OSError:
            continue
        for name in names:
            pid = name.split("-")[2]
            if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
                with suppress(OSError):
                    (parent / name).rmdir()


def _members(folder: Path) -> list[int]:
    try:
        return [int(p) for p in (folder / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def _write(path: Path, value: str) -> None:
    with open(path, "w", encoding="ascii") as fh:
        fh.write(value)


def open_run(limits: Limits, support: CgroupSupport, root: Path = CGROUP_ROOT) -> RunGroup | None:
    """Make the cgroups of one run with ``limits`` (None: rlimits only, as ``support``
    says). A group the host offers but that cannot be made is an error (KennelError):
    the promised limit would be missing."""
    for stale in list(_LEFTOVERS):
        with suppress(OSError):
            stale.rmdir()
        if not stale.exists():
            _LEFTOVERS.discard(stale)
    if not limits.cgroups or support.kind == "none":
        return None
    _sweep_dead(support)
    name = f"fetch-kennel-{os.getpid()}-{next(_serial)}"
    made: list[Path] = []
    try:
        if support.kind == "v2":
            here = support.parents["unified"]
            _delegate(here, root)
            group = here / name
            group.mkdir()
            made.append(group)
            _write(group / "pids.max", str(limits.processes))
            _write(group / "memory.max", str(limits.memory))
            if (group / "memory.swap.max").exists():
                _write(group / "memory.swap.max", "0")
        else:
            if "pids" in support.parents:
                group = support.parents["pids"] / name
                group.mkdir()
                made.append(group)
                _write(group / "pids.max", str(limits.processes))
            if "memory" in support.parents:
                group = support.parents["memory"] / name
                group.mkdir()
                made.append(group)
                _write(group / "memory.limit_in_bytes", str(limits.memory))
                if (group / "memory.memsw.limit_in_bytes").exists():
                    # No swap either (memsw counts memory + swap; it must be ≥ the above).
                    _write(group / "memory.memsw.limit_in_bytes", str(limits.memory))
    except OSError as err:
        RunGroup(made).remove(patience=0.5)
        raise KennelError(f"could not make the run's cgroup ({support.why}): {err}") from err
    return RunGroup(made)


class Limited:
    """A kennel process whose run's cgroups are removed once it has ended."""

    def __init__(self, proc: BackendProcess, group: RunGroup) -> None:
        self._proc = proc
        self._group = group

    @property
    def pid(self) -> int:
        return int(getattr(self._proc, "pid", 0))

    def lines(self) -> AsyncIterator[str]:
        return self._proc.lines()

    async def wait(self) -> int:
        code = await self._proc.wait()
        await asyncio.to_thread(self._group.remove)
        return code

    async def terminate(self, grace: float) -> float:
        took = await self._proc.terminate(grace)
        await asyncio.to_thread(self._group.remove)
        return took

    def stderr_tail(self) -> str:
        return self._proc.stderr_tail()

    def alive_pids(self) -> list[int]:
        return self._proc.alive_pids()

    async def pause(self) -> int:
        return await self._proc.pause()

    async def resume(self) -> None:
        await self._proc.resume()

    async def write_input(self, data: bytes) -> bool:
        return await self._proc.write_input(data)

    def close_input(self) -> None:
        self._proc.close_input()


# -- fetch doctor -------------------------------------------------------------------------


def describe(limits: Limits, support: CgroupSupport | None = None) -> str:
    """Which limits apply to a bwrap run, and how."""
    support = support or host_support()
    if not limits.cgroups:
        how = "rlimits only (kennel.bwrap.cgroups: off): processes per run, memory per process"
    elif support.kind == "none":
        how = f"rlimits only ({support.why}): processes per run, memory per process"
    else:
        how = f"{support.why} for the whole run + rlimits"
    return f"{how}; {limits.summary()}"


def doctor_lines(settings: KennelSettings, backend: str) -> list[str]:
    """``fetch doctor``'s lines about the CLI's uid and its limits."""
    from kennel.owner import describe_user

    if backend == "docker":
        d = settings.docker
        return [
            f"runs as:   {describe_user(d.user, 'docker')}",
            f"limits:    docker cgroups ({d.pids} processes, {d.memory} memory, {d.cpus:g} "
            f"CPUs) + ulimits ({d.cpu_seconds} s CPU per process, "
            f"{show_size(parse_size(d.file_size))} per file, {d.nproc} processes of all "
            "Docker kennels together)",
        ]
    if backend == "bwrap":
        b = settings.bwrap
        return [
            f"runs as:   {describe_user(b.user, 'bwrap')}",
            f"limits:    {describe(Limits.from_settings(b))}",
        ]
    return []


__all__ = [
    "CgroupSupport",
    "Limited",
    "Limits",
    "RunGroup",
    "describe",
    "detect",
    "doctor_lines",
    "host_support",
    "open_run",
    "parse_size",
]
