"""The first ten minutes of a new user, through the real ``fetch`` command: the version,
a quick --help, one Fetch per home, piped use, Ctrl-C under ``| tee``, a restart with a
diff still waiting, environment overrides, and start-up on a broken home (issue 12)."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pexpect
import pytest

from tests.cli.test_fetch_command import STARTUP, _env, _fetch_executable, running_fetch
from tests.fakes.require import missing

SQLITE_MAGIC = b"SQLite format 3\x00"
HEAVY = ("orchestrator.app", "aiosqlite", "openai", "neonize", "aiohttp")


def _fetch(
    env: dict[str, str], cwd: Path, *args: str, stdin: str = "", timeout: float = STARTUP
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_fetch_executable(), *args],
        input=stdin,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path.resolve() / "home"


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_answer_without_importing_the_app(
    tmp_path: Path, home: Path, flag: str
) -> None:
    env = _env(home, PYTHONPROFILEIMPORTTIME="1")  # every import, listed on stderr
    done = _fetch(env, tmp_path, flag)
    assert done.returncode == 0, done.stderr
    if flag == "--version":
        assert re.fullmatch(r"fetch \d+\.\d+\.\d+\S*\n", done.stdout), done.stdout
    else:
        assert "usage: fetch" in done.stdout and "--version" in done.stdout
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "orchestrator.cli" in imported  # the listing is real
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))
    assert not home.exists()  # answering touched nothing


def test_second_fetch_on_the_same_home_is_refused_with_the_first_pid(
    tmp_path: Path, home: Path
) -> None:
    with running_fetch(_env(home), tmp_path) as first:
        first.ready()
        second = _fetch(_env(home), tmp_path, "serve", timeout=30)
        assert second.returncode == 2
        assert f"Fetch is already running on this home (pid {first.child.pid})" in second.stderr, (
            second.stderr
        )
        assert "Traceback" not in second.stderr and second.stdout == ""
        first.type("/help")
        first.expect("/commands lists every command.")  # the first is unharmed
        first.quit_with_ctrl_c()
    # Once the first has stopped, the home is free again.
    again = _fetch(_env(home), tmp_path, stdin="/help\n")
    assert again.returncode == 0, again.stderr
    assert "I'm Fetch." in again.stdout


def test_piped_input_prints_each_reply_once_after_the_banner(tmp_path: Path, home: Path) -> None:
    done = _fetch(_env(home), tmp_path, stdin="/help\n/help\n")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.count("fetch> 🐕 I'm Fetch.") == 2, out  # two asked, two answered
    assert out.index("Fetch is ready") < out.index("I'm Fetch.")
    assert out.rstrip().endswith("fetch: stopped.")


def test_serve_piped_to_tee_stops_on_ctrl_c(tmp_path: Path, home: Path) -> None:
    log = tmp_path / "log"
    child = pexpect.spawn(
        "bash",
        ["-c", f"'{_fetch_executable()}' serve | tee '{log}'"],
        env=_env(home),
        cwd=str(tmp_path),
        encoding="utf-8",
        codec_errors="replace",
        timeout=STARTUP,
    )
    try:
        child.expect_exact("Fetch is ready", timeout=STARTUP)
        child.expect_exact("channels:", timeout=10)
        child.sendintr()  # ^C: SIGINT to the whole pipeline, tee included
        child.expect(pexpect.EOF, timeout=15)
    finally:
        child.close(force=True)
    assert "Traceback" not in (child.before or "")
    assert "Fetch is ready" in log.read_text()
    # The process is gone: the home's lock is free, a new Fetch starts.
    again = _fetch(_env(home), tmp_path, stdin="/help\n")
    assert again.returncode == 0, again.stderr


def test_a_waiting_diff_is_announced_after_a_restart(tmp_path: Path, home: Path) -> None:
    with running_fetch(_env(home), tmp_path) as fetch:
        fetch.ready()
        fetch.type("fix the typo in README.md of demo")
        fetch.expect("Apply? (yes/no)", 60)
        fetch.quit_with_ctrl_c()
    with running_fetch(_env(home), tmp_path) as fetch:
        said = fetch.expect("Apply? (yes/no)", STARTUP)  # said while starting up
        assert "A diff for demo still waits for your yes/no." in said
        assert "README.md +1" in said and "The quick" in said
        fetch.ready()
        fetch.type("yes")
        fetch.expect_re(r"Committed ([0-9a-f]{7,40}) to demo")
        fetch.quit_with_ctrl_c()


def test_network_isolation_off_from_the_environment_starts(tmp_path: Path, home: Path) -> None:
    env = _env(home, FETCH__KENNEL__NETWORK_ISOLATION="off")
    done = _fetch(env, tmp_path, stdin="/help\n")
    assert done.returncode == 0, done.stderr
    assert "I'm Fetch." in done.stdout


# --- start-up on a broken home: one line, exit 2, nothing replaced --------------------


def _refused(tmp_path: Path, home: Path, **extra: str) -> str:
    done = _fetch(_env(home, **extra), tmp_path, stdin="/help\n", timeout=60)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fetch: "), done.stderr
    assert "I'm Fetch." not in done.stdout
    return lines[0]


def _database(tmp_path: Path, home: Path) -> Path:
    """A real database, made by a real start."""
    made = _fetch(_env(home), tmp_path, stdin="/help\n")
    assert made.returncode == 0, made.stderr
    db = home / "fetch.db"
    assert db.read_bytes().startswith(SQLITE_MAGIC)
    return db


def test_an_empty_database_is_refused_not_recreated(tmp_path: Path, home: Path) -> None:
    home.mkdir()
    (home / "fetch.db").write_bytes(b"")
    line = _refused(tmp_path, home)
    assert "fetch.db is empty (0 bytes)" in line and "not starting" in line
    assert (home / "fetch.db").read_bytes() == b""


def test_a_database_that_is_not_sqlite_is_refused(tmp_path: Path, home: Path) -> None:
    home.mkdir()
    junk = os.urandom(8192)
    (home / "fetch.db").write_bytes(junk)
    line = _refused(tmp_path, home)
    assert "not a SQLite database" in line
    assert (home / "fetch.db").read_bytes() == junk


def test_a_corrupt_database_is_refused_and_kept(tmp_path: Path, home: Path) -> None:
    db = _database(tmp_path, home)
    for extra in ("-wal", "-shm"):
        db.with_name(db.name + extra).unlink(missing_ok=True)
    broken = bytearray(db.read_bytes())
    broken[100:] = b"\xff" * (len(broken) - 100)  # the header stays, every page is junk
    db.write_bytes(bytes(broken))
    line = _refused(tmp_path, home)
    assert "database" in line and "malformed" in line, line
    assert db.read_bytes() == bytes(broken)


def test_a_binary_config_file_is_one_clear_line(tmp_path: Path, home: Path) -> None:
    home.mkdir()
    (home / "config.yaml").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe" + os.urandom(64))
    line = _refused(tmp_path, home)
    assert "config.yaml" in line and "not a text file" in line


@contextmanager
def _tmpfs(where: Path, options: str) -> Iterator[Path]:
    """A tiny filesystem of our own (root only): a full or read-only disk, for real."""
    if os.geteuid() != 0:
        missing("mounting a tmpfs needs root")
    where.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


def test_an_unwritable_home_is_one_clear_line(tmp_path: Path, home: Path) -> None:
    with _tmpfs(home, "size=1m,ro"):
        line = _refused(tmp_path, home)
    assert f"cannot write to {home}" in line and "Read-only" in line


@pytest.mark.parametrize("filled", [20_000, 40_000, 60_000])
def test_a_full_disk_is_one_clear_line(tmp_path: Path, home: Path, filled: int) -> None:
    """Filled to different points, start-up fails in different places (the write probe,
    the database file, its WAL); each says the disk is full."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with _tmpfs(home, "size=64k"):
        with (home / "filler").open("wb", buffering=0) as f, suppress(OSError):
            f.write(b"\0" * filled)  # as much as fits
        line = _refused(tmp_path, home, FETCH_WORKSPACE=str(workspace))
        left = sorted(p.name for p in home.iterdir())
    assert "the disk is full" in line, line
    assert "fetch.db.corrupt" not in " ".join(left)


