"""The setup phase (issue 21) on another Docker engine (issue 25, 4), against the second
dockerd of tests/docker/remote_daemon.py.

A repository's ``.fetch/setup.sh`` runs in the kennel there: its only way out is the
egress proxy, served on this machine on the run's socket and reached through the
container's stdio (kennel/remote_bridge.py). What it adds comes back as data
(orchestrator/boundary/tarsync.py) and is kept here as the setup layer; later tasks
there get it under their tree, and the tests before approval pass because the wheel of
the test's own index is installed. A hostile setup script there (links out, a FIFO, a
rewritten committed file) leaves a victim folder here untouched and keeps only what it
added."""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from kennel.base import ExecSpec
from kennel.docker_backend import LABEL, install_id
from kennel.remote import RemoteDockerKennel
from kennel.remote_engine import Engine
from kennel.settings import DockerKennelSettings, SetupSettings
from orchestrator.boundary.gitops import Repo
from orchestrator.boundary.layer import build_layers
from orchestrator.boundary.remote_files import RemoteFiles
from orchestrator.config import Settings
from orchestrator.task.setup import Setup, plan
from tests.conftest import Driver, git, make_repo, start_driver, tree_snapshot
from tests.docker.remote_daemon import SecondEngine
from tests.e2e.test_setup_phase import SETUP, TESTS, _other
from tests.fakes.package_index import PackageIndex


def _lexists(path: Path) -> bool:
    return os.path.lexists(path)


@pytest.fixture
async def remote_setup_fetch(
    with_image: SecondEngine,
    kennel_image: str,
    make_settings: Callable[..., Settings],
    workspace: Path,
    tmp_path: Path,
) -> AsyncIterator[tuple[Driver, PackageIndex, list[str], Path]]:
    other, other_port, other_hits = await _other()
    async with PackageIndex() as index:
        repo = make_repo(
            workspace,
            "deps",
            {
                "calc.py": "def add(a, b):\n    # teh sum\n    return a + b\n",
                "test_deps.py": TESTS.format(index=index.url, port=index.port),
                ".fetch/setup.sh": SETUP.format(
                    index=index.url, other=f"http://127.0.0.1:{other_port}"
                ),
                "requirements.txt": "tinydep\n",
                ".gitignore": ".venv/\nnode_modules/\npackage.json\npackage-lock.json\n",
            },
        )
        config = tmp_path / "config.yaml"
        config.write_text(f"kennel:\n  setup:\n    registries: ['127.0.0.1:{index.port}']\n")
        settings = make_settings(
            FETCH_KENNEL="docker",
            FETCH_CONFIG=str(config),
            FETCH_DOCKER_HOST=with_image.url,
            FETCH_DOCKER_CERT_PATH=str(with_image.certs),
        )
        app, driver = await start_driver(settings)
        try:
            yield driver, index, other_hits, repo
        finally:
            await app.__aexit__(None, None, None)
            await other.cleanup()


async def test_setup_there_then_the_tests_pass_there_offline(
    remote_setup_fetch: tuple[Driver, PackageIndex, list[str], Path],
    with_image: SecondEngine,
) -> None:
    driver, index, other_hits, repo = remote_setup_fetch
    assert isinstance(driver.services.kennel, RemoteDockerKennel)
    started = time.monotonic()
    await driver.push("fix the typo in calc.py of deps")
    await driver.expect("🧰 Running .fetch/setup.sh first", 60)
    card = await driver.expect("Apply?", 600)
    print(f"\nremote: setup and the first task to the card: {time.monotonic() - started:.1f} s")
    assert "🧰 setup ran (" in card, card
    # The tests ran there, on the setup layer: the wheel and the npm package are there.
    assert "🧪 3/3 passing (pytest, in the kennel)" in card, card
    assert "calc.py +1 −1" in card and ".venv" not in card and "node_modules" not in card
    assert "/files/tinydep-1.0-py3-none-any.whl" in index.hits
    assert "/tinynode/-/tinynode-1.0.0.tgz" in index.hits
    assert other_hits == [], "the proxy let the setup reach a port not on its list"
    # The layer is kept here, as data: the venv's python is still a link.
    home = driver.services.settings.home_dir
    (kept,) = [p for p in (home / "runs" / ".setup").glob("deps-*/*") if (p / "done").is_file()]
    python = kept / "layer" / ".venv" / "bin" / "python"
    assert python.is_symlink(), "a link of the setup came back as something else"
    assert (kept / "layer" / "node_modules" / "tinynode" / "index.js").is_file()
    after_setup = len(index.hits)
    done = await driver.ask("yes", "Committed", 60)
    assert "🧪 3/3 passing" in done
    assert git(repo, "status", "--porcelain") == ""
    assert not (repo / ".venv").exists() and not (repo / "node_modules").exists()

    # A second task: the kept layer goes under its tree there; nothing reaches the index.
    (repo / "calc.py").write_text("def add(a, b):\n    # teh total\n    return a + b\n")
    git(repo, "commit", "-qam", "typo again")
    started = time.monotonic()
    card = await driver.ask("fix the typo in calc.py of deps", "Apply?", 300)
    print(f"remote: a later task with the layer to the card: {time.monotonic() - started:.1f} s")
    assert "🧰" not in card and "🧪 3/3 passing" in card, card
    assert len(index.hits) == after_setup
    # The layer went there once, into a volume of its own mounted read-only; the run's
    # tar no longer carries it (a venv alone is thousands of files).
    kennel = driver.services.kennel
    assert isinstance(kennel, RemoteDockerKennel)
    there = with_image.client()
    try:
        label = f"{LABEL}.install={install_id(home)}"
        volumes = _setup_volumes(there, label)
        assert len(volumes) == 1, volumes
        (container,) = there.containers.list(filters={"label": label})
        mounts = {m["Destination"]: m for m in container.attrs["Mounts"]}
        assert mounts["/setup"]["Name"] == volumes[0] and not mounts["/setup"]["RW"]
    finally:
        there.close()
    assert kennel.sent_bytes < 1 << 20, kennel.sent_bytes
    await driver.ask("no", "Discarded")
    assert other_hits == []


