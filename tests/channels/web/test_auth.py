"""The web token, the login link, the session cookie, CSRF and the login limiter, through a
real HttpServer on 127.0.0.1 and a real HTTP client (aiohttp's, following redirects as a
browser does): a link's ticket is exchanged for a cookie and leaves the address, works
once and for a day, sessions end when idle, when old and at logout, on the server."""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import pytest
from aiohttp import web
from yarl import URL

from channels.http import HttpServer
from channels.http.auth import (
    COOKIE,
    CSRF_HEADER,
    LINK_SPENT,
    LOGIN_HINT,
    TOKEN_FILE,
    LoginLimiter,
    WebAuth,
    load_token,
)
from channels.http.sessions import SESSIONS_FILE, WebSessions
from channels.http_settings import HttpSettings

SECRET_DATA = "the-owner's-secret-data"


@dataclass
class Site:
    auth: WebAuth
    base: str
    token: str
    posted: list[str]
    home: Path
    wall: Clock

    def login(self, token: str | None = None, **extra: str) -> str:
        query = "&".join(f"{k}={v}" for k, v in extra.items())
        url = self.auth.login_url(self.base)
        if token is not None:
            url = f"{self.base}/login?token={token}"
        return url + ("&" + query if query else "")


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def site(tmp_path: Path, clock: Clock) -> AsyncIterator[Site]:
    home = tmp_path / "home"
    token, wall = load_token(home), Clock(1_800_000_000.0)
    sessions = WebSessions(token, home / SESSIONS_FILE, clock=wall)
    auth = WebAuth(token, limiter=LoginLimiter(per_window=5, clock=clock), sessions=sessions)
    http = HttpServer(HttpSettings(port=0))
    auth.install(http)
    posted: list[str] = []

    async def page(_request: web.Request) -> web.StreamResponse:
        return web.Response(text=SECRET_DATA)

    async def action(request: web.Request) -> web.StreamResponse:
        posted.append(request.method)
        return web.Response(text="done")

    http.add_route("GET", "/", auth.require_auth(page))
    http.add_route("POST", "/act", auth.require_auth(action))
    await http.start()
    try:
        token = (home / TOKEN_FILE).read_text().strip()
        yield Site(auth, http.url, token, posted, home, wall)
    finally:
        await http.stop()


def _client() -> aiohttp.ClientSession:
    # unsafe=True: keep cookies for 127.0.0.1 (an address, not a host name), as browsers do.
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


def test_the_token_file_is_0600_and_reused(tmp_path: Path) -> None:
    first = load_token(tmp_path)
    path = tmp_path / TOKEN_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(first) >= 40  # token_urlsafe(32): 43 characters
    assert load_token(tmp_path) == first  # the same login link after a restart
    os.chmod(path, 0o644)
    assert load_token(tmp_path) == first
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # loosened by someone: tightened
    path.write_text("short\n")
    replaced = load_token(tmp_path)
    assert replaced != first and len(replaced) >= 40
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_without_a_cookie_a_page_says_how_to_log_in_and_shows_no_data(site: Site) -> None:
    async with _client() as client, client.get(site.base + "/") as r:
        body = await r.text()
    assert r.status == 401
    assert LOGIN_HINT in body and SECRET_DATA not in body
    async with (
        _client() as client,
        client.get(site.base + "/", headers={"Accept": "application/json"}) as r,
    ):
        assert r.status == 401 and (await r.json()) == {"error": LOGIN_HINT}


async def test_the_login_link_sets_a_strict_httponly_cookie_that_is_not_the_token(
    site: Site,
) -> None:
    async with _client() as client:
        async with client.get(site.login(), allow_redirects=False) as r:
            assert r.status == 303 and r.headers["Location"] == "/"
            cookie = r.headers["Set-Cookie"]
            assert r.headers["Referrer-Policy"] == "no-referrer"
        flags = {part.strip().split("=")[0].lower() for part in cookie.split(";")}
        assert {"httponly", "path", "samesite"} <= flags, cookie
        assert "SameSite=Strict" in cookie and "Path=/" in cookie
        assert site.token not in cookie  # a random session id, never the token itself
        async with client.get(site.base + "/") as r:
            assert r.status == 200 and await r.text() == SECRET_DATA


