"""The bwrap kennel (the default without Docker): the CLI sees only the repo, its state and
/usr, runs unprivileged in its own pid and network namespaces, reaches only the relay,
and nothing it starts outlives it."""

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
from tests.conftest import make_repo
from tests.fakes.require import missing, require_binary
from tests.kennel.procs import running
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
    kennel: BwrapKennel,
    repo: Path,
    code: str,
    *args: str,
    relay: RelaySpec | None = None,
    env: dict[str, str] | None = None,
) -> ExecSpec:
    layout = kennel.layout(repo, "probe")
    return ExecSpec(
        (sys.executable, "-c", code, *args), env or {"PATH": "/usr/bin"}, repo, layout, relay=relay
    )


async def collect(kennel: BwrapKennel, spec: ExecSpec) -> tuple[list[str], int, str]:
    proc = await kennel.exec(spec)
    lines = [line async for line in proc.lines()]
    code = await proc.wait()
    return lines, code, proc.stderr_tail()


async def test_no_network_but_the_relay_socket(tmp_path: Path, repo: Path) -> None:
    host = socket.socket()
    host.bind(("127.0.0.1", 0))
    host.listen()
    kennel = BwrapKennel(tmp_path / "home")
    log = tmp_path / "relay.jsonl"
    try:
        async with upstream() as url:
            spec = spec_in(
                kennel, repo, PROBE, str(host.getsockname()[1]), "4100", relay=relay_to(url, log)
            )
            lines, code, err = await collect(kennel, spec)
    finally:
        host.close()
    assert (lines, code) == (["host closed", "relay pong:/v1/models", "dns closed"], 0), err
    assert [json.loads(x)["path"] for x in log.read_text().splitlines()] == ["/v1/models"]
    assert not spec.layout.relay_socket.exists()


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


