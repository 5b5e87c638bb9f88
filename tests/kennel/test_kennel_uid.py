"""The sandbox uid: a dedicated one, never root nor a login account; as root, the bwrap
kennel runs the CLI as that uid on the host (never root outside), in a user namespace of
its own, with a session keyring of its own."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

from core.errors import KennelError
from kennel import launcher, owner
from kennel.base import ExecSpec
from kennel.bwrap import BwrapKennel, probe
from kennel.owner import DEDICATED_USER, check_user, describe_user, parse_user, user_for
from tests.fakes.require import missing
from tests.kennel.procs import running
from tests.kennel.runs import Run, Runs
from tests.kennel.runs import runs as runs  # the fixture

FETCH_ROOT = Path(launcher.__file__).resolve().parents[1]
DEDICATED_UID = parse_user(DEDICATED_USER)[0]


def require_root_bwrap() -> None:
    why = probe()
    if why is not None:
        missing(f"the bwrap sandbox cannot run: {why}")
    if os.geteuid() != 0:
        missing("the kennel uid is chosen only when Fetch is root", ci_must="run the tests as root")


def run_spec(run: Run, code: str, *args: str) -> ExecSpec:
    """A Python one-liner as the CLI of a real run (tests/kennel/runs.py)."""
    return run.spec((sys.executable, "-c", code, *args))


def _argv(pid: int) -> list[bytes]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")


def _status(pid: int) -> dict[str, str]:
    text = Path(f"/proc/{pid}/status").read_text()
    return {k: v.strip() for k, _, v in (line.partition(":") for line in text.splitlines())}


# -- the choice, on its own -----------------------------------------------------------------


def test_auto_is_the_dedicated_uid_and_it_is_no_account_here(tmp_path: Path) -> None:
    assert user_for(tmp_path, "auto") == DEDICATED_USER
    uid, gid = parse_user(DEDICATED_USER)
    assert uid not in {0, 1000, 65533, 65534} and gid != 0
    assert owner.login_account(uid) is None  # this host's passwd and NSS
    assert check_user(DEDICATED_USER) == (uid, gid)
    line = describe_user("auto", "docker")
    assert line.startswith(f"kennel uid {uid} (dedicated, ") and "no login" in line


def test_root_and_login_accounts_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    passwd = tmp_path / "passwd"
    passwd.write_text(
        "root:x:0:0:root:/root:/bin/bash\n"
        "alice:x:4242:4242:Alice:/home/alice:/bin/bash\n"
        "bob:x:4343:4343:Bob:/home/bob:\n"  # no shell field: /bin/sh, a login
        "svc:x:4444:4444::/nonexistent:/usr/sbin/nologin\n"
        "off:x:4545:4545::/:/bin/false\n"
    )
    subuid = tmp_path / "subuid"
    subuid.write_text("carol:100000:65536\n")
    monkeypatch.setattr(owner, "PASSWD", passwd)
    monkeypatch.setattr(owner, "SUBUID", subuid)
    for user in ("0:0", "0", "4444:0"):
        with pytest.raises(KennelError, match="root"):
            user_for(tmp_path, user)
    with pytest.raises(KennelError, match="login account 'alice'"):
        user_for(tmp_path, "4242:4242")
    with pytest.raises(KennelError, match="login account 'bob'"):
        user_for(tmp_path, "4343")
    with pytest.raises(KennelError, match="subordinate uid range of 'carol'"):
        user_for(tmp_path, "100500:100500")
    with pytest.raises(KennelError, match="not uid:gid"):
        user_for(tmp_path, "alice")
    assert user_for(tmp_path, "4444:4444") == "4444:4444"  # a system account, no login
    assert user_for(tmp_path, "4545") == "4545:4545"
    assert describe_user("4242:4242", "docker").startswith("kennel uid REFUSED: kennel uid 4242")


def test_a_login_account_of_this_host_is_refused(tmp_path: Path) -> None:
    """The real /etc/passwd (and NSS): every account with a login shell but root, which
    is refused as root already."""
    logins = [
        e
        for e in pwd.getpwall()
        if e.pw_uid != 0 and e.pw_shell.rsplit("/", 1)[-1] not in {"nologin", "false"}
    ]
    for entry in logins:
        with pytest.raises(KennelError, match=f"login account '{entry.pw_name}'"):
            user_for(tmp_path, f"{entry.pw_uid}:{entry.pw_gid}")


# -- the bwrap kennel, as root ------------------------------------------------------------

HOLD = (
    "import os, sys, time\n"
    "print(os.getuid(), os.getgid(), os.readlink('/proc/self/ns/user'), flush=True)\n"
    "time.sleep(30)\n"
)


async def test_the_cli_runs_as_the_dedicated_uid_in_its_own_user_namespace(
    runs: Runs,
) -> None:
    require_root_bwrap()
    kennel = BwrapKennel(runs.home)
    # The owner's repository belongs to a person (uid 1234): the kennel uid is not theirs.
    repo = runs.repo()
    os.chown(repo, 1234, 1234)
    assert kennel.owner() == (DEDICATED_UID, DEDICATED_UID)
    run = runs.open(kennel, repo)
    # The run's folders, not the owner's, are handed to the kennel uid.
    for folder in (run.tree, run.writes, run.state):
        assert (folder.stat().st_uid, folder.stat().st_gid) == (DEDICATED_UID, DEDICATED_UID)
    assert repo.stat().st_uid == 1234
    proc = await kennel.exec(run_spec(run, HOLD))
    try:
        first = await anext(aiter(proc.lines()))
        inside_uid, inside_gid, inside_ns = first.split()
        cli = [pid for pid in proc.alive_pids() if _argv(pid)[1:2] == [b"-c"]]
        assert len(cli) == 1, proc.stderr_tail()
        status = _status(cli[0])  # read from the host, not the CLI's word
    finally:
        await proc.terminate(1.0)
    uid = str(DEDICATED_UID)
    assert status["Uid"].split() == [uid] * 4 and status["Gid"].split() == [uid] * 4
    assert status["Groups"] == "" and status["CapEff"] == "0" * 16 and status["NoNewPrivs"] == "1"
    assert (inside_uid, inside_gid) == (uid, uid)  # mapped to itself, not to root
    host_ns = os.readlink("/proc/self/ns/user")
    assert inside_ns != host_ns
    assert os.readlink(f"/proc/{os.getpid()}/ns/user") == host_ns
    assert not running(cli[0])


async def test_a_login_uid_configured_starts_nothing(
    tmp_path: Path, runs: Runs, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_root_bwrap()
    code = "open('ran', 'w')"  # in the run's tree, were it to start
    # A run made while the uid was still fine, then the uid became a login account's.
    kennel = BwrapKennel(runs.home, user="4646:4646")
    run = runs.open(kennel)
    passwd = tmp_path / "passwd"
    passwd.write_text("dave:x:4646:4646:Dave:/home/dave:/bin/zsh\n")
    monkeypatch.setattr(owner, "PASSWD", passwd)
    with pytest.raises(KennelError, match="login account 'dave'"):  # at exec
        await kennel.exec(run_spec(run, code))
    with pytest.raises(KennelError, match="login account 'dave'"):  # or at the layer
        runs.open(BwrapKennel(runs.home, user="4646:4646"))
    assert not (run.tree / "ran").exists()
    assert "refusing to run" in kennel.isolation()


KEYRING_DRIVER = """
import asyncio, ctypes, json, os, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from kennel.base import ExecSpec
from kennel.bwrap import BwrapKennel
from kennel.launcher import KEYCTL

