"""Setup, then offline work (issue 21), through the real kennels and the real pip and npm.

A repository commits ``.fetch/setup.sh``. Before its first task the script runs in the
kennel with the egress proxy as its only way out: it installs a wheel and an npm package
from a package index of the test's own on 127.0.0.1, and is refused another local port.
The card says "🧰 setup ran", the repository's tests then pass *because* the wheel is
there (real counts), and the agent and test phases reach neither port. A second task
reuses the layer (no request reaches the index); a changed lock file runs it again. On
bubblewrap and on Docker."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from aiohttp import web

from orchestrator.config import Settings
from tests.conftest import Driver, git, make_repo, start_driver
from tests.fakes.package_index import PackageIndex
from tests.fakes.require import missing

SETUP = """\
python3 -m venv --system-site-packages .venv
.venv/bin/python -m pip install -q --index-url {index}/simple/ --trusted-host 127.0.0.1 tinydep
npm install --silent --no-audit --no-fund --registry {index}/ tinynode@1.0.0
# The proxy refuses every other host and port: a second local server stays unreached.
.venv/bin/python - <<'PY'
import urllib.error, urllib.request
try:
    urllib.request.urlopen("{other}/", timeout=10)
    print("OTHER REACHED")
except urllib.error.HTTPError as err:
    print("other refused", err.code)
PY
"""

# The repository's tests: pass only with the wheel and the npm package installed, and
# only if nothing is reachable from the test run (no proxy, no index).
TESTS = """\
import json, os, socket, subprocess, urllib.request

import tinydep


def test_the_wheel_is_installed():
    assert tinydep.VALUE == 42


def test_the_npm_package_is_installed():
    out = subprocess.run(["node", "-e", "console.log(require('tinynode').value)"],
                         capture_output=True, text=True)
    assert out.stdout.strip() == "7", out


def test_offline():
    for port in ({port}, 4100):
        try:
            opener = urllib.request.build_opener(
                urllib.request.ProxyHandler({{"http": "http://127.0.0.1:4100"}}))
            opener.open("{index}/simple/", timeout=3)
        except Exception:
            pass
        else:
            raise AssertionError("the index was reachable from the test run")
        with socket.socket() as s:
            s.settimeout(3)
            assert s.connect_ex(("127.0.0.1", {port})) != 0
"""


async def _other() -> tuple[web.AppRunner, int, list[str]]:
    hits: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.Response(text="secret")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, runner.addresses[0][1], hits


def _docker_ready() -> None:
    try:
        import docker

        from kennel.build import image_tag

        client = docker.from_env()
        client.images.get(image_tag())
    except Exception as err:  # no engine, no image
        missing(f"the Docker kennel is not available: {err}")


@pytest.fixture(params=["bwrap", "docker"])
async def setup_repo(
    request: pytest.FixtureRequest,
    make_settings: Callable[..., Settings],
    workspace: Path,
    tmp_path: Path,
) -> AsyncIterator[tuple[Driver, PackageIndex, list[str], Path]]:
    if request.param == "docker":
        _docker_ready()
    if os.geteuid() != 0 and request.param == "bwrap":
        pass  # bwrap runs as Fetch's uid: a copy layer, the same test
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
        app, driver = await start_driver(
            make_settings(FETCH_KENNEL=request.param, FETCH_CONFIG=str(config))
        )
        try:
            yield driver, index, other_hits, repo
        finally:
            await app.__aexit__(None, None, None)
            await other.cleanup()


async def test_setup_runs_once_then_the_work_is_offline(
    setup_repo: tuple[Driver, PackageIndex, list[str], Path],
) -> None:
    driver, index, other_hits, repo = setup_repo
    await driver.push("fix the typo in calc.py of deps")
    await driver.expect("🧰 Running .fetch/setup.sh first", 60)
    card = await driver.expect("Apply?", 600)
    assert "🧰 setup ran (" in card, card
    assert "🧪 3/3 passing (pytest, in the kennel)" in card, card
    # Setup's additions are not part of the change: only the harness's edit is.
    assert "calc.py +1 −1" in card and ".venv" not in card and "node_modules" not in card
    assert f"/files/{'tinydep-1.0-py3-none-any.whl'}" in index.hits
    assert "/tinynode/-/tinynode-1.0.0.tgz" in index.hits
    assert other_hits == [], "the proxy let the setup reach a port not on its list"
    after_setup = len(index.hits)
    done = await driver.ask("yes", "Committed", 60)
    assert "🧪 3/3 passing" in done
    assert git(repo, "status", "--porcelain") == ""
    assert not (repo / ".venv").exists() and not (repo / "node_modules").exists()

    # A second task: the layer is reused, nothing reaches the index.
    (repo / "calc.py").write_text("def add(a, b):\n    # teh total\n    return a + b\n")
    git(repo, "commit", "-qam", "typo again")
    card = await driver.ask("fix the typo in calc.py of deps", "Apply?", 300)
    assert "🧰" not in card and "🧪 3/3 passing" in card, card
    assert len(index.hits) == after_setup
    await driver.ask("no", "Discarded")

    # A lock file changes: setup runs again, once.
    (repo / "requirements.txt").write_text("tinydep==1.0\n")
    git(repo, "commit", "-qam", "pin")
    card = await driver.ask("fix the typo in calc.py of deps", "Apply?", 600)
    assert "🧰 setup ran (" in card and "🧪 3/3 passing" in card, card
    assert len(index.hits) > after_setup
    await driver.ask("no", "Discarded")
    assert other_hits == []


async def test_a_failing_setup_is_one_line_and_the_task_goes_on(
    make_settings: Callable[..., Settings], workspace: Path
) -> None:
    repo = make_repo(
        workspace,
        "broken",
        {
            "notes.md": "teh notes\n",
            ".fetch/setup.sh": "echo installing\necho 'no such package: nope' >&2\nexit 3\n",
        },
    )
    app, driver = await start_driver(make_settings())
    try:
        card = await driver.ask("fix the typo in notes.md of broken", "Apply?", 120)
        assert "🧰 setup failed (exit code 3" in card, card
        assert "no such package: nope" in card
        await driver.ask("no", "Discarded")
        # Not kept: the next task tries again (a registry may have been down).
        await driver.push("fix the typo in notes.md of broken")
        await driver.expect("🧰 Running .fetch/setup.sh first", 60)
        await driver.expect("Apply?", 120)
    finally:
        await app.__aexit__(None, None, None)
    assert git(repo, "status", "--porcelain") == ""


async def test_without_a_script_one_is_proposed_once_and_never_run(
    make_settings: Callable[..., Settings], workspace: Path
) -> None:
    make_repo(
        workspace,
        "plain",
        {
            "notes.md": "teh notes\n",
            "requirements.txt": "tinydep\n",
            "package.json": '{"name": "x", "version": "1.0.0"}\n',
            "package-lock.json": "{}\n",
        },
    )
    app, driver = await start_driver(make_settings())
    try:
        await driver.push("fix the typo in notes.md of plain")
        tip = await driver.expect("💡 plain has no .fetch/setup.sh", 60)
        assert ".venv/bin/python -m pip install -r requirements.txt" in tip
        assert "npm ci" in tip
        await driver.expect("Apply?", 120)
        await driver.ask("no", "Discarded")
        await driver.push("fix the typo in notes.md of plain")
        card = await driver.expect("Apply?", 120)
        said = " ".join(driver.seen[-3:])
        assert "💡" not in said and "🧰" not in card
        await driver.ask("no", "Discarded")
    finally:
        await app.__aexit__(None, None, None)
    await asyncio.sleep(0)
