"""A hostile kennel on the relay's bridge (kennel/remote_bridge.py): its container's
stdout is the bridge's input, every byte of it the kennel's.

Through the real Docker engine (the local one: the attach stream is the same on any
engine), a container whose main process is a hostile program, not remote_mux.js:

* it floods "open" frames for a stream already open, never reading its stdin: each is
  answered with a "close" frame the kennel never takes, which must not pile up in
  Fetch's memory;
* it floods data frames for one stream whose relay connection reads nothing: they must
  not pile up in Fetch's memory either (the bridge stops reading the kennel instead).

Either way the bridge may stall or end (only the kennel's own relay access suffers), but
what Fetch holds for it stays bounded, and closing it (a /stop, a replaced kennel) ends
its thread at once even while the kennel stalls it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest

from kennel.remote_bridge import MAX_FRAME, Bridge
from kennel.remote_engine import Engine
from tests.fakes.require import missing

pytestmark = pytest.mark.real

LOCAL = "unix:///var/run/docker.sock"
BOUND = 16 << 20  # what Fetch may hold for one kennel's bridge: far less than it sends

# The hostile main process: a ready frame, stream 1 opened, then FLOOD; stdin never read.
HOSTILE = r"""
const [mode, total] = [process.argv[1], Number(process.argv[2])];
function frame(kind, id, body) {
  const head = Buffer.alloc(9);
  head.write(kind, 0, 'latin1'); head.writeUInt32BE(id, 1); head.writeUInt32BE(body.length, 5);
  return Buffer.concat([head, body]);
}
process.stdout.write(frame('R', 0, Buffer.alloc(0)));
process.stdout.write(frame('O', 1, Buffer.alloc(0)));
let sent = 0;
const unit = mode === 'open'
  ? Buffer.concat(Array.from({ length: 7000 }, () => frame('O', 1, Buffer.alloc(0))))
  : frame('D', 1, Buffer.alloc(MAX, 120));
function more() {
  while (sent < total) {
    sent += unit.length;
    if (!process.stdout.write(unit)) { process.stdout.once('drain', more); return; }
  }
}
more();
setInterval(() => {}, 1000);
"""


@pytest.fixture(scope="module")
def engine_client() -> Iterator[Any]:
    try:
        import docker
        import docker.errors
    except ImportError:
        missing("the docker SDK is not installed")
    try:
        client = docker.DockerClient(base_url=LOCAL, timeout=30)
        client.ping()
    except docker.errors.DockerException as err:
        missing(f"no Docker engine at {LOCAL} ({err})")
    yield client
    client.close()


@pytest.fixture(scope="module")
def image(engine_client: Any) -> str:
    import docker.errors

    from kennel.build import image_tag

    tag = image_tag()
    try:
        engine_client.images.get(tag)
    except docker.errors.ImageNotFound:
        missing(f"kennel image {tag} is not built (.ci/kennel-image.sh)")
    return tag


async def _flood(engine_client: Any, image: str, tmp_path: Path, mode: str, total: int) -> int:
    """Run the hostile container against a bridge; the most Fetch held for it."""
    socket_path = tmp_path / "relay.sock"
    held_open: list[asyncio.StreamWriter] = []

    async def mute(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held_open.append(writer)  # a relay connection that reads nothing

    server = await asyncio.start_unix_server(mute, path=str(socket_path))
    script = HOSTILE.replace("MAX", str(MAX_FRAME))
    container = engine_client.containers.create(
        image,
        ["node", "-e", script, mode, str(total)],
        stdin_open=True,
        network_disabled=True,
        labels={"fetch-test": "hostile-bridge"},
    )
    bridge = Bridge(Engine(LOCAL), str(container.id), socket_path)
    peak = 0
    stop = threading.Event()
    over = threading.Event()

    def held() -> int:
        writer = bridge._writer
        out = writer.transport.get_write_buffer_size() if writer is not None else 0
        for stream in list(bridge._streams.values()):
            waiting: list[tuple[bytes, bytes]] = list(stream.inbox._queue)  # type: ignore[attr-defined]
            out += sum(len(body) for _kind, body in waiting)
        return out

    def watch() -> None:
        nonlocal peak
        while not stop.is_set():
            with suppress(RuntimeError):  # a dict or deque changed while read: again
                peak = max(peak, held())
            if peak > BOUND:
                over.set()
            time.sleep(0.005)

    watcher = threading.Thread(target=watch, daemon=True)
    try:
        await asyncio.to_thread(bridge.attach)
        await asyncio.to_thread(container.start)
        await asyncio.to_thread(bridge.wait_ready)
        watcher.start()
        # The kennel has sent far more than BOUND by then, unless it is held up.
        await asyncio.to_thread(over.wait, 8)
    finally:
        stop.set()
        if watcher.is_alive():
            watcher.join(2)
        closing = time.monotonic()
        await asyncio.to_thread(bridge.close)
        took = time.monotonic() - closing
        await asyncio.to_thread(container.remove, force=True)
        for writer in held_open:
            writer.close()
        server.close()
    # Stalled by its kennel or not, the bridge ends when Fetch lets go of it.
    assert not bridge._thread.is_alive() and took < 5, f"close took {took:.1f} s"
    return peak


async def test_close_frames_the_kennel_never_reads_do_not_pile_up(
    engine_client: Any, image: str, tmp_path: Path
) -> None:
    peak = await _flood(engine_client, image, tmp_path, "open", 48 << 20)
    assert peak <= BOUND, f"Fetch held {peak:,} bytes of answers the kennel never read"


async def test_data_for_a_relay_that_reads_nothing_does_not_pile_up(
    engine_client: Any, image: str, tmp_path: Path
) -> None:
    peak = await _flood(engine_client, image, tmp_path, "data", 96 << 20)
    assert peak <= BOUND, f"Fetch held {peak:,} bytes the relay never read"
