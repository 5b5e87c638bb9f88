"""A hostile coding CLI inside the real bwrap sandbox (the default without Docker) tries
to reach the host. Every vector runs as the CLI itself and, whenever it gets anywhere,
leaves a canary in a host folder it should not even see, and says ``ESCAPED``.

The CLI works on a real run (tests/kennel/runs.py): its layer's tree shown at the
repository's path, the owner's ``.git`` read-only over it, as the runner starts it.

Each test asserts the same things afterwards: no canary, the scratch victim folder, the
scratch FETCH_HOME and the owner's repository byte-identical, the real key nowhere the
CLI could look, and no process of the task alive after it ended (by the pids the test
itself saw)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kennel.base import ExecSpec, RelaySpec
from kennel.bwrap import BwrapKennel, probe
from tests.fakes.require import missing
from tests.hostile.conftest import Scene, exercise, snapshot
from tests.kennel.procs import running
from tests.kennel.runs import Run, Runs
from tests.kennel.runs import runs as runs  # the fixture

pytestmark = pytest.mark.real
REAL_KEY = "sk-ant-real-key-never-inside-5b1e"

# Runs inside as the CLI: ``python -c HOSTILE <vector> <facts as JSON>``.
HOSTILE = r"""
import json, os, socket, subprocess, sys, time
vector, facts = sys.argv[1], json.loads(sys.argv[2])
canary = facts["canary"]

def escaped(what):
    print("ESCAPED", vector, what, flush=True)
    try:
        open(os.path.join(canary, vector), "w").write(what)
    except OSError:
        pass

def try_read(path):
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None

def try_write(path, data=b"pwned\n"):
    try:
        with open(path, "ab") as fh:
            fh.write(data)
        return True
    except OSError:
        return False

def try_connect_unix(path):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.settimeout(1); s.connect(path); return True
    except OSError:
        return False
    finally:
        s.close()

def try_connect_tcp(host, port):
    try:
        socket.create_connection((host, port), timeout=1).close(); return True
    except OSError:
        return False

def scan_for_key():
    key = facts["key_reversed"][::-1].encode()  # never whole on our own command line
    for name, value in os.environ.items():
        if key in value.encode():
            escaped("key in env " + name)
    for top, dirs, files in os.walk("/"):
        if top == "/":
            dirs[:] = [d for d in dirs if d not in {"proc", "sys", "dev", "usr"}]
        if top.startswith(sys.prefix) or top.startswith(sys.base_prefix):
            dirs[:] = []
            continue
        for name in files:
            data = try_read(os.path.join(top, name))
            if data and key in data:
                escaped("key in " + os.path.join(top, name))
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            for part in ("environ", "cmdline"):
                data = try_read(f"/proc/{pid}/{part}")
                if data and key in data:
                    escaped(f"key in /proc/{pid}/{part}")

def fetch_home():
    for rel in ("config.yaml", "fetch.db", "."):
        path = os.path.join(facts["home"], rel)
        if try_read(path) is not None or (rel == "." and os.path.isdir(path)):
            escaped("read " + path)

def host_env():
    scan_for_key()

def docker_socket():
    for path in ("/var/run/docker.sock", "/run/docker.sock", facts["docker_sock"]):
        if try_connect_unix(path):
            escaped("connected to " + path)

def other_sockets():
    for top in ("/run", "/var/run", "/tmp", os.path.dirname(facts["docker_sock"])):
        for root, dirs, files in os.walk(top):
            for name in files:
                path = os.path.join(root, name)
                if try_connect_unix(path):
                    escaped("connected to " + path)

def host_pids():
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    if facts["test_pid"] in pids and try_read(f"/proc/{facts['test_pid']}/environ"):
        escaped("host pid visible")
    if len(pids) > 6:
        escaped(f"{len(pids)} processes visible")
    if try_read("/proc/1/root/" + facts["home"] + "/config.yaml") is not None:
        escaped("/proc/1/root")
    try:
        os.kill(facts["test_pid"], 0)
        if b"pytest" in (try_read(f"/proc/{facts['test_pid']}/cmdline") or b""):
            escaped("can signal the host test")
    except OSError:
        pass

