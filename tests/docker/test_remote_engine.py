"""Kennels on another Docker engine (issue 25, 4), against a second dockerd the session
starts (tests/docker/remote_daemon.py): its own data root, exec root, socket and a TLS
port on 127.0.0.1, the real kennel image copied in. The real Claude Code runs there
through the real relay; the tree goes there and comes back as data; a hostile kennel
there leaves a victim folder on this machine as it was."""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import subprocess
import tarfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from core.errors import KennelError
from kennel.docker_backend import LABEL, install_id
from kennel.remote import RemoteDockerKennel
from kennel.remote_engine import Engine
from kennel.settings import DockerKennelSettings
from orchestrator.boundary.gitops import Repo
from orchestrator.boundary.remote_files import RemoteFiles
from orchestrator.config import Settings
from tests.conftest import Driver, git, tree_snapshot
from tests.docker.conftest import CANARY
from tests.docker.remote_daemon import SecondEngine, make_certs
from tests.docker.remote_task import fetch_there, ours, typo_there
from tests.fakes.model_server import EditFile, ScriptedModelServer, Text
from tests.kennel.runs import Runs
from tests.kennel.runs import runs as runs  # the fixture
from tests.kennel.tcp_timers import connections_to

# Connections to the engine that keep alive while a task runs: the relay's bridge and
# the task's output stream (the SDK's own requests come and go).
KEEPING = 2


def _lexists(path: Path) -> bool:
    return os.path.lexists(path)


def _remote(engine: SecondEngine) -> Engine:
    return Engine.parse(engine.url, engine.certs, True)


def _kennel(
    runs: Runs, engine: SecondEngine, image: str, settings: DockerKennelSettings | None = None
) -> RemoteDockerKennel:
    """A kennel on the second engine for ``runs``' home, as build_kennel makes one."""
    return RemoteDockerKennel(
        runs.home,
        settings or DockerKennelSettings(),
        image,
        _remote(engine),
        files=RemoteFiles(runs.home),
    )


@pytest.fixture
async def remote_fetch(
    with_image: SecondEngine,
    kennel_image: str,
    make_settings: Callable[..., Settings],
) -> AsyncIterator[tuple[Driver, ScriptedModelServer]]:
    async with fetch_there(
        make_settings, with_image.url, FETCH_DOCKER_CERT_PATH=str(with_image.certs)
    ) as both:
        yield both


async def test_a_task_runs_on_the_second_engine_and_commits_here(
    remote_fetch: tuple[Driver, ScriptedModelServer],
    second_engine: SecondEngine,
    docker_client: Any,
) -> None:
    driver, model = remote_fetch
    home = driver.services.settings.home_dir
    _remote_kennel, repo, original, attrs = await typo_there(
        driver, model, second_engine, docker_client, 180, "over TLS"
    )
    # It ran there, not here: the kennel is the second engine's, with nothing bound.
    assert [(m["Type"], m["Destination"]) for m in attrs["Mounts"]] == [("volume", "/runs")]
    # The owner's tree is untouched until yes; then the commit is made here.
    assert "Teh quick" in (repo / "README.md").read_text()
    await driver.ask("yes", "Committed")
    assert git(repo, "rev-parse", "HEAD^") == original
    assert git(repo, "status", "--porcelain") == ""
    assert "The quick" in (repo / "README.md").read_text()
    # The real CLI reached the relay through the bridge, with the run's secret only.
    calls = model.model_requests
    assert calls and all(r.headers.get("x-api-key") == CANARY for r in calls)
    log = home / "relay.jsonl"
    entries = [json.loads(x) for x in log.read_text().splitlines()]
    assert any(e["path"] == "/v1/messages" and e["status"] == 200 for e in entries)
    status = " ".join((await driver.ask("/status", "Fetch ·")).split())  # the phone wraps
    assert f"on the Docker engine at {second_engine.url} (TLS, engine verified)" in status


async def test_close_leaves_nothing_on_the_second_engine(
    with_image: SecondEngine, kennel_image: str, runs: Runs
) -> None:
    kennel = _kennel(runs, with_image, kennel_image)
    run = runs.open(kennel)
    proc = await kennel.exec(run.spec(("sh", "-c", "echo hi > made.txt")))
    assert await proc.wait() == 0
    assert (run.tree / "made.txt").read_text() == "hi\n"
    # What was sent keeps the time it was sent with (0) there: how a committed file over
    # the size limit is known to come back unchanged (orchestrator/boundary/tarsync.py).
    (warm,) = kennel._warm.values()
    stream, _ = warm.container.get_archive(f"/runs/{run.layer.name}/tree")
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
        times = {m.name: m.mtime for m in tar.getmembers()}
    assert times["tree/README.md"] == 0 and times["tree/made.txt"] > 0
    await kennel.close()
    there = with_image.client()
    try:
        assert ours(there, runs.home) == []
        label = f"{LABEL}.install={install_id(runs.home)}"
        assert there.volumes.list(filters={"label": label}) == []
    finally:
        there.close()


