"""Limits on a kennel run: a fork bomb, a memory hog, a huge file and a busy loop inside
the real bwrap kennel are stopped, the host lives on, and nothing of the run is left; the
Docker kennel's container carries the same ulimits. Plus what ``fetch doctor`` says."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core.errors import KennelError
from kennel import launcher
from kennel.base import ExecSpec
from kennel.bwrap import BwrapKennel, probe
from kennel.docker_backend import DockerKennel, hardening_problems
from kennel.limits import (
    GIB,
    CgroupSupport,
    Limits,
    RunGroup,
    describe,
    detect,
    doctor_lines,
    host_support,
    open_run,
    parse_size,
)
from kennel.owner import DEDICATED_USER, parse_user
from kennel.settings import DockerKennelSettings, KennelSettings
from tests.docker.conftest import docker_client, kennel_image  # noqa: F401 - fixtures
from tests.fakes.require import missing
from tests.kennel.procs import running
from tests.kennel.runs import Runs
from tests.kennel.runs import runs as runs  # the fixture

LAUNCHER = str(Path(launcher.__file__).resolve())
KENNEL_UID = parse_user(DEDICATED_USER)[0]


# -- on their own -----------------------------------------------------------------------


def test_sizes_and_the_launcher_options() -> None:
    assert parse_size("4g") == 4 * GIB and parse_size("512m") == 512 << 20
    assert parse_size("1073741824") == GIB and parse_size("2GiB") == 2 * GIB
    with pytest.raises(ValueError):
        parse_size("lots")
    args = Limits(processes=64, memory=256 << 20, cpu_seconds=9, file_size=1 << 20)
    opts, cmd = launcher.parse_options([*args.launcher_args(), "--port", "1", "--", "cli"])
    assert opts.new_keyring and opts.port == 1 and cmd == ["cli"]
    assert opts.rlimits == {"nproc": 64, "data": 256 << 20, "cpu": 9, "fsize": 1 << 20}
    # No RLIMIT_AS: node's WebAssembly reserves more address space than any sane cap.
    assert "as" not in opts.rlimits


def _fake_v2(root: Path, own: str, procs: str, enabled: str = "") -> Path:
    here = root / own.strip("/") if own.strip("/") else root
    here.mkdir(parents=True, exist_ok=True)
    (root / "cgroup.controllers").write_text("cpu memory pids\n")
    (here / "cgroup.controllers").write_text("cpu memory pids\n")
    (here / "cgroup.subtree_control").write_text(enabled)
    (here / "cgroup.procs").write_text(procs)
    proc_self = root.parent / "self-cgroup"
    proc_self.write_text(f"0::{own}\n")
    return proc_self


def test_detect_reads_cgroup_v2_and_v1_layouts(tmp_path: Path) -> None:
    # v2, Fetch alone in its group: usable (it will move into a leaf of its own).
    v2 = tmp_path / "a" / "cg"
    found = detect(v2, _fake_v2(v2, "/svc/fetch.service", f"{os.getpid()}\n"))
    assert found.kind == "v2" and found.parents["unified"] == v2 / "svc" / "fetch.service"
    # v2, other processes beside Fetch and nothing delegated: rlimits only, said why.
    v2b = tmp_path / "b" / "cg"
    found = detect(v2b, _fake_v2(v2b, "/box", f"1\n{os.getpid()}\n"))
    assert found.kind == "none" and "holds other processes" in found.why
    assert "rlimits only (cgroup v2, but" in describe(Limits(), found)
    # ... unless the controllers are already handed down.
    v2c = tmp_path / "c" / "cg"
    assert detect(v2c, _fake_v2(v2c, "/box", "", "memory pids")).kind == "v2"
    # v1: one folder per controller, Fetch's own group in each.
    v1 = tmp_path / "d" / "cg"
    for name in ("pids", "memory"):
        (v1 / name / "box").mkdir(parents=True)
        (v1 / name / "cgroup.procs").write_text("")
    proc_self = tmp_path / "d" / "self"
    proc_self.write_text("8:pids:/\n4:memory:/box\n0::/\n")
    found = detect(v1, proc_self)
    assert found.kind == "v1" and found.parents == {
        "pids": v1 / "pids",
        "memory": v1 / "memory" / "box",
    }
    assert detect(tmp_path / "none", proc_self).kind == "none"


def test_v2_run_group_is_made_below_fetchs_own(tmp_path: Path) -> None:
    """On a stand-in tree (this machine has cgroup v1 only): what gets written where."""
    root = tmp_path / "cg"
    _fake_v2(root, "/", "")
    support = CgroupSupport("v2", "cgroup v2", {"unified": root})
    group = open_run(Limits(processes=77, memory=300 << 20), support, root)
    assert group is not None and len(group.folders) == 1
    made = group.folders[0]
    assert made.parent == root and made.name.startswith(f"fetch-kennel-{os.getpid()}-")
    assert (made / "pids.max").read_text() == "77"
    assert (made / "memory.max").read_text() == str(300 << 20)
    assert (root / "cgroup.subtree_control").read_text() == "+pids +memory"
    assert "cgroup.procs" in " ".join(group.wrap(["bwrap"]))
    assert open_run(Limits(cgroups=False), support, root) is None


def test_doctor_says_which_uid_and_which_limits() -> None:
    settings = KennelSettings()
    bwrap = "\n".join(doctor_lines(settings, "bwrap"))
    docker = "\n".join(doctor_lines(settings, "docker"))
    assert "runs as:" in bwrap and "limits:" in bwrap
    assert "512 processes, 4 GiB memory, 3600 s CPU per process, 1 GiB per file" in bwrap
    if os.geteuid() == 0:
        assert f"kennel uid {KENNEL_UID} (dedicated" in bwrap
    support = host_support()
    expected = {"v2": "cgroup v2", "v1": "cgroup v1", "none": "rlimits only"}[support.kind]
    assert expected in bwrap
    assert f"kennel uid {KENNEL_UID} (dedicated" in docker
    assert "ulimits (3600 s CPU per process, 1 GiB per file, 2048 processes of all" in docker
    assert doctor_lines(settings, "unsafe-local") == []


def test_a_container_without_ulimits_is_refused() -> None:
    attrs: dict[str, Any] = {"HostConfig": {"Ulimits": [{"Name": "nproc", "Soft": 9, "Hard": 9}]}}
    problems = hardening_problems(attrs, Path("/ws/app"), ())
    assert "no cpu ulimit" in problems and "no fsize ulimit" in problems
    assert "no nproc ulimit" not in problems
    attrs["HostConfig"]["Ulimits"][0]["Hard"] = -1  # unlimited
    assert "no nproc ulimit" in hardening_problems(attrs, Path("/ws/app"), ())


def test_the_launcher_lowers_the_limits_for_the_cli(tmp_path: Path) -> None:
    """The launcher on its own, no sandbox: a real process under its limits."""
    code = (
        "import errno, resource\n"
        "f = open('big', 'wb', buffering=0)\n"
        "f.write(b'x' * 4096)\n"
        "try:\n    f.write(b'x')\nexcept OSError as e:\n    print(errno.errorcode[e.errno])\n"
        "print(resource.getrlimit(resource.RLIMIT_CPU), resource.getrlimit(resource.RLIMIT_DATA))\n"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", LAUNCHER, "--new-keyring", "--rlimit", "fsize=4096",
         "--rlimit", "cpu=30", "--rlimit", "data=1073741824", "--", sys.executable, "-c", code],
        capture_output=True, text=True, cwd=tmp_path, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["EFBIG", f"(30, 35) ({GIB}, {GIB})"]
    assert (tmp_path / "big").stat().st_size == 4096
    bad = subprocess.run(
        [sys.executable, LAUNCHER, "--rlimit", "stack=1", "--", "true"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert bad.returncode != 0 and "bad --rlimit" in bad.stderr


# -- the bwrap kennel, for real -------------------------------------------------------------


def require_bwrap() -> None:
    why = probe()
    if why is not None:
        missing(f"the bwrap sandbox cannot run: {why}")


def require_cgroups() -> None:
    require_bwrap()
    if os.geteuid() != 0 or host_support().kind == "none":
        missing(
            f"no cgroup Fetch can make here ({host_support().why})",
            ci_must="run the tests as root on a host with cgroups",
        )


def kennel_for(runs: Runs, **limits: Any) -> BwrapKennel:
    return BwrapKennel(runs.home, limits=Limits(**limits))


def run_spec(kennel: BwrapKennel, runs: Runs, code: str) -> ExecSpec:
    """A new real run (its own layer and fresh state, tests/kennel/runs.py) with a
    Python script as the CLI."""
    return runs.open(kennel).spec((sys.executable, "-c", code))


def is_root() -> bool:
    return os.geteuid() == 0


def _uid(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])
    except OSError:
        pass
    return -1


def _dead_pid() -> int:
    """A pid no process has (one of ours, ended and reaped)."""
    done = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True, timeout=10)
    pid = int(done.stdout)
    assert not Path(f"/proc/{pid}").exists()
    return pid


def _our_groups() -> list[Path]:
    support = host_support()
    prefix = f"fetch-kennel-{os.getpid()}-"
    return [
        p for parent in support.parents.values() for p in parent.glob(prefix + "*") if p.is_dir()
    ]


# Forks children that sleep until fork fails, or 1,000 (harmless if no limit holds).
BOMB = """
import json, os, time
n, error = 0, ""
for _ in range(1000):
    try:
        pid = os.fork()
    except OSError as err:
        error = err.strerror
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    n += 1
print(json.dumps({"forked": n, "error": error}), flush=True)
time.sleep(60)
"""


@pytest.mark.real
@pytest.mark.parametrize("cgroups", [True, False], ids=["cgroup", "rlimits-only"])
async def test_a_fork_bomb_is_capped_and_cleaned_up(runs: Runs, cgroups: bool) -> None:
    if cgroups:
        require_cgroups()
    else:
        require_bwrap()
    limit = 64
    kennel = kennel_for(runs, processes=limit, cgroups=cgroups)
    proc = await kennel.exec(run_spec(kennel, runs, BOMB))
    try:
        report = json.loads(await anext(aiter(proc.lines())))
        tree = proc.alive_pids()
        uids = {pid: _uid(pid) for pid in tree}
        if cgroups:
            assert len(_our_groups()) == 2  # pids and memory (cgroup v1 here)
    finally:
        took = await proc.terminate(2.0)
    assert 10 < report["forked"] < limit and report["error"], report
    # From the host: the sandbox's tree, bwrap and its init (root, outside the
    # kennel's uid) aside, never went past the limit.
    assert len([p for p in tree if uids[p] != 0]) <= limit, uids
    if is_root():  # the sandbox's processes are the kennel uid's (kennel.owner())
        assert kennel.owner() == (KENNEL_UID, KENNEL_UID)
        assert list(uids.values()).count(KENNEL_UID) >= report["forked"]
    assert len(tree) <= limit + 2
    assert took < 5 and [p for p in tree if running(p)] == []
    assert _our_groups() == []
    # The host still forks.
    host = await asyncio.create_subprocess_exec("true")
    assert await asyncio.wait_for(host.wait(), 10) == 0


SMALL_FORKS = """
import os, time
kids = []
for _ in range(20):
    pid = os.fork()
    if pid == 0:
        time.sleep(2)
        os._exit(0)
    kids.append(pid)