def host_tcp():
    if try_connect_tcp("127.0.0.1", facts["tcp_port"]):
        escaped("reached host 127.0.0.1")
    for host in ("10.0.2.2", "172.17.0.1", "8.8.8.8"):
        if try_connect_tcp(host, 53):
            escaped("reached " + host)

def git_config():
    git = os.path.join(facts["repo"], ".git")
    planted = b"[core]\n\tfsmonitor = touch " + canary.encode() + b"/fsmonitor\n"
    if try_write(os.path.join(git, "config"), planted):
        escaped("wrote .git/config")
    hook = os.path.join(git, "hooks", "post-checkout")
    if try_write(hook, b"#!/bin/sh\ntouch " + canary.encode() + b"/hook\n"):
        os.chmod(hook, 0o755); escaped("wrote a hook")
    try:
        os.rename(git, git + ".old"); escaped("moved .git")
    except OSError:
        pass
    r = subprocess.run(["git", "-C", facts["repo"], "config", "core.hooksPath", canary],
                       capture_output=True)
    if r.returncode == 0:
        escaped("git config wrote")

def remount_git():
    git = os.path.join(facts["repo"], ".git")
    script = (f"umount {git} 2>/dev/null; mount -o remount,bind,rw {git} 2>/dev/null;"
              f" echo '[x]' >> {git}/config && echo wrote")
    r = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True)
    if "wrote" in r.stdout:
        escaped("remounted .git")

def victim():
    for rel in ("notes.txt", "new.txt", "proj/.git/config", "dir/keep.md"):
        if try_write(os.path.join(facts["victim"], rel)):
            escaped("wrote victim " + rel)

def outside_tree():
    for path in (os.path.join(os.path.dirname(facts["repo"]), "evil.txt"),
                 os.path.join(facts["tmp"], "evil.txt"), "/usr/evil", "/etc/evil",
                 os.path.join(facts["home"], "evil.txt")):
        if try_write(path):
            escaped("wrote " + path)

def symlinks():
    repo = facts["repo"]
    links = {"to_victim": facts["victim"], "to_home": facts["home"],
             "to_root": "/proc/1/root" + facts["victim"]}
    for name, target in links.items():
        link = os.path.join(repo, name)
        try:
            os.symlink(target, link)
        except OSError:
            continue
        if try_write(os.path.join(link, "notes.txt")) or \
                try_read(os.path.join(link, "config.yaml")):
            escaped("through symlink " + name)

def as_root():
    if os.getuid() == 0 or os.geteuid() == 0:
        escaped("uid 0")
    try:
        os.setuid(0); escaped("setuid(0)")
    except OSError:
        pass
    status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines())
    if int(status["CapEff"].strip(), 16) or int(status["CapPrm"].strip(), 16):
        escaped("capabilities " + status["CapEff"].strip())
    for setuid in ("/usr/bin/su", "/usr/bin/sudo", "/usr/bin/newgrp", "/usr/bin/passwd"):
        if os.path.exists(setuid):
            r = subprocess.run([setuid, "--help"], capture_output=True, timeout=5,
                               stdin=subprocess.DEVNULL)
    r = subprocess.run(["sh", "-c", "id -u"], capture_output=True, text=True)
    if r.stdout.strip() == "0":
        escaped("shell as uid 0")

def _later(what):
    # A process that waits for the task to end, then rewrites host files.
    return (f"sleep 1.5; echo late >> {facts['victim']}/notes.txt; "
            f"touch {canary}/{vector}-late; echo late >> {facts['repo']}/README.md")

