"""The login link the real ``fetch serve`` prints at start: it names the address the
listener really bound (port 0 here: one the kernel picked), it logs a browser in, and
the same link works after a restart (the token is kept in the home, 0600)."""

from __future__ import annotations

import http.cookiejar
import re
import stat
import urllib.error
import urllib.request
from pathlib import Path

import pexpect

from channels.http.auth import TOKEN_FILE
from tests.cli.test_fetch_command import STARTUP, _env, _fetch_executable

LINK = re.compile(r"🔑 web \(dashboard, chat\): (http://127\.0\.0\.1:(\d+)/login\?token=(\S+))")


def _serve_and_read_link(home: Path, cwd: Path) -> str:
    """Start ``fetch serve``, log in with the link it prints, stop it: the token."""
    child = pexpect.spawn(
        _fetch_executable(),
        ["serve"],
        env=_env(home),  # FETCH__HTTP__PORT=0
        cwd=str(cwd),
        encoding="utf-8",
        timeout=STARTUP,
    )
    try:
        child.expect_exact("Fetch is ready", timeout=STARTUP)
        child.expect(LINK, timeout=10)
        match = child.match
        assert isinstance(match, re.Match)
        url, port, token = match.group(1), int(match.group(2)), str(match.group(3))
        assert port != 0
        _log_in_with(url, port)
        child.sendintr()
        child.expect(pexpect.EOF, timeout=15)
        return token
    finally:
        child.close(force=True)


def _log_in_with(url: str, port: int) -> None:
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    chat = f"http://127.0.0.1:{port}/chat"
    try:
        opener.open(chat, timeout=10)
        raise AssertionError("the chat answered without a login")
    except urllib.error.HTTPError as err:
        assert err.code == 401
    with opener.open(url + "&next=/chat", timeout=10) as page:  # follows the redirect
        assert page.status == 200 and page.url == chat
        assert "Chat with Fetch" in page.read().decode()


def test_fetch_serve_prints_a_working_login_link_that_survives_a_restart(
    tmp_path: Path,
) -> None:
    home = tmp_path.resolve() / "home"
    token = _serve_and_read_link(home, tmp_path)
    path = home / TOKEN_FILE
    assert path.read_text().strip() == token
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert _serve_and_read_link(home, tmp_path) == token  # the same link after a restart
