"""Who may reach the relay's socket: a fresh, unguessable folder per run that only the
kennel's uid may enter (kennel/paths.py), and a peer check on every connection, which
holds even where the folder does not (a bind mount shows the socket without its folder):
a process of another uid is hung up on before a byte is read."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import stat
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from core.errors import KennelError
from kennel import paths
from kennel.base import ExecSpec, RelaySpec
from tests.fakes.require import missing
from tests.kennel.relay_vendor import SECRET, Vendor, relay_to

NOBODY = 65534
REQUEST = (
    b"POST /v1/messages HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n"
    b"Content-Type: application/json\r\nx-api-key: " + SECRET.encode() + b"\r\n"
    b"Content-Length: 2\r\n\r\n{}"
)


def require_root() -> None:
    if os.geteuid() != 0:
        missing("only root can run a process as another uid", ci_must="run the tests as root")


@pytest.fixture
async def vendor() -> AsyncIterator[Vendor]:
    async with Vendor() as v:
        yield v


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A folder every uid may enter (as a bind mount makes the socket reachable)."""
    path = Path(tempfile.mkdtemp(prefix="relay-peer-", dir="/tmp"))
    path.chmod(0o711)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _as_uid(uid: int, sock: Path) -> bytes:
    """Connect to ``sock`` from a child process running as ``uid``; what it read back."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no event loop, no logging, only the socket
        code = 0
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(5)
                s.connect(str(sock))
                got = b""
                with contextlib.suppress(OSError):  # a hung-up peer: a broken pipe, a reset
                    s.sendall(REQUEST)
                    while chunk := s.recv(65536):
                        got += chunk
            os.write(write, got or b"<closed>")
        except BaseException as err:  # what went wrong goes to the parent
            os.write(write, f"<error {err!r}>".encode())
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    try:
        out = b""
        while chunk := os.read(read, 65536):
            out += chunk
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    return out


async def test_a_process_of_another_uid_is_hung_up_on(
    vendor: Vendor, open_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    require_root()
    async with relay_to(vendor, open_dir / "r.sock") as relay:
        relay.socket_path.chmod(0o666)  # the file lets it in: only the peer check is left
        got = await asyncio.to_thread(_as_uid, NOBODY, relay.socket_path)
        mine = await asyncio.to_thread(_as_uid, os.geteuid(), relay.socket_path)
    assert got == b"<closed>", got  # not even an answer: nothing was read
    assert mine.startswith(b"HTTP/1.1 200"), mine
    assert len(vendor.seen) == 1  # Fetch's own call, and only that
    assert f"as uid {NOBODY}: not the kennel's" in caplog.text


async def test_a_uid_the_backend_names_is_served(vendor: Vendor, open_dir: Path) -> None:
    require_root()
    async with relay_to(vendor, open_dir / "r.sock", peer_uids=frozenset({NOBODY})) as relay:
        st = relay.socket_path.stat()
        # Root hands the socket to the one kennel uid: nobody else may even connect.
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (NOBODY, 0o600)
        got = await asyncio.to_thread(_as_uid, NOBODY, relay.socket_path)
    assert got.startswith(b"HTTP/1.1 200"), got
    assert len(vendor.seen) == 1


async def test_only_fetch_may_connect_by_default(vendor: Vendor, tmp_path: Path) -> None:
    async with relay_to(vendor, tmp_path / "r.sock") as relay:
        st = relay.socket_path.stat()
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (os.geteuid(), 0o600)
        assert relay.peer_uids == frozenset({os.geteuid()})


# -- the folder -------------------------------------------------------------------------------


def test_a_run_gets_a_fresh_unguessable_folder_of_its_own(tmp_path: Path) -> None:
    home = tmp_path / "home"
    one, two = paths.relay_dir(home), paths.relay_dir(home)
    try:
        assert one != two and one.parent == two.parent == paths.run_dir(home)
        assert len(one.name.removeprefix("relay-")) == 32  # 128 random bits
        assert not one.exists()  # made only when its relay starts: a layout leaves nothing
        paths.open_room(one / "relay.sock")
        with pytest.raises(FileExistsError):  # a folder already there is not fresh
            paths.open_room(one / "relay.sock")
        st = one.stat()
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (os.geteuid(), 0o700)
        assert stat.S_IMODE(one.parent.stat().st_mode) == 0o711  # enter, never list
        assert paths.admitted(one / "relay.sock") == frozenset()
    finally:
        paths.release(one / "relay.sock")
        paths.release(two / "relay.sock")
    assert not one.exists() and not two.exists()


def test_the_kennels_uid_owns_its_folder_when_fetch_is_root(tmp_path: Path) -> None:
    require_root()
    folder = paths.relay_dir(tmp_path / "home", (NOBODY, NOBODY))
    sock = folder / "relay.sock"
    paths.open_room(sock)
    st = folder.stat()
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (NOBODY, 0o700)
    assert paths.admitted(sock) == frozenset({NOBODY})
    (folder / "left-behind").write_text("x")  # whatever the kennel's uid put there
    paths.release(sock)
    paths.release(sock)  # twice: a relay stopped by wait() then terminate()
    assert not folder.exists() and paths.admitted(sock) == frozenset()


def test_a_kept_folder_keeps_its_uids(tmp_path: Path) -> None:
    kept = tmp_path / "docker-demo"
    kept.mkdir()
    assert paths.admit(kept, "65533:65533") == kept
    paths.release(kept / "relay.sock")
    assert kept.exists() and paths.admitted(kept / "relay.sock") == frozenset({65533})


def test_a_run_folder_someone_else_made_is_refused(tmp_path: Path) -> None:
    require_root()
    home = tmp_path / "home"
    planted = paths.run_dir(home, tmp_path)
    os.chown(planted, NOBODY, NOBODY)
    with pytest.raises(KennelError, match="not a folder of Fetch's own"):
        paths.run_dir(home, tmp_path)
    planted.rmdir()
    planted.symlink_to(tmp_path)
    with pytest.raises(KennelError):
        paths.run_dir(home, tmp_path)


# -- through a real sandbox -------------------------------------------------------------------

PROBE = f"""
import socket
s = socket.create_connection(("127.0.0.1", 4100), timeout=5)
s.sendall(b"GET /v1/models HTTP/1.0\\r\\nHost: relay\\r\\nx-api-key: {SECRET}\\r\\n\\r\\n")
data = b""
while chunk := s.recv(4096):
    data += chunk