async def test_a_hostile_kennel_there_leaves_the_victim_here_untouched(
    with_image: SecondEngine, kennel_image: str, runs: Runs, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "secret.txt").write_text("keep me\n")
    before_victim = tree_snapshot(victim)
    kennel = _kennel(runs, with_image, kennel_image, DockerKennelSettings(runs_size="512m"))
    repo = runs.repo("app", {"a.txt": "a\n", "b.txt": "b\n"})
    run = runs.open(kennel, repo)
    try:
        # Links out (absolute, relative, to the victim's file), a hard link, a FIFO, a
        # deep folder: the tree comes back as data; nothing is followed here.
        script = (
            f"ln -s {victim} escape; ln -s {victim}/secret.txt esc_file; "
            f"ln -s ../../../../../../../..{victim} rel; ln a.txt hard; mkfifo fifo; "
            "mkdir -p d/e/f && echo deep > d/e/f/g.txt; echo edited > b.txt; "
            "ln -s b.txt inside"
        )
        proc = await kennel.exec(run.spec(("sh", "-c", script)))
        assert await proc.wait() == 0, proc.stderr_tail()
        tree = run.tree
        assert os.readlink(tree / "escape") == str(victim)
        assert (tree / "hard").is_file() and not (tree / "hard").is_symlink()
        assert os.stat(tree / "hard").st_nlink == 1
        assert (tree / "hard").read_text() == "a\n"
        assert not _lexists(tree / "fifo")
        assert (tree / "d/e/f/g.txt").read_text() == "deep\n"
        change = run.layer.read(Repo(repo))
        paths = {f.path for f in change.files}
        assert {"b.txt", "hard", "d/e/f/g.txt", "inside"} <= paths
        assert not {"escape", "esc_file", "rel"} & paths
        assert any("escape" in why for why in change.left_out)
        assert tree_snapshot(victim) == before_victim

        # A file over the limit: the whole result is refused, the copy here unchanged.
        before_tree = tree_snapshot(tree)
        proc = await kennel.exec(run.spec(("sh", "-c", "truncate -s 150M big; echo x > a.txt")))
        with pytest.raises(KennelError, match="refused"):
            await proc.wait()
        assert not _lexists(tree / "big")
        assert tree_snapshot(tree) == before_tree
        assert tree_snapshot(victim) == before_victim

        # The run's tree replaced by a link to the container's root: refused too.
        swap = f"cd /runs/{run.layer.name} && mv tree t2 && ln -s / tree"
        proc = await kennel.exec(run.spec(("sh", "-c", swap)))
        with pytest.raises(KennelError, match="not a folder"):
            await proc.wait()
        assert tree_snapshot(tree) == before_tree
        assert tree_snapshot(victim) == before_victim
    finally:
        await kennel.close()


async def test_a_wrong_engine_setting_is_one_clear_line(tmp_path: Path) -> None:
    with pytest.raises(KennelError, match="tcp without TLS"):
        Engine.parse("tcp://127.0.0.1:2375", None, True)
    with pytest.raises(KennelError, match=r"lacks ca\.pem"):
        Engine.parse("tcp://127.0.0.1:2376", tmp_path, True)
    with pytest.raises(KennelError, match="use ssh://"):
        Engine.parse("http://example.invalid", None, True)
    ssh = "ssh://builder@example.invalid:2222"
    assert Engine.parse(ssh, None, True).describe() == f"{ssh} (ssh)"
    with pytest.MonkeyPatch.context() as patch:  # no ssh command: one line, not a traceback
        patch.setenv("PATH", str(tmp_path))
        with pytest.raises(KennelError, match="needs the ssh command"):
            Engine.parse(ssh, None, True)


