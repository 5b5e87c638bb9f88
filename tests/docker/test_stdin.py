"""A run's stdin under the real Docker kennel (steering, orchestrator/task/steer.py):
with ``ExecSpec.steer`` what Fetch writes reaches the CLI in the container through the
exec's hijacked socket, each line as it is written; closing it (a half-close of that
socket) ends the CLI's input while its output still comes back; without ``steer`` the
CLI reads nothing and ``write_input`` says no. /stop ends a CLI that holds stdin open."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from kennel.docker_backend import DockerKennel, half_closes
from kennel.settings import DockerKennelSettings
from tests.kennel.runs import Runs
from tests.kennel.runs import runs as runs  # the fixture

# Echo each stdin line, then say the input ended.
ECHO = 'while IFS= read -r line; do echo "got $line"; done; echo eof'


async def test_what_fetch_writes_reaches_the_cli_in_the_container(
    kennel_image: str, runs: Runs
) -> None:
    kennel = DockerKennel(runs.home, DockerKennelSettings(), kennel_image)
    try:
        assert kennel.steerable  # the local engine's unix socket half-closes
        run = runs.open(kennel, runs.repo("app", {"a.txt": "a\n"}))
        spec = dataclasses.replace(run.spec(("sh", "-c", ECHO), {}), steer=True)
        proc = await kennel.exec(spec)
        lines = proc.lines()
        assert await proc.write_input(b"first\n")
        assert await asyncio.wait_for(anext(lines), 20) == "got first"
        assert await proc.write_input(b"second\n")
        assert await asyncio.wait_for(anext(lines), 20) == "got second"
        proc.close_input()
        assert await asyncio.wait_for(anext(lines), 20) == "eof"
        assert await asyncio.wait_for(proc.wait(), 20) == 0
        assert not await proc.write_input(b"after the end\n")

        # Without steer: stdin is not attached, the CLI reads nothing, writes say no.
        proc = await kennel.exec(run.spec(("sh", "-c", ECHO), {}))
        assert not await proc.write_input(b"ignored\n")
        assert [line async for line in proc.lines()] == ["eof"]
        assert await asyncio.wait_for(proc.wait(), 20) == 0

        # A CLI reading an open stdin is still ended by a stop, quickly.
        proc = await kennel.exec(dataclasses.replace(run.spec(("sh", "-c", ECHO), {}), steer=True))
        assert await proc.write_input(b"x\n")
        assert await asyncio.wait_for(anext(proc.lines()), 20) == "got x"
        took = await proc.terminate(3.0)
        assert took < 3.0
        assert proc.alive_pids() == []
    finally:
        await kennel.close()


def test_which_engine_sockets_can_end_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    # Judged without contacting the engine (asked on the loop at a task's start).
    for host, steers in (("ssh://fetch@box", False), ("tcp://box:2376", False), (None, True)):
        kennel = DockerKennel(tmp_path, DockerKennelSettings(host=host), "unused")
        assert kennel.steerable is steers and kennel._client is None
    assert half_closes("http+docker://localhost")  # unix socket
    assert half_closes("http://127.0.0.1:2375")
    assert not half_closes("https://engine.example:2376")  # TLS: no half-close
    assert not half_closes("http+docker://ssh")