print(data.split(b"\\r\\n", 1)[0].decode(), flush=True)
"""


async def test_the_bwrap_kennels_uid_reaches_its_relay_and_the_folder_goes(
    vendor: Vendor, tmp_path: Path
) -> None:
    """As root the CLI runs as the dedicated uid: its run's folder is that uid's, the relay
    admits it, and the folder is removed with the relay."""
    from kennel.bwrap import BwrapKennel, probe

    require_root()
    if (why := probe()) is not None:
        missing(f"the bwrap sandbox cannot run: {why}")
    kennel = BwrapKennel(tmp_path / "home")
    tree = tmp_path / "runs" / "demo-0a1b2c" / "r1" / "tree"
    tree.mkdir(parents=True)
    layout = kennel.layout(tree, "probe")
    layout.state_host.mkdir(parents=True)
    owner = kennel.owner()
    assert owner is not None
    folder = layout.relay_socket.parent
    relay = RelaySpec(
        upstream=vendor.url,
        provider="anthropic",
        api_key="sk-real-key-for-the-bwrap-probe",
        harness="probe",
        task_id=1,
        log_path=tmp_path / "relay.jsonl",
        secret=SECRET,
    )
    spec = ExecSpec((sys.executable, "-c", PROBE), {"PATH": "/usr/bin"}, tree, layout, relay)
    proc = await kennel.exec(spec)
    st = folder.stat()  # the relay runs until the process has ended
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (owner[0], 0o700)
    lines = [line async for line in proc.lines()]
    code = await proc.wait()
    assert (lines, code) == (["HTTP/1.0 200 OK"], 0), proc.stderr_tail()
    assert [(s.method, s.raw_path) for s in vendor.seen] == [("GET", "/v1/models")]
    entry = json.loads((tmp_path / "relay.jsonl").read_text())
    assert entry["status"] == 200
    assert not folder.exists()  # gone with the relay
