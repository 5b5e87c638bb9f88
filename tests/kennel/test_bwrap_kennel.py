"""The bwrap kennel (the default without Docker): the CLI sees only its run's tree (shown
at the repo's path, the owner's ``.git`` read-only over it), its state and /usr, runs
unprivileged in its own pid and network namespaces, reaches only the relay, and nothing
it starts outlives it. Every CLI here works on a real run (tests/kennel/runs.py): what it
writes lands in the run's layer, never in the owner's repository."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import socket
import sys
from pathlib import Path

import pytest

from core.errors import KennelError
from kennel import launcher
from kennel.base import ExecSpec, RelaySpec
from kennel.bwrap import BwrapKennel, probe
from kennel.choice import choose
from kennel.settings import KennelSettings
from tests.conftest import make_repo, tree_snapshot
from tests.fakes.require import missing, require_binary
from tests.kennel.procs import running
from tests.kennel.runs import Run, Runs
from tests.kennel.runs import runs as runs  # the fixture
from tests.kennel.test_local_kennel import PROBE, relay_to, upstream

# Where Fetch's own packages are (the sandbox binds them read-only for the demo CLI).
FETCH_ROOT = Path(launcher.__file__).resolve().parents[1]

pytestmark = pytest.mark.real


def require_bwrap() -> None:
    why = probe()
    if why is not None:
        missing(f"the bwrap sandbox cannot run: {why}")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    require_bwrap()
    return make_repo(tmp_path / "ws", "demo", {"README.md": "# demo\n"})


def spec_in(
    run: Run,
    code: str,
    *args: str,
    relay: RelaySpec | None = None,
    env: dict[str, str] | None = None,
) -> ExecSpec:
    """A Python one-liner as the CLI of ``run``."""
    return run.spec((sys.executable, "-c", code, *args), env, relay=relay)


async def collect(kennel: BwrapKennel, spec: ExecSpec) -> tuple[list[str], int, str]:
    proc = await kennel.exec(spec)
    lines = [line async for line in proc.lines()]
    code = await proc.wait()
    return lines, code, proc.stderr_tail()


async def test_no_network_but_the_relay_socket(tmp_path: Path, repo: Path, runs: Runs) -> None:
    host = socket.socket()
    host.bind(("127.0.0.1", 0))
    host.listen()
    kennel = BwrapKennel(runs.home)
    run = runs.open(kennel, repo)
    log = tmp_path / "relay.jsonl"
    try:
        async with upstream() as url:
            port = str(run.layout.relay_port)
            spec = spec_in(run, PROBE, str(host.getsockname()[1]), port, relay=relay_to(url, log))
            lines, code, err = await collect(kennel, spec)
    finally:
        host.close()
    assert (lines, code) == (["host closed", "relay pong:/v1/models", "dns closed"], 0), err
    assert [json.loads(x)["path"] for x in log.read_text().splitlines()] == ["/v1/models"]
    assert not spec.layout.relay_socket.exists()
    assert not spec.layout.relay_socket.parent.exists()  # the run's socket folder went too


FACTS = """
import json, os, sys
from pathlib import Path
status = dict(l.split(":", 1) for l in Path("/proc/self/status").read_text().splitlines())
def writable(p):
    try:
        with open(p, "a"):
            return True
    except OSError:
        return False