def test_doctor_names_the_engine_and_checks_it(with_image: SecondEngine, tmp_path: Path) -> None:
    """``fetch doctor`` (the installed command) with ``auto``: the second engine is asked
    (it answers, it has the image), and named, with how it is reached."""
    from tests.cli.test_fetch_command import _env, _fetch_executable

    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    env = _env(
        home,
        FETCH_KENNEL="auto",
        FETCH_WORKSPACE=str(ws),
        FETCH_DOCKER_HOST=with_image.url,
        FETCH_DOCKER_CERT_PATH=str(with_image.certs),
    )
    done = subprocess.run(
        [_fetch_executable(), "doctor"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=90,
    )
    out = done.stdout
    engine = f"{with_image.url} (TLS, engine verified)"
    assert f"auto → docker: engine answers on the engine at {engine}" in out, out + done.stderr
    assert "kennel:    docker: no network" in out and f"on the Docker engine at {engine}" in out
    assert "layers:    copy of a base checkout per run (it goes to the other engine" in out, out
    # A wrong setting is one line, not a traceback.
    env.update(FETCH_DOCKER_CERT_PATH=str(tmp_path))
    done = subprocess.run(
        [_fetch_executable(), "doctor"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=90,
    )
    both = done.stdout + done.stderr
    assert "lacks ca.pem, cert.pem, key.pem" in both and "Traceback" not in both, both


def test_tls_both_ways_an_unknown_client_or_engine_is_refused(
    second_engine: SecondEngine, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    make_certs(other)  # a CA the engine does not know, and a client cert it signed
    mixed = tmp_path / "mixed"  # our real client cert, but another CA to check the engine
    mixed.mkdir()
    shutil.copy(other / "ca.pem", mixed / "ca.pem")
    for name in ("cert.pem", "key.pem"):
        shutil.copy(second_engine.certs / name, mixed / name)
    for n, folder in enumerate((other, mixed)):
        kennel = RemoteDockerKennel(
            tmp_path / f"home{n}",
            DockerKennelSettings(),
            "unused",
            Engine.parse(second_engine.url, folder, True),
            files=RemoteFiles(tmp_path / f"home{n}"),
        )
        with pytest.raises(KennelError, match=f"engine at {second_engine.url}.*not reachable"):
            kennel._docker()


BRIDGE_PROBE = r"""
const net = require('node:net');
const big = Buffer.alloc(5 * 1024 * 1024, 'abcdefgh');
function talk(payload) {
  return new Promise((done) => {
    const sock = net.connect(4100, '127.0.0.1');
    const got = [];
    sock.on('data', (d) => got.push(d));
    sock.on('error', () => done(null));
    sock.on('close', () => done(Buffer.concat(got)));
    sock.end(payload);
  });
}
(async () => {
  const many = await Promise.all(Array.from({ length: 100 }, (_, i) => talk('ping ' + i)));
  const ok = many.filter((b) => b && b.toString().startsWith('echo:ping')).length;
  const echoed = await talk(big);
  const same = echoed && echoed.length === big.length + 5 && echoed.subarray(5).equals(big);
  const after = await talk('ping after');
  console.log(JSON.stringify({ ok, same, after: after && after.toString() }));
})();
"""


async def test_the_bridge_carries_big_streams_and_bounds_a_flood(
    with_image: SecondEngine, kennel_image: str, runs: Runs
) -> None:
    """The relay's way in, with a stand-in relay on the run's socket that echoes after a
    pause: 100 connections at once get at most 64 through (the rest are hung up on, not
    queued on Fetch), 5 MB go there and back intact (many frames), and the bridge still
    serves the next connection."""
    kennel = _kennel(runs, with_image, kennel_image)
    run = runs.open(kennel)

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = await reader.read()  # to the client's half-close, carried as a frame
        await asyncio.sleep(0.5)
        writer.write(b"echo:" + data)
        await writer.drain()
        writer.close()

    server = await asyncio.start_unix_server(echo, path=str(run.layout.relay_socket))
    try:
        env = {"PATH": run.layout.path_env}
        proc = await kennel.exec(run.spec(("node", "-e", BRIDGE_PROBE), env))
        lines = [line async for line in proc.lines()]
        assert await proc.wait() == 0, proc.stderr_tail()
        result = json.loads(lines[-1])
        assert 1 <= result["ok"] <= 64, result
        assert result["same"] is True
        assert result["after"] == "echo:ping after"
    finally:
        server.close()
        await kennel.close()


async def test_an_image_missing_there_is_one_line_saying_how_to_copy_it(
    second_engine: SecondEngine, runs: Runs
) -> None:
    kennel = _kennel(runs, second_engine, "fetch-kennel:not-there")
    run = runs.open(kennel)
    try:
        with pytest.raises(KennelError, match=r"not on the engine at .*docker save"):
            await kennel.exec(run.spec(("true",)))
    finally:
        await kennel.close()


async def test_a_question_there_resumes_the_same_cli_session(
    remote_fetch: tuple[Driver, ScriptedModelServer],
) -> None:
    """The CLI's state travels too: its transcript comes back after the turn that asked,
    and goes there again with the answer, so the real Claude Code resumes its session."""
    driver, model = remote_fetch
    repo = driver.services.workspace.path("demo")
    question = "Which word should replace Teh: The or A?"
    model.script(Text(question))
    asked = await driver.ask("fix the typo in README.md of demo", "asks", 180)
    assert question in asked
    seen = -1
    while seen != len(model.requests):  # a late side request of the first turn lands first
        seen = len(model.requests)
        await asyncio.sleep(1.0)
    first = len(model.model_requests)
    model.script(EditFile("README.md", "Teh quick", "The quick"), Text("Used your word."))
    await driver.ask("The", "Passed your answer")
    card = await driver.expect("Apply?", 180)
    assert "+The quick" in card
    later = model.model_requests[first:]
    assert later and any(question in json.dumps(r.body) for r in later), "not resumed"
    await driver.ask("yes", "Committed")
    assert "The quick" in (repo / "README.md").read_text()


async def test_what_a_killed_fetch_left_there_is_removed_at_the_next_start(
    with_image: SecondEngine, kennel_image: str, runs: Runs
) -> None:
    """A Fetch killed with a kennel running there leaves its container and its volume;
    the next one of the same home removes both before its first kennel (by label)."""
    killed = _kennel(runs, with_image, kennel_image)
    run = runs.open(killed, runs.repo("left"))
    proc = await killed.exec(run.spec(("true",)))
    assert await proc.wait() == 0
    (left,) = killed._warm.values()
    for bridge in killed._bridges.values():
        bridge.close()  # what the kill ends; the engine's side stays
    nxt = _kennel(runs, with_image, kennel_image)
    there = with_image.client()
    try:
        run2 = runs.open(nxt, runs.repo("other"))
        proc = await nxt.exec(run2.spec(("true",)))
        assert await proc.wait() == 0
        names = [c.name for c in ours(there, runs.home)]
        assert left.name not in names and len(names) == 1
        volumes = [v.name for v in there.volumes.list(filters={"label": f"{LABEL}=1"})]
        assert f"{left.name}-runs" not in volumes
    finally:
        there.close()
        await nxt.close()
        killed._warm.clear()
        await killed.close()


async def test_a_stopped_task_there_is_not_fetched_back(
    with_image: SecondEngine, kennel_image: str, runs: Runs
) -> None:
    """The run's output comes as it is printed (a line before the run ends: over TLS it
    used to wait for the end, kennel/exec_stream.py). /stop (a kill before the end)
    reads nothing of the run's tree, so nothing of it comes back: the stop does not
    wait for an archive the kennel made as big as it liked, and the container is free
    for the next run, which comes back as usual."""
    kennel = _kennel(runs, with_image, kennel_image, DockerKennelSettings(runs_size="512m"))
    repo = runs.repo("app", {"a.txt": "a\n"})
    run = runs.open(kennel, repo)
    try:
        script = "head -c 50000000 /dev/zero > big; echo made; echo x > a.txt; sleep 300"
        proc = await kennel.exec(run.spec(("sh", "-c", script)))
        lines = proc.lines()
        first = await asyncio.wait_for(anext(lines), 60)
        assert first == "made", (first, proc.stderr_tail())
        # Meanwhile: the task's output stream and the relay's bridge to the engine keep
        # alive, so a silent drop of the far side ends them (tests/kennel/tcp_timers.py).
        assert sum(connections_to(with_image.port)) >= KEEPING, connections_to(with_image.port)
        kennel.returned_bytes = 0
        await proc.terminate(2.0)
        assert kennel.returned_bytes == 0  # no archive was asked for
        assert not _lexists(run.tree / "big")
        assert (run.tree / "a.txt").read_text() == "a\n"
        # The next run there: its result comes back as it always does.
        proc = await kennel.exec(run.spec(("sh", "-c", "rm -f big; echo y > a.txt")))
        assert await proc.wait() == 0, proc.stderr_tail()
        assert (run.tree / "a.txt").read_text() == "y\n"
        assert kennel.returned_bytes > 0
    finally:
        await kennel.close()