async def test_what_the_cli_sees(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-canary-in-host-env")
    home = tmp_path / "home"
    kennel = BwrapKennel(home)
    layout = kennel.layout(repo, "probe")
    spec = spec_in(
        kennel,
        repo,
        FACTS,
        str(layout.state_seen),
        str(home),
        env={"PATH": "/usr/bin", "ONLY": "1"},
    )
    lines, code, err = await collect(kennel, spec)
    assert code == 0, err
    facts = json.loads(lines[0])
    if os.geteuid() == 0:
        assert facts["uid"] == facts["euid"] == 1000 and facts["groups"] == []
    else:
        assert facts["uid"] == os.geteuid()
    assert facts["cap_eff"] == "0000000000000000" and facts["nnp"] == "1"
    assert not {"run", "var", "sys", "mnt", "media", "srv", "opt"} & set(facts["root"])
    assert len(facts["pids"]) <= 4  # its init, the launcher, itself: no host processes
    assert facts["env"] == ["LC_CTYPE", "ONLY", "PATH", "PWD"] or facts["env"] == [
        "ONLY",
        "PATH",
        "PWD",
    ]
    assert facts["cwd"] == str(repo)
    assert facts["git_writable"] is False and facts["tree_writable"] is True
    assert facts["state_writable"] is True
    assert facts["home"] is False  # FETCH_HOME is not there
    # /tmp is empty but for the folders leading to what is bound read-only or writable (the
    # repo; Fetch's own packages when Fetch itself is checked out under /tmp, as in CI):
    # mount points, nothing else.
    leading = {p.parts[2] for p in (repo, FETCH_ROOT) if len(p.parts) > 2 and p.parts[1] == "tmp"}
    assert set(facts["tmp"]) <= leading


async def test_a_background_process_ends_with_the_task(tmp_path: Path, repo: Path) -> None:
    marker = repo / "late.txt"
    code = (
        "import os, subprocess\n"
        f"subprocess.Popen(['sh', '-c', 'sleep 1; echo late > {marker}'],"
        " start_new_session=True)\n"
        "print('started', flush=True)\n"
    )
    kennel = BwrapKennel(tmp_path / "home")
    spec = spec_in(kennel, repo, code)
    proc = await kennel.exec(spec)
    seen: list[int] = []
    async for line in proc.lines():
        if line == "started":
            seen = proc.alive_pids()
    assert await proc.wait() == 0
    await asyncio.sleep(1.5)
    assert not marker.exists()
    assert [p for p in seen if running(p)] == []


async def test_terminate_kills_the_whole_tree(tmp_path: Path, repo: Path) -> None:
    code = (
        "import subprocess, time, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
        " start_new_session=True)\n"
        "subprocess.Popen(['sh', '-c', 'nohup sleep 60 >/dev/null 2>&1 &'])\n"
        "print('ready', flush=True); time.sleep(60)\n"
    )
    kennel = BwrapKennel(tmp_path / "home")
    proc = await kennel.exec(spec_in(kennel, repo, code))
    async for line in proc.lines():
        if line == "ready":
            break
    await asyncio.sleep(0.3)
    before = proc.alive_pids()
    assert len(before) >= 5  # bwrap, its init, launcher, the script, its children
    if os.geteuid() == 0:  # only bwrap and the sandbox's init are root on the host
        assert [_uid(pid) for pid in before].count(0) == 2
    took = await proc.terminate(1.0)
    assert took < 3.0
    assert [pid for pid in before if running(pid)] == []


async def test_a_missing_repo_starts_nothing_and_leaves_no_relay(
    tmp_path: Path, repo: Path
) -> None:
    kennel = BwrapKennel(tmp_path / "home")
    async with upstream() as url:
        spec = spec_in(kennel, repo, "print(1)", relay=relay_to(url, tmp_path / "r.jsonl"))
        missing = dataclasses.replace(spec, repo=tmp_path / "no-such-folder")
        with pytest.raises(KennelError):
            await kennel.exec(missing)
    assert not spec.layout.relay_socket.exists()


async def test_a_git_symlink_is_refused(tmp_path: Path) -> None:
    require_bwrap()
    repo = tmp_path / "odd"
    repo.mkdir()
    (repo / ".git").symlink_to(tmp_path)
    kennel = BwrapKennel(tmp_path / "home")
    with pytest.raises(KennelError, match="symlink"):
        await kennel.exec(spec_in(kennel, repo, "print(1)"))


async def test_the_demo_cli_runs_inside(tmp_path: Path, repo: Path) -> None:
    (repo / "README.md").write_text("Teh fox.\n")
    kennel = BwrapKennel(tmp_path / "home")
    spec = dataclasses.replace(
        spec_in(kennel, repo, ""),
        argv=(sys.executable, "-m", "harnesses.demo_cli", "fix README.md"),
    )
    lines, code, err = await collect(kennel, spec)
    assert code == 0, err
    assert (repo / "README.md").read_text() == "The fox.\n"
    assert any('"done"' in line for line in lines)


@pytest.mark.parametrize("cli", ["claude", "gemini", "codex", "copilot"])
async def test_the_coding_clis_start_inside(tmp_path: Path, repo: Path, cli: str) -> None:

    require_binary(cli)
    kennel = BwrapKennel(tmp_path / "home")
    state = kennel.layout(repo, "probe").state_seen
    spec = dataclasses.replace(
        spec_in(kennel, repo, ""),
        argv=(cli, "--version"),
        env={
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(state / "home"),
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
    tmp_path: Path, repo: Path
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
    kennel = BwrapKennel(tmp_path / "home")
    spec = dataclasses.replace(
        spec_in(kennel, repo, ""), argv=("mycli",), env={"PATH": f"{tools}:/usr/bin:/bin"}
    )
    lines, _code, err = await collect(kennel, spec)
    assert lines[0] == "from-mycli", err
    assert "No such file" in lines[1] and "wrote" not in lines


def test_unsafe_local_says_what_it_does_not_protect(tmp_path: Path) -> None:
    from kennel.local import LocalKennel

    line = LocalKennel(tmp_path, "auto").isolation()
    assert line.startswith("UNSAFE local") and "NOT protected" in line
    assert "FETCH_HOME" in line and "host processes" in line
    assert "nothing outlives" in BwrapKennel(tmp_path).isolation() or probe() is not None
