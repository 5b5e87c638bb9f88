"""kennel/forwarder.js on the host's Node (no Docker needed): TCP on loopback -> unix socket."""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
import signal
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from aiohttp import web

FORWARDER = Path(__file__).resolve().parents[2] / "kennel" / "forwarder.js"
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not on PATH")


@pytest.fixture
def sockdir() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="fw-"))  # short: unix socket paths max 108 bytes
    yield d
    shutil.rmtree(d, ignore_errors=True)


async def _serve(path: Path, name: str) -> web.AppRunner:
    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        if request.path == "/stream":
            resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
            await resp.prepare(request)
            for i in range(3):
                await resp.write(f"data: {i}\n\n".encode())
                await asyncio.sleep(0.05)
            await resp.write_eof()
            return resp
        return web.Response(text=f"{name} {request.method} {request.path} {len(body)}")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.UnixSite(runner, str(path)).start()
    return runner


class Forwarder:
    def __init__(self, proc: asyncio.subprocess.Process, ports: list[int]) -> None:
        self.proc = proc
        self.ports = ports


async def _start(*args: str) -> Forwarder:
    assert NODE is not None
    proc = await asyncio.create_subprocess_exec(
        NODE,
        str(FORWARDER),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 10)
    assert line == b"ready\n"
    n = args.count("--listen")
    ports = []
    for _ in range(n):
        err = (await asyncio.wait_for(proc.stderr.readline(), 5)).decode()
        m = re.search(r"listening 127\.0\.0\.1:(\d+) -> ", err)
        assert m, err
        ports.append(int(m.group(1)))
    return Forwarder(proc, ports)


@pytest.fixture
async def cleanup() -> AsyncIterator[list[object]]:
    things: list[object] = []
    yield things
    for t in things:
        if isinstance(t, asyncio.subprocess.Process) and t.returncode is None:
            t.kill()
            await t.wait()
        elif isinstance(t, web.AppRunner):
            await t.cleanup()


async def _get(port: int, path: str, data: bytes | None = None) -> tuple[int, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    method = "POST" if data is not None else "GET"
    body = data or b""
    writer.write(
        f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n".encode()
        + body
    )
    await writer.drain()
    raw = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    await writer.wait_closed()
    head, _, rest = raw.partition(b"\r\n\r\n")
    status = int(head.split()[1])
    return status, rest


async def test_relays_pairs_in_order(sockdir: Path, cleanup: list[object]) -> None:
    a, b = sockdir / "a.sock", sockdir / "b.sock"
    cleanup.append(await _serve(a, "A"))
    cleanup.append(await _serve(b, "B"))
    fw = await _start(
        "--listen", "127.0.0.1:0", "--socket", str(a), "--listen", "0", "--socket", str(b)
    )
    cleanup.append(fw.proc)
    status, body = await _get(fw.ports[0], "/one")
    assert (status, body) == (200, b"A GET /one 0")
    status, body = await _get(fw.ports[1], "/two", b"z" * 300_000)
    assert (status, body) == (200, b"B POST /two 300000")


async def test_one_socket_serves_every_listen_and_streams(
    sockdir: Path, cleanup: list[object]
) -> None:
    s = sockdir / "r.sock"
    cleanup.append(await _serve(s, "R"))
    fw = await _start("--listen", "0", "--listen", "0", "--socket", str(s))
    cleanup.append(fw.proc)
    for port in fw.ports:
        status, body = await _get(port, "/stream")
        assert status == 200
        assert b"data: 0" in body and b"data: 2" in body


async def test_sigterm_exits_zero_even_with_open_connections(
    sockdir: Path, cleanup: list[object]
) -> None:
    s = sockdir / "r.sock"
    cleanup.append(await _serve(s, "R"))
    fw = await _start("--listen", "0", "--socket", str(s))
    cleanup.append(fw.proc)
    _reader, writer = await asyncio.open_connection("127.0.0.1", fw.ports[0])
    writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n")  # an unfinished request
    await writer.drain()
    await asyncio.sleep(0.1)
    fw.proc.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(fw.proc.wait(), 5) == 0
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


async def test_missing_socket_closes_the_client_and_keeps_running(
    sockdir: Path, cleanup: list[object]
) -> None:
    fw = await _start("--listen", "0", "--socket", str(sockdir / "absent.sock"))
    cleanup.append(fw.proc)
    reader, writer = await asyncio.open_connection("127.0.0.1", fw.ports[0])
    writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    try:
        data = await asyncio.wait_for(reader.read(), 5)
    except ConnectionResetError:
        data = b""
    assert data == b""
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    assert fw.proc.returncode is None
    # it still serves once the socket appears
    cleanup.append(await _serve(sockdir / "absent.sock", "late"))
    status, body = await _get(fw.ports[0], "/x")
    assert (status, body) == (200, b"late GET /x 0")


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--listen", "1234"],
        ["--socket", "/x.sock"],
        ["--listen", "1", "--listen", "2", "--listen", "3", "--socket", "/a", "--socket", "/b"],
        ["--listen", "notaport", "--socket", "/x"],
        ["--bogus"],
    ],
)
async def test_bad_arguments_exit_2(args: list[str]) -> None:
    assert NODE is not None
    proc = await asyncio.create_subprocess_exec(
        NODE, str(FORWARDER), *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 10)
    assert proc.returncode == 2, (out, err)
    assert b"ready" not in out


async def test_port_in_use_exits_1(sockdir: Path) -> None:
    assert NODE is not None
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        proc = await asyncio.create_subprocess_exec(
            NODE,
            str(FORWARDER),
            "--listen",
            f"127.0.0.1:{port}",
            "--socket",
            str(sockdir / "x.sock"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        _out, err = await asyncio.wait_for(proc.communicate(), 10)
    finally:
        server.close()
        await server.wait_closed()
    assert proc.returncode == 1
    assert b"EADDRINUSE" in err
