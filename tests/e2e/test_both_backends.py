"""Docker and bubblewrap behave the same on every path a user takes (issue 21, 1): each
journey of tests/e2e/journeys.py (task, "no", retry, /undo, retry; a CLI question and its
answer; /pause, /resume, /stop; a restart in each state) on both backends, as root (this
process) and as a non-root user (a child Fetch under another uid). Under CI=true a missing
backend fails the test, never skips it."""

from __future__ import annotations

import asyncio
import grp
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import git
from tests.docker.conftest import docker_client as docker_client  # the Docker fixtures
from tests.docker.conftest import kennel_image as kennel_image
from tests.e2e.journeys import JOURNEYS, starter
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.require import missing, require_binary

ROOT = Path(__file__).resolve().parents[2]
NON_ROOT = 4270  # no account of the machine's: a user Fetch would run as
SOURCE = Path("/root/fetch-source")  # where the child sees this checkout (below)


@pytest.fixture(params=["bwrap", "docker"])
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "docker":
        request.getfixturevalue("kennel_image")  # the engine and the image, or a loud failure
    else:
        require_binary("bwrap")
        require_binary("claude")  # bubblewrap runs the host's CLI
    return str(request.param)


@pytest.mark.parametrize("journey", list(JOURNEYS))
async def test_journey_as_root(backend: str, journey: str, workspace: Path, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        missing("the root journeys need Fetch as root", ci_must="run as root")
    async with ScriptedModelServer() as model:
        await JOURNEYS[journey](starter(tmp_path / "home", workspace, backend, model), model)
    assert git(workspace / "demo", "status", "--porcelain") == ""


def _as_non_root(argv: list[str], home: Path) -> list[str]:
    """``argv`` as uid NON_ROOT (with the engine socket's group), in a mount namespace of
    its own where /root is a 0755 tmpfs showing only this Python's install: the pyenv
    interpreter lives under /root (0700), which another uid cannot otherwise reach; this
    checkout is shown at ``SOURCE`` there, and the command starts in it."""
    prefix = Path(sys.prefix).resolve()
    groups = [str(grp.getgrnam("docker").gr_gid)] if _has_group("docker") else []
    keep = home / "python"
    script = (
        "set -e; "
        f"mkdir -p {keep}; mount --bind {prefix} {keep}; "
        "mount -t tmpfs -o mode=0755 tmpfs /root; "
        f"mkdir -p {prefix}; mount --bind {keep} {prefix}; "
        # The checkout too: a clone in a 0700 folder (mktemp -d) is out of its reach.
        f"mkdir -p {SOURCE}; mount --bind {ROOT} {SOURCE}; cd {SOURCE}; "
        f"exec setpriv --reuid {NON_ROOT} --regid {NON_ROOT} "
        f"{'--groups ' + ','.join(groups) if groups else '--clear-groups'} "
        '--inh-caps=-all -- "$@"'
    )
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", *argv]


def _has_group(name: str) -> bool:
    try:
        grp.getgrnam(name)
    except KeyError:
        return False
    return True


async def test_journeys_as_a_non_root_user(backend: str, tmp_path: Path) -> None:
    """The same journeys by a Fetch that is not root: its runs are copies (no overlay
    mounts), its kennel uid its own (bubblewrap) or the image's (Docker)."""
    if os.geteuid() != 0:
        missing("starting a Fetch under another uid needs root", ci_must="run as root")
    for tool in ("unshare", "setpriv"):
        require_binary(tool)
    # Not under pytest's tmp folder: that is root's own (0700), out of the child's reach.
    home = Path(tempfile.mkdtemp(prefix="fetch-nonroot-"))
    os.chown(home, NON_ROOT, NON_ROOT)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TMPDIR": str(home),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": str(SOURCE),
        **({"CI": os.environ["CI"]} if "CI" in os.environ else {}),
    }
    argv = [sys.executable, "-m", "tests.e2e.journeys", "--backend", backend]
    try:
        done = await asyncio.to_thread(
            subprocess.run,
            _as_non_root(argv, tmp_path),
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=1500,
            check=False,
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-6000:]
    for name in JOURNEYS:
        assert f"ok {name} (uid {NON_ROOT})" in done.stdout, out[-6000:]
