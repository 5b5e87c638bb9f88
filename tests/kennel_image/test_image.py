"""The kennel image, run hardened the way Fetch runs it.

Needs a Docker engine (``bash .ci/kennel-image.sh`` makes one and the image). Skipped when
Docker is unavailable, except with CI=true, where that is a failure. The image is built
here when missing (minutes), a no-op when it exists.
"""

from __future__ import annotations

import asyncio
import gc
import os
import re
import shutil
import stat
import sys
import tempfile
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from kennel.build import build_image  # noqa: E402

pytestmark = pytest.mark.real

IN_CI = os.environ.get("CI", "").lower() == "true"
DOCKERFILE = REPO / "kennel" / "Dockerfile"


def _unavailable(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"CI=true but {reason}")
    pytest.skip(reason)


def _arg_default(name: str) -> str:
    m = re.search(rf"^ARG {name}=(\S+)$", DOCKERFILE.read_text(), re.M)
    assert m, f"no ARG {name} in the Dockerfile"
    return m.group(1)


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    try:
        import docker
    except ImportError:
        _unavailable("the docker Python SDK is not installed")
    reason = ""
    try:
        c = docker.from_env()
        c.ping()
    except Exception as exc:
        reason = f"no Docker engine ({exc.__class__.__name__}: {exc})"
    if reason:
        # The SDK leaves the failed connection's socket for the GC; collect it here, quietly,
        # rather than as an "unraisable" ResourceWarning (an error here) in a later test.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()
        _unavailable(reason)
    yield c
    c.close()


@pytest.fixture(scope="module")
def image(client: Any) -> str:
    return build_image(quiet=True)


@pytest.fixture(scope="module")
def dirs() -> Iterator[dict[str, Path]]:
    # Short paths: a unix socket path must stay under 108 bytes.
    root = Path(tempfile.mkdtemp(prefix="kennel-t-"))
    out = {"workspace": root / "ws", "relay": root / "relay"}
    out["workspace"].mkdir()
    out["relay"].mkdir()
    os.chmod(out["workspace"], 0o777)  # the container writes as uid 1000
    os.chmod(out["relay"], 0o755)  # uid 1000 must reach the socket inside
    yield out
    shutil.rmtree(root, ignore_errors=True)


def hardened(image: str, dirs: dict[str, Path], **extra: Any) -> dict[str, Any]:
    """containers.run() keywords for the kennel as Fetch runs it."""
    kw: dict[str, Any] = {
        "image": image,
        "network_mode": "none",
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "read_only": True,
        "tmpfs": {"/tmp": "rw,nosuid,nodev,size=512m"},
        "pids_limit": 256,
        "mem_limit": "2g",
        "nano_cpus": 2_000_000_000,
        "user": "1000:1000",
        "volumes": {
            str(dirs["workspace"]): {"bind": "/workspace", "mode": "rw"},
            str(dirs["relay"]): {"bind": "/relay", "mode": "rw"},
        },
        "working_dir": "/workspace",
    }
    kw.update(extra)
    return kw


@pytest.fixture(scope="module")
def box(client: Any, image: str, dirs: dict[str, Path]) -> Iterator[Any]:
    """One warm hardened container; checks run in it with exec."""
    c = client.containers.run(
        command=["sleep", "infinity"], detach=True, remove=True, **hardened(image, dirs)
    )
    try:
        yield c
    finally:
        c.kill()


def sh(box: Any, script: str, **kw: Any) -> tuple[int, str, str]:
    res = box.exec_run(["bash", "-c", script], demux=True, **kw)
    out, err = res.output
    return res.exit_code, (out or b"").decode(), (err or b"").decode()