def test_ctrl_c_does_not_wait_for_the_background_import(tmp_path: Path, home: Path) -> None:
    """Memory imports its MCP server in the background; a stop right after start-up
    abandons it. A stand-in ``mcp`` package whose import takes a minute makes it sure."""
    slow = tmp_path / "slow-imports"
    (slow / "mcp" / "server").mkdir(parents=True)
    (slow / "mcp" / "__init__.py").write_text("")
    (slow / "mcp" / "server" / "__init__.py").write_text("")
    (slow / "mcp" / "server" / "mcpserver.py").write_text("import time\ntime.sleep(60)\n")
    with running_fetch(_env(home, PYTHONPATH=str(slow)), tmp_path) as fetch:
        fetch.ready()
        fetch.quit_with_ctrl_c()  # exits with 0 within 10 s, or fails


def test_healthz_answers_ok_without_a_secret_and_says_nothing_else(
    tmp_path: Path, home: Path
) -> None:
    import json
    import socket
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = _env(
        home,
        FETCH__WEBHOOK__ENABLED="true",
        FETCH_WEBHOOK_SECRET="s" * 32,
        FETCH__HTTP__PORT=str(port),
    )
    child = pexpect.spawn(
        _fetch_executable(),
        ["serve"],
        env=env,
        cwd=str(tmp_path),
        encoding="utf-8",
        timeout=STARTUP,
    )
    try:
        child.expect_exact("Fetch is ready", timeout=STARTUP)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as resp:
            assert resp.status == 200
            body = resp.read()
        assert json.loads(body) == {"ok": True}  # no version, channels or counts
        child.sendintr()
        child.expect(pexpect.EOF, timeout=15)
    finally:
        child.close(force=True)


def test_after_a_full_disk_is_freed_fetch_starts_with_a_whole_demo(
    tmp_path: Path, home: Path
) -> None:
    """The first start fails half-way through making the demo repository; once space is
    freed, the next start makes it whole (nothing half-made is taken for a repository)."""
    with _tmpfs(home, "size=1m"):
        with (home / "filler").open("wb", buffering=0) as f, suppress(OSError):
            f.write(b"\0" * (1024 * 1024 - 30_000))
        line = _refused(tmp_path, home)
        assert "the disk is full" in line, line
        (home / "filler").unlink()
        done = _fetch(_env(home), tmp_path, stdin="/status\n")
        assert done.returncode == 0, done.stderr
        assert "(demo)" in done.stdout
        log = subprocess.run(
            ["git", "-c", "safe.directory=*", "log", "--format=%s"],
            cwd=home / "workspace" / "demo",
            capture_output=True,
            text=True,
        )
        assert log.stdout.strip() == "demo: initial commit", log
