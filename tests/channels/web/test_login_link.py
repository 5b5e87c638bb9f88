"""The login link the real ``fetch serve`` prints at start, through real processes and
real HTTP on 127.0.0.1: it names the address a browser can open (the port the listener
really bound; ``http.public_url`` when set, as Compose sets it, never 0.0.0.0), it logs a
browser in once and then opens nothing, ``fetch login`` prints a new one the running
Fetch accepts, and a session outlives a restart (kept in the home, 0600) until logout."""

from __future__ import annotations

import http.cookiejar
import re
import stat
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pexpect

from channels.http.auth import TOKEN_FILE
from channels.http.sessions import SESSIONS_FILE
from tests.cli.test_fetch_command import STARTUP, _env, _fetch_executable

LINK = re.compile(r"🔑 web \(dashboard, chat\): (http://([\d.]+):(\d+)/login\?token=(\S+))")


@contextmanager
def _serve(home: Path, cwd: Path, **env: str) -> Iterator[tuple[str, int]]:
    """A running ``fetch serve``: the link it printed and the port it listens on."""
    child = pexpect.spawn(
        _fetch_executable(),
        ["serve"],
        env=_env(home, **env),  # FETCH__HTTP__PORT=0
        cwd=str(cwd),
        encoding="utf-8",
        timeout=STARTUP,
    )
    try:
        child.expect_exact("Fetch is ready", timeout=STARTUP)
        child.expect(LINK, timeout=10)
        match = child.match
        assert isinstance(match, re.Match)
        listening = re.search(r"http http://[\d.]+:(\d+)", str(child.before))
        assert listening, child.before
        port = int(listening.group(1))
        assert port != 0
        yield match.group(1), port
        child.sendintr()
        child.expect(pexpect.EOF, timeout=15)
    finally:
        child.close(force=True)


def _browser() -> tuple[urllib.request.OpenerDirector, http.cookiejar.CookieJar]:
    jar = http.cookiejar.CookieJar()
    return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar)), jar


def _status(opener: urllib.request.OpenerDirector, url: str) -> int:
    try:
        with opener.open(url, timeout=10) as page:
            return int(page.status)
    except urllib.error.HTTPError as err:
        err.close()
        return err.code


def _log_in(opener: urllib.request.OpenerDirector, link: str, port: int) -> None:
    chat = f"http://127.0.0.1:{port}/chat"
    with opener.open(link + "&next=/chat", timeout=10) as page:  # follows the redirect
        assert page.status == 200 and page.url == chat  # the ticket left the address
        assert "Chat with Fetch" in page.read().decode()


def test_the_printed_link_logs_in_once_and_fetch_login_makes_another(tmp_path: Path) -> None:
    home = tmp_path.resolve() / "home"
    browser, jar = _browser()
    with _serve(home, tmp_path) as (link, first):
        port = first
        assert link.startswith(f"http://127.0.0.1:{port}/login?token=")
        assert _status(browser, f"http://127.0.0.1:{port}/chat") == 401
        _log_in(browser, link, port)
        token = (home / TOKEN_FILE).read_text().strip()
        assert token not in link  # the link holds a one-time ticket, not the key
        stranger, _ = _browser()
        assert _status(stranger, link) == 401  # the link from the history: spent
        assert _status(stranger, f"http://127.0.0.1:{port}/chat") == 401
        # A new link from the command line, for the Fetch that is running.
        printed = subprocess.run(
            [_fetch_executable(), "login"],
            env=_env(home, FETCH__HTTP__PORT=str(port)),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert printed.returncode == 0, printed.stderr
        fresh = printed.stdout.strip()
        assert fresh.startswith(f"http://127.0.0.1:{port}/login?token=") and fresh != link
        _log_in(stranger, fresh, port)
    for path in (home / TOKEN_FILE, home / SESSIONS_FILE):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # Restarted (another port): the browser's session still holds, the old links do not.
    with _serve(home, tmp_path) as (_link, port):
        assert [c.name for c in jar] == ["fetch_session"]
        assert _status(browser, f"http://127.0.0.1:{port}/chat") == 200
        spent = fresh.replace(f":{first}/", f":{port}/")
        assert _status(_browser()[0], spent) == 401


def test_behind_a_published_port_the_link_names_the_public_address(tmp_path: Path) -> None:
    """As Compose runs it: listening on every interface, reached at a published address."""
    home = tmp_path.resolve() / "home"
    public = "http://127.0.0.1:18787"
    with _serve(home, tmp_path, FETCH__HTTP__HOST="0.0.0.0") as (link, port):
        assert link.startswith(f"http://127.0.0.1:{port}/login?token=")  # never 0.0.0.0
    with _serve(home, tmp_path, FETCH__HTTP__HOST="0.0.0.0", FETCH__HTTP__PUBLIC_URL=public) as (
        link,
        port,
    ):
        assert link.startswith(public + "/login?token=")
        browser, _ = _browser()
        _log_in(browser, link.replace(public, f"http://127.0.0.1:{port}"), port)