def test_container_is_hardened(client: Any, box: Any) -> None:
    attrs = client.api.inspect_container(box.id)
    host = attrs["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["PidsLimit"] == 256
    assert host["Memory"] == 2 * 1024**3
    rc, out, err = sh(
        box, "id -u; id -g; grep -E '^(CapEff|NoNewPrivs):' /proc/self/status; ls /sys/class/net"
    )
    assert rc == 0, err
    lines = out.split()
    assert lines[:2] == ["1000", "1000"]
    assert "CapEff:" in lines and lines[lines.index("CapEff:") + 1] == "0000000000000000"
    assert lines[lines.index("NoNewPrivs:") + 1] == "1"
    assert lines[lines.index("NoNewPrivs:") + 2 :] == ["lo"]


@pytest.mark.parametrize(
    ("cli", "expected"),
    [
        ("claude", f"{_arg_default('CLAUDE_CODE_VERSION')} (Claude Code)"),
        ("gemini", _arg_default("GEMINI_CLI_VERSION")),
        ("codex", f"codex-cli {_arg_default('CODEX_VERSION')}"),
        ("copilot", f"GitHub Copilot CLI {_arg_default('COPILOT_VERSION')}"),
    ],
)
def test_cli_prints_version(box: Any, cli: str, expected: str) -> None:
    rc, out, err = sh(box, f"{cli} --version </dev/null")
    assert rc == 0, f"{cli}: rc {rc}\n{out}\n{err}"
    assert expected in out


def test_copilot_uses_the_prebuilt_package(box: Any) -> None:
    # Its ~235 MB first-run extraction was done at build time, into a read-only path.
    version = _arg_default("COPILOT_VERSION")
    rc, out, err = sh(
        box,
        "echo $COPILOT_PKG_CACHE_HOME; "
        f"test -f $COPILOT_PKG_CACHE_HOME/pkg/linux-x64/{version}/.extraction-complete && echo ok; "
        "copilot --version >/dev/null; ls -A $HOME/.cache 2>/dev/null | grep -c copilot || true",
    )
    assert rc == 0, err
    assert out.split() == ["/opt/kennel/copilot", "ok", "0"], out
    assert "extraction" not in err.lower()


def test_node_is_new_enough_and_on_login_shell_path(box: Any) -> None:
    rc, out, err = sh(box, "exec bash -lc 'node --version; command -v claude gemini codex copilot'")
    assert rc == 0, err
    lines = out.split()
    major = int(lines[0].lstrip("v").split(".")[0])
    assert major >= 20
    assert len(lines) == 5


def test_no_download_tools(box: Any) -> None:
    for tool in ("curl", "wget"):
        rc, out, _ = sh(box, f"command -v {tool}")
        assert rc != 0 and not out.strip(), f"{tool} is in the image: {out}"


def test_node_cannot_reach_the_internet(box: Any) -> None:
    script = textwrap.dedent(
        """
        const net = require('net');
        const s = net.connect({ host: '1.1.1.1', port: 443, timeout: 3000 });
        s.on('connect', () => { console.log('CONNECTED'); process.exit(0); });
        s.on('timeout', () => { console.log('TIMEOUT'); process.exit(3); });
        s.on('error', (e) => { console.log('ERROR ' + e.code); process.exit(2); });
        """
    )
    res = box.exec_run(["node", "-e", script], demux=True)
    out = (res.output[0] or b"").decode()
    assert res.exit_code != 0
    assert "CONNECTED" not in out
    res = box.exec_run(
        [
            "node",
            "-e",
            "require('dns').lookup('example.com', (e) => {"
            " console.log(e ? 'ERR ' + e.code : 'RESOLVED'); process.exit(e ? 2 : 0); })",
        ],
        demux=True,
    )
    assert res.exit_code != 0, res.output


def test_root_is_read_only_and_workspace_writable(box: Any, dirs: dict[str, Path]) -> None:
    for path in ("/probe", "/etc/probe", "/opt/kennel/probe", "/usr/bin/probe"):
        rc, _, err = sh(box, f"echo x > {path}")
        assert rc != 0, f"could write {path}"
        assert "Read-only file system" in err or "Permission denied" in err, err
    rc, _, err = sh(box, "echo hello > /workspace/out.txt && echo tmp > /tmp/t.txt")
    assert rc == 0, err
    written = dirs["workspace"] / "out.txt"
    assert written.read_text() == "hello\n"
    assert written.stat().st_uid == 1000


async def test_forwarder_relays_to_a_host_unix_socket(box: Any, dirs: dict[str, Path]) -> None:
    from aiohttp import web

    seen: list[tuple[str, str, bytes]] = []

    async def handle(request: web.Request) -> web.Response:
        body = await request.read()
        seen.append((request.method, request.path_qs, body))
        return web.json_response({"ok": True, "path": request.path_qs, "len": len(body)})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    sock = dirs["relay"] / "relay.sock"
    site = web.UnixSite(runner, str(sock))
    await site.start()
    os.chmod(sock, 0o666)
    assert stat.S_ISSOCK(sock.stat().st_mode)
    script = textwrap.dedent(
        """
        set -u
        node /opt/kennel/forwarder.js --listen 127.0.0.1:4100 --socket /relay/relay.sock \
             --listen 127.0.0.1:4101 --socket /relay/relay.sock >/tmp/fw.out 2>/tmp/fw.err &
        fw=$!
        for i in $(seq 100); do grep -qx ready /tmp/fw.out && break; sleep 0.05; done
        echo "stdout=$(cat /tmp/fw.out)"
        node -e '
          const http = require("http");
          const body = "x".repeat(100000);
          const req = http.request({ host: "127.0.0.1", port: 4101, method: "POST",
              path: "/v1/messages?beta=true", headers: { "content-type": "text/plain" } },
            (res) => { let d = ""; res.on("data", (c) => d += c); res.on("end", () =>
                         console.log("status=" + res.statusCode + " body=" + d)); });
          req.on("error", (e) => { console.log("error=" + e.code); process.exit(1); });
          req.end(body);'
        kill -TERM $fw
        wait $fw
        echo "fw_exit=$?"
        """
    )
    try:
        rc, out, err = await asyncio.wait_for(asyncio.to_thread(sh, box, script), 60)
    finally:
        await runner.cleanup()
    assert rc == 0, f"{out}\n{err}"
    assert "stdout=ready" in out
    assert 'status=200 body={"ok": true, "path": "/v1/messages?beta=true", "len": 100000}' in out
    assert "fw_exit=0" in out
    assert seen == [("POST", "/v1/messages?beta=true", b"x" * 100000)]


def test_one_shot_run_with_the_sdk(client: Any, image: str, dirs: dict[str, Path]) -> None:
    # The plain `containers.run` path (no warm container): exit code and output.
    out = client.containers.run(
        command=["bash", "-c", "claude --version && touch /workspace/one-shot"],
        remove=True,
        stdout=True,
        stderr=True,
        **hardened(image, dirs),
    )
    assert b"(Claude Code)" in out
    assert (dirs["workspace"] / "one-shot").exists()


def test_toolchains_run_offline_under_the_hardening(box: Any) -> None:
    """Python, a C/C++ toolchain and corepack's pnpm and yarn (1.x by default, 4.x when a
    project pins it) all run with no network, a read-only root and a non-root user:
    corepack finds them in its read-only cache and never writes or downloads."""
    script = textwrap.dedent(
        """\
        set -e
        d=$(mktemp -d -p /workspace); cd "$d"  # (/tmp is a noexec tmpfs)
        python3 -m venv v && v/bin/python -c 'print("venv ok")'
        printf 'int main(){return 0;}' > a.cc && g++ a.cc -o a && ./a && echo 'g++ ok'
        echo "pnpm $(pnpm --version)"; echo "yarn $(yarn --version)"
        echo '{"name":"x","packageManager":"yarn@ARG_BERRY"}' > package.json
        echo "pinned yarn $(yarn --version)"
        echo "corepack $(corepack --version)"
        """
    ).replace("ARG_BERRY", _arg_default("YARN_BERRY_VERSION"))
    result = box.exec_run(["bash", "-c", script])
    out = result.output.decode()
    assert result.exit_code == 0, out
    assert "venv ok" in out and "g++ ok" in out
    assert f"pnpm {_arg_default('PNPM_VERSION')}" in out
    assert f"yarn {_arg_default('YARN_VERSION')}" in out
    assert f"pinned yarn {_arg_default('YARN_BERRY_VERSION')}" in out
    assert f"corepack {_arg_default('COREPACK_VERSION')}" in out