print("forked", len(kids), flush=True)
for pid in kids:
    os.waitpid(pid, 0)
"""


@pytest.mark.real
async def test_the_process_limit_is_per_run_not_per_uid(runs: Runs) -> None:
    """Every run has its own user namespace (as root) or bwrap's (not root): a full run
    leaves the next run of the same uid its own processes."""
    require_bwrap()
    kennel = kennel_for(runs, processes=48, cgroups=False)
    bomb = await kennel.exec(run_spec(kennel, runs, BOMB))
    try:
        report = json.loads(await anext(aiter(bomb.lines())))
        assert report["error"] and report["forked"] > 30
        other = await kennel.exec(run_spec(kennel, runs, SMALL_FORKS))
        lines = [line async for line in other.lines()]
        assert (lines, await other.wait()) == (["forked 20"], 0), other.stderr_tail()
    finally:
        await bomb.terminate(2.0)


# Four processes of 150 MiB each, every page written: under a per-process data limit of
# 256 MiB each one fits; only the run's memory cgroup stops them together.
HOG = """
import json, os, time
kids = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        try:
            data = b"x" * (150 << 20)
        except MemoryError:
            os._exit(3)
        time.sleep(3)
        os._exit(0)
    kids.append(pid)
codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in kids]
print(json.dumps(codes), flush=True)
"""


@pytest.mark.real
async def test_a_memory_hog_is_stopped_by_the_runs_cgroup(runs: Runs) -> None:
    require_cgroups()
    kennel = kennel_for(runs, memory=256 << 20)
    proc = await kennel.exec(run_spec(kennel, runs, HOG))
    lines = [line async for line in proc.lines()]
    code = await proc.wait()
    assert code == 0 and lines, proc.stderr_tail()
    codes = json.loads(lines[0])
    assert codes.count(0) < 4 and set(codes) <= {0, 3, -signal.SIGKILL}, codes
    assert _our_groups() == []


@pytest.mark.real
async def test_a_memory_hog_fails_to_allocate_under_rlimits_only(runs: Runs) -> None:
    require_bwrap()
    kennel = kennel_for(runs, memory=256 << 20, cgroups=False)
    code = (
        "try:\n    data = b'x' * (1 << 30)\n    print('allocated')\n"
        "except MemoryError:\n    print('MemoryError')\n"
    )
    proc = await kennel.exec(run_spec(kennel, runs, code))
    lines = [line async for line in proc.lines()]
    assert (lines, await proc.wait()) == (["MemoryError"], 0), proc.stderr_tail()


WRITE = """
import errno
with open("big.bin", "wb", buffering=0) as f:
    f.write(b"x" * (1 << 20))
    try:
        f.write(b"x")
        print("wrote past the limit")
    except OSError as err:
        print(errno.errorcode[err.errno])