HOSTILE = """\
mkdir -p .venv/lib node_modules/pkg node_modules/.bin
echo 'VALUE = 1' > .venv/lib/dep.py
echo 'module.exports = 2;' > node_modules/pkg/cli.js
ln -s ../pkg/cli.js node_modules/.bin/tool
ln -s {victim} escape
ln -s {victim}/secret.txt esc_file
ln -s ../../../../../../../..{victim} rel
mkfifo pipe
ln .venv/lib/dep.py hard
echo rewritten > a.txt
rm b.txt
"""


async def test_a_hostile_setup_there_keeps_only_its_additions(
    with_image: SecondEngine, kennel_image: str, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "secret.txt").write_text("keep me\n")
    before_victim = tree_snapshot(victim)
    home = tmp_path / "home"
    repo = make_repo(
        tmp_path / "ws",
        "app",
        {"a.txt": "a\n", "b.txt": "b\n", ".fetch/setup.sh": HOSTILE.format(victim=victim)},
    )
    kennel = RemoteDockerKennel(
        home,
        DockerKennelSettings(runs_size="512m"),
        kennel_image,
        Engine.parse(with_image.url, with_image.certs, True),
        files=RemoteFiles(home),
    )
    layers = build_layers(home, kennel)
    setup = Setup(kennel, layers, SetupSettings(registries=("127.0.0.1:9",)), home / "logs")
    wanted = plan(Repo(repo))
    assert wanted is not None
    try:
        outcome = await setup.ensure(Repo(repo), wanted)
        assert outcome.layer is not None, outcome.line
        assert tree_snapshot(victim) == before_victim
        layer = outcome.layer / "layer"
        kept = set(json.loads((outcome.layer / "paths.json").read_text()))
        # Only what it added; a committed file it rewrote or removed is not the layer's.
        assert {".venv", "node_modules", "escape", "esc_file", "rel", "hard"} <= kept
        assert not {"a.txt", "b.txt", "pipe", ".fetch"} & kept
        assert not _lexists(layer / "pipe") and not (layer / "a.txt").exists()
        # Links are links (data), never followed here; a hard link is a copy.
        assert os.readlink(layer / "escape") == str(victim)
        assert os.readlink(layer / "node_modules/.bin/tool") == "../pkg/cli.js"
        assert not (layer / "hard").is_symlink() and os.stat(layer / "hard").st_nlink == 1
        assert (layer / ".venv/lib/dep.py").read_text() == "VALUE = 1\n"

        # A later task there gets the layer under its tree, and the commit's own files.
        run = layers.open(Repo(repo), 7, host_mounts=kennel.host_mounts, setup=outcome.layer)
        try:
            run.fresh_state("probe")
            layout = kennel.layout(run.tree, "probe", repo)
            look = (
                "cat .venv/lib/dep.py a.txt b.txt; readlink node_modules/.bin/tool; "
                "node -e \"console.log(require('./node_modules/pkg/cli.js'))\"; "
                "readlink escape; test -e pipe || echo no-pipe"
            )
            proc = await kennel.exec(
                ExecSpec(("sh", "-c", look), {"PATH": layout.path_env}, run.tree, layout)
            )
            lines = [line async for line in proc.lines()]
            assert await proc.wait() == 0, proc.stderr_tail()
            assert lines == [
                "VALUE = 1",
                "a",
                "b",
                "../pkg/cli.js",
                "2",
                str(victim),
                "no-pipe",
            ], lines
            # Its change holds none of the setup's entries.
            change = run.read(Repo(repo))
            assert not [f.path for f in change.files], change.files
            # A task there cannot change the layer for the next one: the volume is
            # read-only; what it does to its own copy stays its own.
            spoil = (
                "echo spoiled > /setup/.venv/lib/dep.py || echo refused; "
                "echo spoiled > .venv/lib/dep.py; rm -rf node_modules"
            )
            proc = await kennel.exec(
                ExecSpec(("sh", "-c", spoil), {"PATH": layout.path_env}, run.tree, layout)
            )
            assert "refused" in [line async for line in proc.lines()]
            assert await proc.wait() == 0, proc.stderr_tail()
        finally:
            run.drop()
        lines = await _look(kennel, layers, repo, outcome.layer, look)
        assert lines[0] == "VALUE = 1" and lines[3] == "../pkg/cli.js", lines
        assert tree_snapshot(victim) == before_victim
        assert git(repo, "status", "--porcelain") == ""
    finally:
        await kennel.close()
    there = with_image.client()
    try:  # close leaves the layer's volume (read-only to every task) and no other
        label = f"{LABEL}.install={install_id(home)}"
        assert len(_setup_volumes(there, label)) == 1
        assert len(there.volumes.list(filters={"label": label})) == 2  # it and its mark
    finally:
        there.close()