print(json.dumps({
    "uid": os.getuid(), "euid": os.geteuid(), "groups": os.getgroups(),
    "cap_eff": status["CapEff"].strip(), "cap_bnd": status["CapBnd"].strip(),
    "nnp": status["NoNewPrivs"].strip(), "root": sorted(os.listdir("/")),
    "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    "env": sorted(os.environ), "cwd": os.getcwd(),
    "git_writable": writable(".git/config"), "tree_writable": writable("README.md"),
    "state_writable": writable(sys.argv[1] + "/probe"),
    "home": os.path.exists(sys.argv[2]), "tmp": os.listdir("/tmp"),
}))
"""


async def test_what_the_cli_sees(repo: Path, runs: Runs, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-canary-in-host-env")
    kennel = BwrapKennel(runs.home)
    run = runs.open(kennel, repo)
    before = tree_snapshot(repo)
    spec = spec_in(
        run,
        FACTS,
        str(run.layout.state_seen),
        str(runs.home),
        env={"PATH": "/usr/bin", "ONLY": "1"},
    )
    lines, code, err = await collect(kennel, spec)
    assert code == 0, err
    facts = json.loads(lines[0])
    owner = kennel.owner()
    if os.geteuid() == 0:
        # The dedicated uid, never root nor a person's.
        assert owner is not None and owner[0] not in {0, 1000}
        assert facts["uid"] == facts["euid"] == owner[0] and facts["groups"] == []
    else:
        assert owner is None and facts["uid"] == os.geteuid()
    assert facts["cap_eff"] == "0000000000000000" and facts["nnp"] == "1"
    assert not {"run", "var", "sys", "mnt", "media", "srv", "opt"} & set(facts["root"])
    assert len(facts["pids"]) <= 4  # its init, the launcher, itself: no host processes
    assert facts["env"] == ["LC_CTYPE", "ONLY", "PATH", "PWD"] or facts["env"] == [
        "ONLY",
        "PATH",
        "PWD",
    ]
    assert facts["cwd"] == str(repo)  # the run's tree, shown at the repo's path
    assert facts["git_writable"] is False and facts["tree_writable"] is True
    assert facts["state_writable"] is True
    assert facts["home"] is False  # FETCH_HOME is not there
    # What it wrote is in the run's layer and state, not in the owner's repository.
    assert tree_snapshot(repo) == before
    assert (run.writes / "README.md").is_file() and (run.state / "probe").is_file()
    # /tmp is empty but for the folders leading to what is bound read-only or writable (the
    # repo; Fetch's own packages when Fetch itself is checked out under /tmp, as in CI):
    # mount points, nothing else.
    leading = {p.parts[2] for p in (repo, FETCH_ROOT) if len(p.parts) > 2 and p.parts[1] == "tmp"}
    assert set(facts["tmp"]) <= leading


async def test_a_background_process_ends_with_the_task(repo: Path, runs: Runs) -> None:
    marker = repo / "late.txt"  # inside: the run's tree, shown at the repo's path
    code = (
        "import os, subprocess\n"
        f"subprocess.Popen(['sh', '-c', 'sleep 1; echo late > {marker}'],"
        " start_new_session=True)\n"
        "print('started', flush=True)\n"
    )
    kennel = BwrapKennel(runs.home)
    run = runs.open(kennel, repo)
    proc = await kennel.exec(spec_in(run, code))
    seen: list[int] = []
    async for line in proc.lines():
        if line == "started":
            seen = proc.alive_pids()
    assert await proc.wait() == 0
    await asyncio.sleep(1.5)
    assert not (run.tree / "late.txt").exists() and not marker.exists()
    assert [p for p in seen if running(p)] == []


async def test_terminate_kills_the_whole_tree(repo: Path, runs: Runs) -> None:
    code = (
        "import subprocess, time, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
        " start_new_session=True)\n"
        "subprocess.Popen(['sh', '-c', 'nohup sleep 60 >/dev/null 2>&1 &'])\n"
        "print('ready', flush=True); time.sleep(60)\n"
    )
    kennel = BwrapKennel(runs.home)
    proc = await kennel.exec(spec_in(runs.open(kennel, repo), code))
    async for line in proc.lines():
        if line == "ready":
            break
    await asyncio.sleep(0.3)
    before = proc.alive_pids()
    assert len(before) >= 5  # bwrap, its init, launcher, the script, its children
    if os.geteuid() == 0:  # only bwrap and the sandbox's init are root on the host
        uids = [_uid(pid) for pid in before]
        owner = kennel.owner()
        assert uids.count(0) == 2 and owner is not None
        assert set(uids) - {0} == {owner[0]}, uids  # the rest: the kennel uid
    took = await proc.terminate(1.0)
    assert took < 3.0
    assert [pid for pid in before if running(pid)] == []


async def test_a_missing_tree_starts_nothing_and_leaves_no_relay(
    tmp_path: Path, repo: Path, runs: Runs
) -> None:
    kennel = BwrapKennel(runs.home)
    code = "open('ran', 'w')"  # in the tree it works on, were it to start
    target = runs.open(kennel, repo)
    (tmp_path / "link").symlink_to(target.tree)
    # No folder where the tree should be; a link planted there instead of the tree.
    for tree in (tmp_path / "no-such-folder", tmp_path / "link"):
        run = runs.open(kennel, repo)
        async with upstream() as url:
            spec = spec_in(run, code, relay=relay_to(url, tmp_path / "r.jsonl"))
            with pytest.raises(KennelError, match="no folder"):
                await kennel.exec(dataclasses.replace(spec, repo=tree))
        assert not spec.layout.relay_socket.exists()
        assert not spec.layout.relay_socket.parent.exists()  # the run's socket folder
        assert not (run.tree / "ran").exists()
    assert not (target.tree / "ran").exists()


async def test_a_git_symlink_is_refused(tmp_path: Path, repo: Path, runs: Runs) -> None:
    kennel = BwrapKennel(runs.home)
    run = runs.open(kennel, repo)
    gitlink = tmp_path / "gitlink"
    gitlink.symlink_to(repo / ".git")
    code = "open('ran', 'w'); print('ran')"
    with pytest.raises(KennelError, match="is not a real folder: refusing to show it"):
        await kennel.exec(dataclasses.replace(spec_in(run, code), git=gitlink))
    with pytest.raises(KennelError, match="is not a real folder"):  # nor a file
        await kennel.exec(dataclasses.replace(spec_in(run, code), git=repo / "README.md"))
    assert not (run.tree / "ran").exists()
    # The same run with the owner's real .git starts (the refusal was the link's).
    lines, status, err = await collect(kennel, spec_in(run, code))
    assert (lines, status) == (["ran"], 0), err
    assert (run.writes / "ran").is_file() and not (repo / "ran").exists()


async def test_the_demo_cli_runs_inside(runs: Runs) -> None:
    require_bwrap()
    repo = runs.repo("typo", {"README.md": "Teh fox.\n"})
    kennel = BwrapKennel(runs.home)
    run = runs.open(kennel, repo)
    spec = run.spec((sys.executable, "-m", "harnesses.demo_cli", "fix README.md"))
    lines, code, err = await collect(kennel, spec)
    assert code == 0, err
    assert any('"done"' in line for line in lines)
    # The fix is in the run's layer (its upper folder, for an overlay); the owner's
    # repository is as it was until the owner says yes.
    assert (run.tree / "README.md").read_text() == "The fox.\n"
    assert (run.writes / "README.md").read_text() == "The fox.\n"
    assert (repo / "README.md").read_text() == "Teh fox.\n"


@pytest.mark.parametrize("cli", ["claude", "gemini", "codex", "copilot"])
async def test_the_coding_clis_start_inside(repo: Path, runs: Runs, cli: str) -> None:
    require_binary(cli)
    kennel = BwrapKennel(runs.home)
    run = runs.open(kennel, repo, cli)
    spec = run.spec(
        (cli, "--version"),
        {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(run.layout.state_seen / "home"),
            "LANG": "C.UTF-8",
        },
    )
    lines, code, err = await collect(kennel, spec)
    assert code == 0, err
    assert any(ch.isdigit() for ch in " ".join(lines))


def test_auto_picks_bwrap_when_docker_does_not_answer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    choice = choose(KennelSettings())
    assert choice.backend == "bwrap"
    assert choice.reason.startswith("auto → bwrap: docker engine not answering")


def test_explicit_names(monkeypatch: pytest.MonkeyPatch) -> None:
    assert choose(KennelSettings(backend="local")).backend == "bwrap"
    assert choose(KennelSettings(backend="bwrap")).backend == "bwrap"
    assert choose(KennelSettings(backend="unsafe-local")).backend == "unsafe-local"
    assert choose(KennelSettings(backend="docker")).backend == "docker"


def _uid(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[2])  # effective
    except OSError:
        return None
    return None


async def test_a_cli_installed_outside_usr_runs_but_its_neighbours_stay_out(
    tmp_path: Path, repo: Path, runs: Runs
) -> None:
    # e.g. ~/.local/bin or an nvm prefix: its own folder is bound read-only, nothing else.
    tools = tmp_path / "tools" / "bin"
    tools.mkdir(parents=True)
    (tools / "mycli").write_text(
        "#!/bin/sh\necho from-mycli\nls ../../secret 2>&1 | head -1\n"
        'touch "$(dirname "$0")/x" 2>/dev/null && echo wrote\n'
    )
    (tools / "mycli").chmod(0o755)
    (tmp_path / "secret").mkdir()
    kennel = BwrapKennel(runs.home)
    spec = runs.open(kennel, repo).spec(("mycli",), {"PATH": f"{tools}:/usr/bin:/bin"})
    lines, _code, err = await collect(kennel, spec)
    assert lines[0] == "from-mycli", err
    assert "No such file" in lines[1] and "wrote" not in lines


def test_unsafe_local_says_what_it_does_not_protect(tmp_path: Path) -> None:
    from kennel.local import LocalKennel

    line = LocalKennel(tmp_path, "auto").isolation()
    assert line.startswith("UNSAFE local") and "NOT protected" in line
    assert "FETCH_HOME" in line and "host processes" in line
    assert "nothing outlives" in BwrapKennel(tmp_path).isolation() or probe() is not None