"""


@pytest.mark.real
async def test_a_file_past_the_size_limit_fails_with_efbig(runs: Runs) -> None:
    require_bwrap()
    kennel = kennel_for(runs, file_size=1 << 20)
    run = runs.open(kennel)
    proc = await kennel.exec(run.spec((sys.executable, "-c", WRITE)))
    lines = [line async for line in proc.lines()]
    assert (lines, await proc.wait()) == (["EFBIG"], 0), proc.stderr_tail()
    # Written in the run's layer (its upper folder, for an overlay), not the owner's repo.
    assert (run.writes / "big.bin").stat().st_size == 1 << 20
    assert not (run.repo / "big.bin").exists()


@pytest.mark.real
async def test_a_busy_loop_is_ended_by_the_cpu_limit(runs: Runs) -> None:
    require_bwrap()
    kennel = kennel_for(runs, cpu_seconds=1)
    proc = await kennel.exec(run_spec(kennel, runs, "while True:\n    pass\n"))
    lines = [line async for line in proc.lines()]
    code = await asyncio.wait_for(proc.wait(), 30)
    # The launcher reports the CLI's death by signal as 128 + the signal.
    assert (lines, code) == ([], 128 + signal.SIGXCPU), proc.stderr_tail()


@pytest.mark.real
async def test_a_group_that_cannot_be_joined_starts_nothing(tmp_path: Path) -> None:
    """The promised cgroup is missing (here: removed under the run's feet): the run
    fails; it does not start without it."""
    require_cgroups()
    group = open_run(Limits(), host_support())
    assert group is not None
    group.remove()
    marker = tmp_path / "ran"
    proc = await asyncio.create_subprocess_exec(
        *group.wrap(["/usr/bin/touch", str(marker)]), stderr=asyncio.subprocess.DEVNULL
    )
    assert await proc.wait() == 125 and not marker.exists()
    # An empty group a dead Fetch left goes at the next run; a live Fetch's stays.
    support = host_support()
    parent = next(iter(support.parents.values()))
    dead = parent / f"fetch-kennel-{_dead_pid()}-1"
    alive = parent / f"fetch-kennel-{os.getppid()}-999"
    dead.mkdir()
    alive.mkdir()
    try:
        fresh = open_run(Limits(), support)
        assert fresh is not None and fresh.remove()
        assert not dead.exists() and alive.exists()
    finally:
        for folder in (dead, alive):
            if folder.exists():
                folder.rmdir()
    with pytest.raises(KennelError, match="could not make the run's cgroup"):
        open_run(Limits(), CgroupSupport("v1", "test", {"pids": tmp_path / "no" / "such"}))
    assert RunGroup([tmp_path / "gone"]).remove(patience=0.1)


# -- the Docker kennel ------------------------------------------------------------------------


@pytest.mark.real
async def test_the_docker_kennel_has_the_ulimits(kennel_image: str, runs: Runs) -> None:  # noqa: F811
    settings = DockerKennelSettings(
        memory="256m", pids=64, cpu_seconds=100, file_size="1m", nproc=96
    )
    kennel = DockerKennel(runs.home, settings, kennel_image)
    run = runs.open(kennel)
    try:
        async with kennel._lock:
            warm = await kennel._ensure(run.runs)
        kennel._verify(warm)  # hardening_problems, ulimits included, found nothing
        ulimits = {
            u["Name"]: (u["Soft"], u["Hard"]) for u in warm.container.attrs["HostConfig"]["Ulimits"]
        }
        assert ulimits == {"nproc": (96, 96), "cpu": (100, 105), "fsize": (1 << 20, 1 << 20)}
        result = await asyncio.to_thread(
            warm.container.exec_run, ["sh", "-c", "id -u; cat /proc/self/limits"], user=warm.user
        )
        out = result.output.decode()
        assert kennel.owner() == (KENNEL_UID, KENNEL_UID)
        assert out.splitlines()[0] == str(KENNEL_UID)
        rows = {line[:26].strip(): line[26:].split()[:2] for line in out.splitlines()[2:]}
        assert rows["Max processes"] == ["96", "96"]
        assert rows["Max cpu time"] == ["100", "105"]
        assert rows["Max file size"] == [str(1 << 20)] * 2
    finally:
        await kennel.close()