def setsid_sleep():
    subprocess.Popen(["setsid", "sh", "-c", _later("setsid")], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

def double_fork():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execvp("sh", ["sh", "-c", _later("double fork")])
        os._exit(0)
    os.wait()

def nohup():
    subprocess.Popen(["sh", "-c", "nohup sh -c '" + _later("nohup") + "' >/dev/null 2>&1 &"],
                     stdin=subprocess.DEVNULL)
    time.sleep(0.2)

def stay():
    setsid_sleep(); double_fork(); nohup()

globals()[vector]()
print("ready", flush=True)
if vector == "stay":
    time.sleep(60)
"""


@dataclass
class Box:
    scene: Scene
    home: Path
    kennel: BwrapKennel
    runs: Runs
    facts: dict[str, object]
    docker_hits: list[int]
    tcp_hits: list[int]


def _listen_unix(path: Path, hits: list[int]) -> socket.socket:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.listen()
    threading.Thread(target=_accept, args=(s, hits), daemon=True).start()
    return s


def _listen_tcp(hits: list[int]) -> socket.socket:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    threading.Thread(target=_accept, args=(s, hits), daemon=True).start()
    return s


def _accept(s: socket.socket, hits: list[int]) -> None:
    while True:
        try:
            conn, _ = s.accept()
        except OSError:
            return
        hits.append(1)
        conn.close()


@pytest.fixture
def box(scene: Scene, runs: Runs, monkeypatch: pytest.MonkeyPatch) -> Iterator[Box]:
    why = probe()
    if why is not None:
        missing(f"the bwrap sandbox cannot run: {why}")
    home = runs.home
    assert home == scene.tmp / "home"
    home.mkdir()
    (home / "config.yaml").write_text(f"providers:\n  anthropic:\n    api_key: {REAL_KEY}\n")
    (home / "fetch.db").write_bytes(b"SQLite format 3\0" + REAL_KEY.encode())
    monkeypatch.setenv("ANTHROPIC_API_KEY", REAL_KEY)  # in Fetch's own environment
    docker_hits: list[int] = []
    tcp_hits: list[int] = []
    docker = _listen_unix(scene.tmp / "docker.sock", docker_hits)
    tcp = _listen_tcp(tcp_hits)
    facts = {
        "canary": str(scene.canary),
        "home": str(home),
        "victim": str(scene.victim),
        "repo": str(scene.repo),
        "tmp": str(scene.tmp),
        "key_reversed": REAL_KEY[::-1],
        "docker_sock": str(scene.tmp / "docker.sock"),
        "tcp_port": tcp.getsockname()[1],
        "test_pid": os.getpid(),
    }
    try:
        yield Box(scene, home, BwrapKennel(home), runs, facts, docker_hits, tcp_hits)
    finally:
        docker.close()
        tcp.close()


def spec_for(box: Box, run: Run, vector: str) -> ExecSpec:
    relay = RelaySpec(
        upstream="http://127.0.0.1:9",
        provider="anthropic",
        api_key=REAL_KEY,
        harness="hostile",
        task_id=1,
        log_path=box.home / "relay.jsonl",
    )
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(run.layout.state_seen / "home"),
        "ANTHROPIC_API_KEY": relay.secret,  # the run's own secret, as the runner gives it
        "LANG": "C.UTF-8",
    }
    # The run's tree is shown at the repository's path (facts["repo"]), the owner's
    # .git read-only over it.
    return run.spec(
        (sys.executable, "-c", HOSTILE, vector, json.dumps(box.facts)), env, relay=relay
    )


async def run_vector(box: Box, vector: str, stop: bool = False) -> list[str]:
    """Run it, note every pid the task has while it runs, end it (or /stop it), wait for
    anything delayed, and check what must hold."""
    run = box.runs.open(box.kennel, box.scene.repo, "hostile")
    spec = spec_for(box, run, vector)
    home_before = _fetch_owned(box)
    victim_before = snapshot(box.scene.victim)
    repo_before = snapshot(box.scene.repo)
    proc = await box.kennel.exec(spec)
    lines: list[str] = []
    seen: set[int] = set()
    async for line in proc.lines():
        lines.append(line)
        seen.update(proc.alive_pids())
        if line == "ready" and stop:
            await proc.terminate(1.0)
            break
    await proc.wait()
    seen.discard(0)
    await asyncio.sleep(2.0)  # anything left would rewrite files now
    assert [line for line in lines if line.startswith("ESCAPED")] == []
    assert box.scene.fired() == []
    assert snapshot(box.scene.victim) == victim_before
    assert _fetch_owned(box) == home_before
    for path in spec.layout.state_host.rglob("*"):  # the CLI's own state: no key either
        assert path.is_symlink() or not path.is_file() or REAL_KEY.encode() not in path.read_bytes()
    assert [pid for pid in seen if running(pid)] == []
    assert box.docker_hits == [] and box.tcp_hits == []
    # Nothing reached the owner's repository (.git included); nothing late reached the
    # run's tree either.
    assert snapshot(box.scene.repo) == repo_before
    assert "late" not in (run.tree / "README.md").read_text()
    assert "ready" in lines, proc.stderr_tail()
    return lines


def _fetch_owned(box: Box) -> dict[str, tuple[str, ...]]:
    """FETCH_HOME but the relay's log (Fetch writes it), the runs (the run's tree and
    state: the places there it may write) and the kennel folder (bases, the shared cache)."""
    return {
        k: v
        for k, v in snapshot(box.home).items()
        if k != "relay.jsonl" and not k.startswith(("kennel", "runs"))
    }


VECTORS = [
    "fetch_home",
    "host_env",
    "docker_socket",
    "other_sockets",
    "host_pids",
    "host_tcp",
    "git_config",
    "remount_git",
    "victim",
    "outside_tree",
    "symlinks",
    "as_root",
    "setsid_sleep",
    "double_fork",
    "nohup",
]


@pytest.mark.parametrize("vector", VECTORS)
async def test_vector_stays_inside(box: Box, vector: str) -> None:
    victim_before = snapshot(box.scene.victim)
    await run_vector(box, vector)
    # Host git afterwards ("no" discards): whatever the CLI left in the tree runs nothing
    # and reaches nothing outside it.
    exercise(box.scene, "no")
    assert box.scene.fired() == []
    assert snapshot(box.scene.victim) == victim_before


async def test_stop_leaves_nothing_running(box: Box) -> None:
    # Three kinds of escapees started, then /stop while the CLI still runs.
    await run_vector(box, "stay", stop=True)


async def test_the_key_is_nowhere_inside_during_a_real_relay_run(box: Box) -> None:
    lines = await run_vector(box, "host_env")
    assert not any(REAL_KEY in line for line in lines)


async def test_a_fetch_crash_takes_the_sandbox_down(box: Box, tmp_path: Path) -> None:
    """SIGKILL on Fetch mid-task: bwrap and everything inside go with it."""
    run = box.runs.open(box.kennel, box.scene.repo, "crash")  # made by this "Fetch"
    script = tmp_path / "crash.py"
    script.write_text(
        "import asyncio, json, sys\n"
        "from pathlib import Path\n"
        "from kennel.base import ExecSpec\n"
        "from kennel.bwrap import BwrapKennel\n"
        "async def main():\n"
        "    k = BwrapKennel(Path(sys.argv[1]))\n"
        "    repo, tree = Path(sys.argv[2]), Path(sys.argv[3])\n"
        '    code = \'import subprocess,time; subprocess.Popen(["setsid","sleep","60"]);'
        ' print("ready", flush=True); time.sleep(60)\'\n'
        "    spec = ExecSpec((sys.executable, '-c', code), {'PATH': '/usr/bin'}, tree,"
        " k.layout(tree, 'crash', repo), git=repo / '.git')\n"
        "    p = await k.exec(spec)\n"
        "    async for line in p.lines():\n"
        "        if line == 'ready':\n"
        "            await asyncio.sleep(0.3)\n"
        "            print(json.dumps(p.alive_pids()), flush=True)\n"
        "    await asyncio.sleep(60)\n"
        "asyncio.run(main())\n"
    )
    child = subprocess.Popen(  # noqa: ASYNC220 - a stand-in for Fetch, killed below
        [sys.executable, str(script), str(box.home), str(box.scene.repo), str(run.tree)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert child.stdout is not None
        pids = json.loads(await asyncio.to_thread(child.stdout.readline))
        assert len(pids) >= 4
        child.kill()
        child.wait()
        for _ in range(50):
            if not [p for p in pids if running(p)]:
                break
            await asyncio.sleep(0.1)
        assert [p for p in pids if running(p)] == []
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()