NR = KEYCTL[os.uname().machine]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
# Fetch started from a login has a session keyring of its own, with keys in it.
ring = libc.syscall(NR, 1, b"fetch-test-login-session")  # JOIN_SESSION_KEYRING
key = libc.syscall(248 if NR == 250 else 217, b"user", b"fetch-canary", b"secret", 6, -3)
assert ring > 0 and key > 0, ctypes.get_errno()
PROBE = '''
import ctypes, json, os, sys
NR = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
found = libc.syscall(NR, 10, -3, b"user", b"fetch-canary", 0)  # SEARCH @s
err = ctypes.get_errno()
print(json.dumps({"found": found, "errno": err, "session": libc.syscall(NR, 0, -3, 0)}))
'''

async def main():
    # A run the test made (its layer and fresh state): tree, owner's repository.
    home, tree, repo = (Path(p) for p in sys.argv[2:5])
    kennel = BwrapKennel(home)
    layout = kennel.layout(tree, "probe", repo)
    spec = ExecSpec((sys.executable, "-c", PROBE, str(NR)), {"PATH": "/usr/bin"}, tree, layout,
                    git=repo / ".git")
    proc = await kennel.exec(spec)
    lines = [line async for line in proc.lines()]
    code = await proc.wait()
    print(json.dumps({"ring": ring, "key": key, "code": code, "lines": lines,
                      "err": proc.stderr_tail()}))

asyncio.run(main())
"""


def test_the_cli_cannot_reach_fetchs_session_keyring(runs: Runs) -> None:
    """A key in the session keyring Fetch runs with (a login's, a container's) stays
    reachable through possession even from another user namespace; the launcher's own
    session keyring cuts that. Run in a child process: joining a keyring is for life."""
    require_root_bwrap()
    run = runs.open(BwrapKennel(runs.home))
    folders = (str(runs.home), str(run.tree), str(run.repo))
    done = subprocess.run(
        [sys.executable, "-c", KEYRING_DRIVER, str(FETCH_ROOT), *folders],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["code"] == 0, report["err"]
    inside = json.loads(report["lines"][0])
    assert inside["found"] == -1 and inside["errno"] == 126  # ENOKEY
    assert inside["session"] not in {report["ring"], -1}