async def test_a_wrong_token_is_refused_and_sets_no_cookie(site: Site) -> None:
    wrong = site.token[:-1] + ("A" if site.token[-1] != "A" else "B")
    async with _client() as client:
        for token in (wrong, "", "x" * 43):
            async with client.get(site.login(token), allow_redirects=False) as r:
                assert r.status == 401 and "Set-Cookie" not in r.headers
        async with client.get(site.base + "/") as r:
            assert r.status == 401
        # A forged cookie (the token itself, say) is no session either.
        client.cookie_jar.update_cookies({COOKIE: site.token}, response_url=URL(site.base))
        async with client.get(site.base + "/") as r:
            assert r.status == 401


async def test_next_leads_only_to_a_path_on_this_server(site: Site) -> None:
    async with _client() as client:
        for target, expected in (("/chat", "/chat"), ("//evil.example/", "/"), ("http://x", "/")):
            url = site.login(next=target)
            async with client.get(url, allow_redirects=False) as r:
                assert r.headers["Location"] == expected, target


async def test_bearer_token_works_for_scripts_without_csrf(site: Site) -> None:
    headers = {"Authorization": f"Bearer {site.token}"}
    async with _client() as client:
        async with client.get(site.base + "/", headers=headers) as r:
            assert r.status == 200 and await r.text() == SECRET_DATA
        async with client.post(site.base + "/act", headers=headers) as r:
            assert r.status == 200
        bad = {"Authorization": f"Bearer {site.token}x"}
        async with client.get(site.base + "/", headers=bad) as r:
            assert r.status == 401
    assert site.posted == ["POST"]


async def test_a_post_without_the_csrf_token_is_refused(site: Site) -> None:
    async with _client() as client:
        async with client.get(site.login()) as r:
            assert r.status == 200
        async with client.post(site.base + "/act") as r:
            assert r.status == 403
        async with client.post(site.base + "/act", data={"csrf": "0" * 64}) as r:
            assert r.status == 403
        async with client.post(site.base + "/act", headers={CSRF_HEADER: "nope"}) as r:
            assert r.status == 403
        assert site.posted == []  # the handler never ran
        good = site.auth.csrf_token()
        async with client.post(site.base + "/act", headers={CSRF_HEADER: good}) as r:
            assert r.status == 200
        async with client.post(site.base + "/act", data={"csrf": good}) as r:
            assert r.status == 200
    assert site.posted == ["POST", "POST"]


async def test_failed_logins_are_limited_per_client(site: Site, clock: Clock) -> None:
    async with _client() as client:
        for _ in range(5):
            async with client.get(site.login("w" * 43), allow_redirects=False) as r:
                assert r.status == 401
        # Locked for a minute: even the right token waits (no guessing at full speed).
        async with client.get(site.login(), allow_redirects=False) as r:
            assert r.status == 429
        clock.now += 61
        async with client.get(site.login(), allow_redirects=False) as r:
            assert r.status == 303


def test_the_limiter_forgets_the_oldest_clients_past_its_bound() -> None:
    limiter = LoginLimiter(per_window=1, max_clients=3, clock=lambda: 0.0)
    for client in ("a", "b", "c", "d"):
        limiter.failed(client)
    assert not limiter.blocked("a")  # forgotten: the bound holds
    assert all(limiter.blocked(c) for c in ("b", "c", "d"))


def test_a_login_link_never_carries_the_token_and_each_is_new() -> None:
    token = "t" * 40 + "-_~"
    auth = WebAuth(token)
    first, second = (auth.login_url("http://127.0.0.1:1234/") for _ in range(2))
    assert first != second
    for url in (first, second):
        assert url.startswith("http://127.0.0.1:1234/login?token=")
        assert urlsplit(url).path == "/login" and token not in url


def _cookie(client: aiohttp.ClientSession) -> str:
    return next(c.value for c in client.cookie_jar if c.key == COOKIE)


async def test_the_link_is_exchanged_for_a_cookie_and_leaves_the_address(site: Site) -> None:
    link = site.login(next="/")
    async with _client() as client, client.get(link) as r:  # redirects followed
        assert r.status == 200 and await r.text() == SECRET_DATA
        assert [h.status for h in r.history] == [303]
        assert str(r.url) == site.base + "/"  # where the browser now is: no ticket
        assert "token" not in str(r.url) and r.history[0].headers["Cache-Control"] == "no-store"


