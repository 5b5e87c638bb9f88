"""A run's stdin (steering, orchestrator/task/steer.py) through the real kennels: with
``ExecSpec.steer`` what Fetch writes reaches the CLI in the bwrap sandbox and in
unsafe-local (the launcher passes the pipe on), closing it ends the CLI's input; without
it the CLI reads /dev/null and ``write_input`` says no. Docker's exec stdin is tested in
tests/docker/test_stdin.py."""

from __future__ import annotations

import asyncio
import dataclasses
import sys

import pytest

from kennel.base import Kennel
from kennel.bwrap import BwrapKennel, probe
from kennel.local import LocalKennel
from tests.fakes.require import missing
from tests.kennel.runs import Runs
from tests.kennel.runs import runs as runs  # the fixture

# Echo each stdin line, then say the input ended.
ECHO = (
    "import sys\n"
    "for line in sys.stdin:\n"
    "    print('got', line.strip(), flush=True)\n"
    "print('eof', flush=True)\n"
)


def _kennel(name: str, runs: Runs) -> Kennel:
    if name == "bwrap":
        why = probe()
        if why is not None:
            missing(f"the bwrap sandbox cannot run: {why}")
        return BwrapKennel(runs.home)
    return LocalKennel(runs.home, "auto")


@pytest.mark.parametrize("backend", ["bwrap", "unsafe-local"])
async def test_what_fetch_writes_reaches_the_cli(backend: str, runs: Runs) -> None:
    kennel = _kennel(backend, runs)
    assert kennel.steerable
    spec = dataclasses.replace(runs.open(kennel).spec((sys.executable, "-c", ECHO)), steer=True)
    proc = await kennel.exec(spec)
    lines = proc.lines()
    assert await proc.write_input(b"first\n")
    assert await asyncio.wait_for(anext(lines), 10) == "got first"
    assert await proc.write_input(b"second\n")
    assert await asyncio.wait_for(anext(lines), 10) == "got second"
    proc.close_input()
    assert await asyncio.wait_for(anext(lines), 10) == "eof"
    assert await asyncio.wait_for(proc.wait(), 10) == 0
    assert not await proc.write_input(b"after the end\n")


@pytest.mark.parametrize("backend", ["bwrap", "unsafe-local"])
async def test_without_steer_the_cli_reads_nothing(backend: str, runs: Runs) -> None:
    kennel = _kennel(backend, runs)
    proc = await kennel.exec(runs.open(kennel).spec((sys.executable, "-c", ECHO)))
    assert not await proc.write_input(b"unheard\n")
    assert [line async for line in proc.lines()] == ["eof"]  # /dev/null: at once
    assert await proc.wait() == 0
