"""The GitHub token never enters the kennel: a probe harness, run by /improve in the real
bwrap kennel, reads its own environment, every process it can see (command lines and
environments), the checkout's files and .git/config, and writes what it saw into the
change; the pushed branch carries that report, and the token is nowhere in it, nor in
the harness's request. /stop ends a run before anything is pushed."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import pytest

from harnesses.base import HarnessRequest
from harnesses.demo import DemoHarness
from orchestrator.config import Settings
from tests.conftest import start_driver
from tests.fakes.github_api import FakeGitHub
from tests.improve.conftest import (
    PASSING,
    REPO,
    TOKEN,
    World,
    make_remote,
    require_bwrap,
)

pytestmark = pytest.mark.real

PROBE = r"""
import json, os, pathlib, sys, time
seen = ["ENV " + json.dumps(dict(os.environ), sort_keys=True)]
for proc in pathlib.Path("/proc").iterdir():
    if proc.name.isdigit():
        for part in ("cmdline", "environ"):
            try:
                raw = (proc / part).read_bytes().decode("utf-8", "replace")
                seen.append(f"PROC {proc.name} {part} " + raw)
            except OSError as err:
                seen.append(f"PROC {proc.name} {part} unreadable {err}")
root = pathlib.Path.cwd()
for path in sorted(root.rglob("*")):
    if path.is_file() and path.name != "kennel-probe.txt":
        raw = path.read_bytes().decode("utf-8", "replace")
        seen.append(f"FILE {path.relative_to(root)} " + raw)
pathlib.Path("kennel-probe.txt").write_text("\n".join(seen))
print(json.dumps({"type": "text", "text": f"probed {len(seen)} things"}), flush=True)
if "hang" in sys.argv[1]:
    time.sleep(120)
print(json.dumps({"type": "done", "text": "probed"}), flush=True)
"""


class ProbeHarness(DemoHarness, name="improve-probe"):
    requests: ClassVar[list[HarnessRequest]] = []

    def command(self, req: HarnessRequest) -> tuple[list[str], dict[str, str]]:
        type(self).requests.append(req)
        _argv, env = super().command(req)
        return [sys.executable, "-c", PROBE, req.prompt], env


async def use_probe(world: World) -> None:
    services = world.fetch.services
    if "improve-probe" not in services.harnesses.names():
        services.harnesses.add(ProbeHarness())
    session = await services.sessions.get(world.fetch.terminal_key())
    session.data.harness = "improve-probe"


async def test_the_token_is_never_inside_the_kennel(world: World) -> None:
    await use_probe(world)
    ProbeHarness.requests.clear()
    await world.fetch.ask("/improve look around", "Pull request #1", 120)
    branch = "fetch/improve-1-look-around"
    report = world.show(branch, "kennel-probe.txt")
    # The probe saw what a CLI sees: its env, processes, the checkout and .git/config.
    assert report.count("\nPROC ") >= 2 and "ENV {" in report
    assert "FILE README.md" in report and "FILE .git/config" in report, report[:2000]
    assert TOKEN not in report
    assert "ghp_" not in report and "extraHeader" not in report
    assert "Authorization" not in report
    assert ProbeHarness.requests and all(TOKEN not in repr(r) for r in ProbeHarness.requests)
    # ...and it did reach GitHub, from the host.
    assert world.github.requests and all(TOKEN in r.auth for r in world.github.requests)


async def test_stop_ends_the_run_and_nothing_is_pushed(world: World) -> None:
    await use_probe(world)
    await world.fetch.ask("/improve hang around", "Improving Fetch", 30)
    checkout = world.home / "improve" / "1"
    for _ in range(200):  # the probe has written its report: the harness is running
        if (checkout / "kennel-probe.txt").exists():
            break
        await world.fetch.quiet(0.05)
    # The chat holds the run: a task or a second /improve waits for it.
    busy = await world.fetch.ask("fix the typo in README.md of demo", "Another run", 30)
    assert "/stop ends it" in " ".join(busy.split())
    again = await world.fetch.ask("/improve something else", "A run is going on", 30)
    assert "/stop it or wait" in " ".join(again.split())
    stopped = " ".join((await world.fetch.ask("/stop", "Stopped", 30)).split())
    assert "No changes were kept" in stopped
    assert set(world.remote_branches()) == {"main"}
    assert not checkout.exists()
    rows = await world.fetch.services.improver.records.recent()
    assert [r.status for r in rows] == ["stopped"]  # the refused second one left no row
    assert not world.github.writes()
    # The chat is free again.
    assert "Pull request #2" not in " ".join(await world.fetch.quiet(0.3))


async def test_stop_while_the_first_line_is_sent_runs_nothing(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A /stop that arrives while "Improving Fetch" is on its way (a slow network) ends
    the run before it clones or runs anything, and says so."""
    await use_probe(world)
    sending = world.fetch.slow_send(monkeypatch, "🛠 Improving Fetch")
    await world.fetch.push("/improve look around")
    await asyncio.wait_for(sending.wait(), 30)
    assert "Stopped task" in await world.fetch.ask("/stop", "Stopped", 30)
    await world.fetch.expect("Improving Fetch", 10)
    await world.fetch.quiet(1.0)  # a run started anyway would be cloning by now
    rows = await world.fetch.services.improver.records.recent()
    assert [r.status for r in rows] == ["stopped"]
    assert not (world.home / "improve" / "1").exists()
    assert world.fetch.services.runner._runs == {}
    assert not world.github.writes() and set(world.remote_branches()) == {"main"}


async def test_a_shutdown_mid_run_is_remembered_and_cleaned(
    tmp_path: Path,
    make_settings: Callable[..., Settings],
    improve_env: Callable[..., dict[str, str]],
) -> None:
    require_bwrap()
    remote = make_remote(tmp_path / "gh", PASSING)
    async with FakeGitHub(remote, REPO, TOKEN) as github:
        settings = make_settings(**improve_env(github.url, remote))
        app, driver = await start_driver(settings)
        try:
            world = World(driver, github, remote, settings.home_dir)
            await use_probe(world)
            await driver.ask("/improve hang around", "Improving Fetch", 30)
            checkout = settings.home_dir / "improve" / "1"
            for _ in range(200):
                if (checkout / "kennel-probe.txt").exists():
                    break
                await driver.quiet(0.05)
        finally:
            await app.__aexit__(None, None, None)  # Fetch stops mid-run
        assert not checkout.exists()
        assert set(world.remote_branches()) == {"main"}
        app, driver = await start_driver(settings)
        try:
            rows = await driver.services.improver.records.recent()
            assert [r.status for r in rows] == ["interrupted"]
            listing = " ".join((await driver.ask("/prs", "improve #1")).split())
            assert "interrupted" in listing
        finally:
            await app.__aexit__(None, None, None)