async def test_a_login_link_works_once_even_across_a_restart(site: Site) -> None:
    link = site.login()
    async with _client() as client, client.get(link) as r:
        assert r.status == 200
    for auth in (site.auth, WebAuth.from_home(site.home)):  # the same home, restarted
        http = HttpServer(HttpSettings(port=0))
        auth.install(http)
        await http.start()
        try:
            again = link.replace(site.base, http.url)
            async with _client() as client, client.get(again, allow_redirects=False) as r:
                assert r.status == 401 and "Set-Cookie" not in r.headers
                assert LINK_SPENT in await r.text()
        finally:
            await http.stop()


async def test_a_login_link_is_good_for_a_day(site: Site) -> None:
    link = site.login()
    site.wall.now += 24 * 3600 + 1
    async with _client() as client, client.get(link, allow_redirects=False) as r:
        assert r.status == 401 and "Set-Cookie" not in r.headers
    # A forged expiry is no ticket: the MAC covers it.
    nonce, stamp, mac = site.login().split("token=")[1].split(".")
    forged = f"{site.base}/login?token={nonce}.{int(stamp) + 10**6}.{mac}"
    async with _client() as client, client.get(forged, allow_redirects=False) as r:
        assert r.status == 401


async def test_logout_revokes_the_session_on_the_server(site: Site) -> None:
    async with _client() as client:
        async with client.get(site.login()) as r:
            assert r.status == 200
        stolen = _cookie(client)
        csrf = {CSRF_HEADER: site.auth.csrf_token()}
        async with client.post(site.base + "/logout", headers=csrf) as r:
            assert r.status == 200 and "Logged out" in await r.text()
            assert str(r.url) == site.base + "/logged-out"
        async with client.get(site.base + "/") as r:
            assert r.status == 401
    # A copy of the cookie taken before (another port's page, a disk): worth nothing now.
    async with _client() as other:
        other.cookie_jar.update_cookies({COOKIE: stolen}, response_url=URL(site.base))
        async with other.get(site.base + "/") as r:
            assert r.status == 401 and SECRET_DATA not in await r.text()
    assert len(site.auth.sessions) == 0


async def test_a_session_ends_a_day_after_its_last_use(site: Site) -> None:
    async with _client() as client:
        async with client.get(site.login()) as r:
            assert r.status == 200
        site.wall.now += 23 * 3600
        async with client.get(site.base + "/") as r:
            assert r.status == 200  # used: the day starts again
        site.wall.now += 23 * 3600
        async with client.get(site.base + "/") as r:
            assert r.status == 200
        site.wall.now += 24 * 3600
        async with client.get(site.base + "/") as r:
            assert r.status == 401


async def test_a_session_ends_after_a_week_however_often_it_is_used(site: Site) -> None:
    async with _client() as client:
        async with client.get(site.login(), allow_redirects=False) as r:
            assert r.status == 303
            assert f"Max-Age={7 * 24 * 3600}" in r.headers["Set-Cookie"]
        for _ in range(13):  # every 12 hours for six and a half days
            site.wall.now += 12 * 3600
            async with client.get(site.base + "/") as r:
                assert r.status == 200
        site.wall.now += 12 * 3600
        async with client.get(site.base + "/") as r:
            assert r.status == 401


async def test_sessions_survive_a_restart_and_a_new_token_ends_them(site: Site) -> None:
    async with _client() as client:
        async with client.get(site.login()) as r:
            assert r.status == 200
        cookie = _cookie(client)
    saved = site.home / SESSIONS_FILE
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert cookie not in saved.read_text()  # only its hash is kept
    for expected in (200, 401):
        if expected == 401:
            (site.home / TOKEN_FILE).unlink()  # the documented way to log everyone out
        auth = WebAuth.from_home(site.home)
        http = HttpServer(HttpSettings(port=0))

        async def page(_request: web.Request) -> web.StreamResponse:
            return web.Response(text=SECRET_DATA)

        http.add_route("GET", "/", auth.require_auth(page))
        await http.start()
        try:
            async with _client() as client:
                client.cookie_jar.update_cookies({COOKIE: cookie}, response_url=URL(http.url))
                async with client.get(http.url + "/") as r:
                    assert r.status == expected
        finally:
            await http.stop()


def test_an_unreadable_sessions_file_means_logging_in_again(tmp_path: Path) -> None:
    token = load_token(tmp_path)
    (tmp_path / SESSIONS_FILE).write_text('{"token": [1, 2')
    sessions = WebSessions(token, tmp_path / SESSIONS_FILE)
    assert len(sessions) == 0 and sessions.redeem(sessions.ticket())