async def test_a_big_setup_layer_goes_there_once(
    with_image: SecondEngine,
    kennel_image: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A layer of 6,000 files and 600 links (24 MB): with the volume, a task's tar holds
    the commit only and the layer is copied there; without it (the tar way), every task
    sends and takes back the whole layer. Both timed; what a task sees is the same, and
    a task's edit inside the layer still comes back (the top entry it is in, whole)."""
    home = tmp_path / "home"
    repo = make_repo(tmp_path / "ws", "big", {"a.txt": "a\n", ".fetch/setup.sh": "true\n"})
    kennel = RemoteDockerKennel(
        home,
        DockerKennelSettings(runs_size="1g"),
        kennel_image,
        Engine.parse(with_image.url, with_image.certs, True),
        files=RemoteFiles(home),
    )
    layers = build_layers(home, kennel)
    wanted = plan(Repo(repo))
    assert wanted is not None
    setup_run = layers.open(Repo(repo), "setup", host_mounts=False)
    modules = setup_run.tree / "node_modules"
    for n in range(600):
        pkg = modules / f"p{n}"
        pkg.mkdir(parents=True)
        for k in range(10):
            (pkg / f"f{k}.js").write_bytes(os.urandom(4096))
        (pkg / "self").symlink_to("f0.js")
    folder = layers.keep_setup(setup_run, wanted.digest)
    setup_run.drop()
    look = "ls node_modules | wc -l; readlink node_modules/p7/self; echo b > b.txt"
    edit = "; echo edit > node_modules/p3/f1.js"
    figures: dict[str, float] = {}
    try:
        for way in ("tar", "volume", "volume again"):
            if way == "tar":
                monkeypatch.setattr(kennel, "_place_setup", _nothing)
            else:
                monkeypatch.undo()
            run = layers.open(Repo(repo), way.replace(" ", "-"), host_mounts=False, setup=folder)
            try:
                run.fresh_state("probe")
                layout = kennel.layout(run.tree, "probe", repo)
                started = time.monotonic()
                script = look if way == "volume again" else look + edit
                proc = await kennel.exec(
                    ExecSpec(("sh", "-c", script), {"PATH": layout.path_env}, run.tree, layout)
                )
                lines = [line async for line in proc.lines()]
                assert await proc.wait() == 0, proc.stderr_tail()
                figures[f"{way}_s"] = time.monotonic() - started
                figures[f"{way}_sent_mb"] = kennel.sent_bytes / (1 << 20)
                figures[f"{way}_returned_mb"] = kennel.returned_bytes / (1 << 20)
                assert lines == ["600", "f0.js"], lines
                change = run.read(Repo(repo))
                # The copy here still holds the whole layer (it stayed; it did not travel).
                assert len(os.listdir(run.tree / "node_modules")) == 600
                assert (run.tree / "node_modules/p7/f9.js").stat().st_size == 4096
                edited = [] if way == "volume again" else ["node_modules/p3/f1.js"]
                assert sorted(f.path for f in change.files) == ["b.txt", *edited]
                if way == "volume":
                    # The run's next turn (a question answered) sees its own edit: the
                    # entry it changed now travels in the tar, not from the volume.
                    proc = await kennel.exec(
                        ExecSpec(
                            ("cat", "node_modules/p3/f1.js"),
                            {"PATH": layout.path_env},
                            run.tree,
                            layout,
                        )
                    )
                    assert [line async for line in proc.lines()] == ["edit"]
                    assert await proc.wait() == 0, proc.stderr_tail()
                    assert kennel.sent_bytes > 20 << 20
            finally:
                run.drop()
    finally:
        await kennel.close()
    # Fetch stopped (or was killed: its container is left too). The layer's volume and
    # its mark stay there: the next start of the same home keeps them and sends nothing.
    there = with_image.client()
    label = f"{LABEL}.install={install_id(home)}"
    try:
        (layer,) = _setup_volumes(there, label)
        assert _marks(there, label) == [layer.replace("fetch-setup-", "fetch-filled-")]
        for life in ("restarted", "killed while filling"):
            files = _CountingFiles(home)
            again = RemoteDockerKennel(
                home,
                DockerKennelSettings(runs_size="1g"),
                kennel_image,
                Engine.parse(with_image.url, with_image.certs, True),
                files=files,
            )
            try:
                lines = await _look(again, build_layers(home, again), repo, folder, look)
                assert lines == ["600", "f0.js"], lines
                assert again.sent_bytes < 1 << 20, again.sent_bytes
            finally:
                await again.close()
            assert _setup_volumes(there, label) == [layer]
            if life == "restarted":
                assert files.packed == 0, "the kept layer was sent again"
                # A kill after the layer went there, before its mark: the next start
                # removes the layer and fills it anew.
                there.volumes.get(_marks(there, label)[0]).remove()
            else:
                assert files.packed == 1
                assert len(_marks(there, label)) == 1
    finally:
        there.close()
    print(f"\nbig setup layer there: {figures}")
    assert figures["tar_sent_mb"] > 20
    assert figures["tar_returned_mb"] > 20
    assert figures["volume again_sent_mb"] < 1 and figures["volume again_returned_mb"] < 1


async def test_a_setup_result_over_the_bounds_is_one_line_and_not_kept(
    with_image: SecondEngine, kennel_image: str, tmp_path: Path
) -> None:
    """A file over the size any change may have: the setup's returned tree is refused
    whole, the card gets one line, nothing is kept, and the next task tries again."""
    home = tmp_path / "home"
    script = "mkdir -p .venv && echo ok > .venv/ok && truncate -s 150M .venv/big\n"
    repo = make_repo(tmp_path / "ws", "huge", {"a.txt": "a\n", ".fetch/setup.sh": script})
    kennel = RemoteDockerKennel(
        home,
        DockerKennelSettings(runs_size="512m"),
        kennel_image,
        Engine.parse(with_image.url, with_image.certs, True),
        files=RemoteFiles(home),
    )
    layers = build_layers(home, kennel)
    setup = Setup(kennel, layers, SetupSettings(registries=("127.0.0.1:9",)), home / "logs")
    wanted = plan(Repo(repo))
    assert wanted is not None
    try:
        outcome = await setup.ensure(Repo(repo), wanted)
        assert outcome.layer is None
        assert outcome.line.startswith("🧰 setup's result could not be taken"), outcome.line
        assert "over the limit" in outcome.line and "Traceback" not in outcome.line
        assert layers.setup_ready(repo, wanted.digest) is None
    finally:
        await kennel.close()


def _setup_volumes(client: Any, label: str) -> list[str]:
    found = client.volumes.list(filters={"label": label})
    return [v.name for v in found if v.name.startswith("fetch-setup-")]


def _marks(client: Any, label: str) -> list[str]:
    found = client.volumes.list(filters={"label": label})
    return [v.name for v in found if v.name.startswith("fetch-filled-")]


class _CountingFiles(RemoteFiles):
    """This machine's folders as the kennel there reaches them, counting the setup
    layers packed to go there."""

    packed = 0

    def pack_folder(self, *args: Any, **kwargs: Any) -> int:
        self.packed += 1
        return super().pack_folder(*args, **kwargs)


async def _look(
    kennel: RemoteDockerKennel, layers: Any, repo: Path, setup: Path, script: str
) -> list[str]:
    """``script``'s output, run there in a fresh run over ``setup``."""
    run = layers.open(Repo(repo), "look", host_mounts=False, setup=setup)
    try:
        run.fresh_state("probe")
        layout = kennel.layout(run.tree, "probe", repo)
        proc = await kennel.exec(
            ExecSpec(("sh", "-c", script), {"PATH": layout.path_env}, run.tree, layout)
        )
        lines = [line async for line in proc.lines()]
        assert await proc.wait() == 0, proc.stderr_tail()
        return lines
    finally:
        run.drop()


async def _nothing(*_args: object) -> None:
    return None
