"""Who may use the web pages (dashboard, web chat): whoever holds the web token.

* The token lives in ``FETCH_HOME/web-token`` (mode 0600), made with
  ``secrets.token_urlsafe(32)`` on first start and reused after. Delete the file to change
  it (every browser is logged out). The token itself never goes into a link.
* A login link carries a one-time ticket (``channels/http/sessions.py``): the start banner
  and ``fetch login`` print a fresh one, good once within a day. ``GET /login?token=...``
  redeems it, starts a server-side session (a random id in a cookie: HttpOnly,
  SameSite=Strict, Path=/) and redirects to ``/`` (or a local ``next=`` path), so the
  ticket leaves the address bar at once, and what stays in the history opens nothing.
  Sessions end after a day unused or a week in all; ``POST /logout`` ends one on the
  server. Failed logins are limited per client address.
* ``GET /login`` with no ticket, and every 401 page, show a form with one field: paste
  the web token (``FETCH_HOME/web-token``) or a login link there. ``POST /login`` takes
  it (rate-limited like links; a POST from another site's page is refused by its
  ``Origin``), so a phone that never saw the start banner can still log in.
* Every page offers ``POST /logout`` (a CSRF-checked form).
* ``Authorization: Bearer <token>`` is accepted for scripts (no cookie, no CSRF: a
  browser never sends that header cross-site on its own).
* ``require_auth`` wraps an aiohttp handler: no valid cookie or bearer -> 401 page that
  says to open the login link Fetch printed at start, never data. On ``POST`` (and the
  other unsafe methods) a cookie session must also send its CSRF token: the
  ``X-CSRF-Token`` header or a ``csrf`` form field; pages embed ``csrf_token(request)``.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import logging
import os
import secrets
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

from aiohttp import web

from channels.http.server import Handler, HttpServer
from channels.http.sessions import SESSIONS_FILE, WebSessions

log = logging.getLogger(__name__)

TOKEN_FILE = "web-token"
COOKIE = "fetch_session"
CSRF_HEADER = "X-CSRF-Token"
CSRF_FIELD = "csrf"
LOGIN_PATH = "/login"
_MIN_TOKEN_CHARS = 32
_UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_NO_STORE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}

LOGGED_OUT_PATH = "/logged-out"

LOGIN_HINT = (
    "Not logged in: open the login link Fetch printed at start "
    "(each link works once; `fetch login` prints a new one)."
)
LINK_SPENT = "That login link is not valid, was used already or is over a day old. " + LOGIN_HINT
WRONG_TOKEN = "That is not the web token nor a valid login link. " + LOGIN_HINT
_FORM_CSP = "default-src 'none'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"


def load_token(home: Path) -> str:
    """The web token in ``home``, made on first use. A file someone loosened is put back
    to 0600; an unreadable or too short one is replaced (and said in the log)."""
    path = home / TOKEN_FILE
    try:
        token = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        token = ""
    except (OSError, UnicodeDecodeError) as err:
        log.warning("web token %s unreadable (%s); making a new one", path, err)
        token = ""
    if len(token) >= _MIN_TOKEN_CHARS and token.isprintable() and " " not in token:
        if path.stat().st_mode & 0o077:
            log.warning("web token %s was readable by others; set back to 0600", path)
            os.chmod(path, 0o600)
        return token
    if path.exists():
        log.warning("web token %s is not a valid token; making a new one", path)
        path.unlink()
    token = secrets.token_urlsafe(32)
    home.mkdir(parents=True, exist_ok=True)
    # O_EXCL + mode at creation: never a moment where the token sits world-readable.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(token + "\n")
    except OSError:  # a full disk: no half-written token left behind for the next start
        path.unlink(missing_ok=True)
        raise
    return token


class LoginLimiter:
    """At most ``per_window`` failed logins per client address in ``window`` seconds.
    Addresses are bounded too (the oldest forgotten first), so a flood of them cannot
    grow memory without end."""

    def __init__(
        self,
        per_window: int = 5,
        window: float = 60.0,
        max_clients: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._per_window, self._window, self._max = per_window, window, max_clients
        self._clock = clock
        self._failures: dict[str, deque[float]] = {}

    def _recent(self, client: str) -> deque[float]:
        now = self._clock()
        times = self._failures.get(client)
        if times is None:
            return deque()
        while times and now - times[0] >= self._window:
            times.popleft()
        if not times:
            del self._failures[client]
        return times

    def blocked(self, client: str) -> bool:
        return len(self._recent(client)) >= self._per_window

    def failed(self, client: str) -> None:
        times = self._failures.pop(client, None) or deque()
        times.append(self._clock())
        self._failures[client] = times  # re-inserted: most recent last
        while len(self._failures) > self._max:
            del self._failures[next(iter(self._failures))]


class WebAuth:
    """The web token, the session cookie and CSRF for every authenticated page."""

    def __init__(
        self,
        token: str,
        *,
        limiter: LoginLimiter | None = None,
        sessions: WebSessions | None = None,
    ) -> None:
        if len(token) < _MIN_TOKEN_CHARS:
            raise ValueError("web token too short")
        self._token = token
        # Proves a form came from one of our pages; the cookie is what logs in.
        self._csrf = hmac.new(token.encode(), b"fetch csrf v2", hashlib.sha256)
        self.limiter = limiter or LoginLimiter()
        # `is None`, not `or`: an empty WebSessions is falsy (it has a length).
        self.sessions = WebSessions(token) if sessions is None else sessions

    @classmethod
    def from_home(cls, home: Path) -> WebAuth:
        token = load_token(home)
        return cls(token, sessions=WebSessions(token, home / SESSIONS_FILE))

    # -- what the start banner and `fetch login` print ------------------------------

    def login_url(self, base_url: str) -> str:
        """A fresh login link: its ticket opens one session, once, within a day."""
        ticket = quote(self.sessions.ticket(), safe="")
        return f"{base_url.rstrip('/')}{LOGIN_PATH}?token={ticket}"

    # -- checks ---------------------------------------------------------------------

    def _bearer_ok(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or not given:
            return False
        return hmac.compare_digest(given.strip().encode(), self._token.encode())

    def _cookie_ok(self, request: web.Request) -> bool:
        return self.sessions.alive(request.cookies.get(COOKIE, ""))

    def authenticated(self, request: web.Request) -> bool:
        return self._cookie_ok(request) or self._bearer_ok(request)

    def csrf_token(self, request: web.Request | None = None) -> str:
        """The token a page embeds in its forms (``csrf`` field) and scripts send as
        ``X-CSRF-Token``. One per session (the session is derived from the token)."""
        return self._csrf.hexdigest()

    async def csrf_ok(self, request: web.Request) -> bool:
        """A POST of a logged-in browser carries the page's CSRF token. Reading the form
        here is fine: aiohttp keeps the parsed body for the handler."""
        given = request.headers.get(CSRF_HEADER, "")
        if not given and request.content_type in (
            "application/x-www-form-urlencoded",
            "multipart/form-data",
        ):
            form = await request.post()
            value = form.get(CSRF_FIELD, "")
            given = value if isinstance(value, str) else ""
        return bool(given) and hmac.compare_digest(given.encode(), self.csrf_token().encode())

    def require_auth(self, handler: Handler) -> Handler:
        """``handler`` for the token holder only; see the module docstring."""

        async def guarded(request: web.Request) -> web.StreamResponse:
            if self._bearer_ok(request):
                return await handler(request)
            if not self._cookie_ok(request):
                return unauthorized(request)
            if request.method in _UNSAFE and not await self.csrf_ok(request):
                return forbidden(request, "Missing or stale form token: reload the page.")
            return await handler(request)

        guarded.__name__ = getattr(handler, "__name__", "guarded")
        return guarded

    # -- routes ---------------------------------------------------------------------

    def install(self, http: HttpServer) -> None:
        http.add_route("GET", LOGIN_PATH, self._login)
        http.add_route("POST", LOGIN_PATH, self._login_form)
        http.add_route("POST", "/logout", self.require_auth(self._logout))
        http.add_route("GET", LOGGED_OUT_PATH, self._logged_out)

    async def _login(self, request: web.Request) -> web.StreamResponse:
        target = _local_path(request.query.get("next", "/"))
        if "token" not in request.query:  # the login page itself
            return _page(200, "Log in", LOGIN_HINT, login_next=target)
        client = request.remote or "?"
        if self.limiter.blocked(client):
            log.warning("web login: too many failed attempts from %s", client)
            return _page(429, "Too many tries", "Too many failed logins; wait a minute.")
        if not self.sessions.redeem(request.query.get("token", "")):
            self.limiter.failed(client)
            log.warning("web login: a wrong, used or expired link from %s", client)
            return _page(401, "Wrong link", LINK_SPENT, login_next=target)
        return self._logged_in(request, target)

    async def _login_form(self, request: web.Request) -> web.StreamResponse:
        """The login page's form: the web token itself, or a login link (or its ticket)."""
        if not _same_origin(request):
            return _page(403, "Refused", "That form was not sent from this server's page.")
        client = request.remote or "?"
        if self.limiter.blocked(client):
            log.warning("web login: too many failed attempts from %s", client)
            return _page(429, "Too many tries", "Too many failed logins; wait a minute.")
        form = await request.post()
        raw, target = form.get("token", ""), form.get("next", "/")
        given = raw.strip() if isinstance(raw, str) else ""
        target = _local_path(target if isinstance(target, str) else "/")
        if not self._token_ok(given) and not self.sessions.redeem(_ticket_in(given)):
            self.limiter.failed(client)
            log.warning("web login: a wrong token or link typed in from %s", client)
            return _page(401, "Wrong token", WRONG_TOKEN, login_next=target)
        return self._logged_in(request, target)

    def _token_ok(self, given: str) -> bool:
        return bool(given) and hmac.compare_digest(given.encode(), self._token.encode())

    def _logged_in(self, request: web.Request, target: str) -> web.Response:
        # 303 to a path without the ticket: it leaves the address bar at once.
        response = _see_other(target)
        response.set_cookie(
            COOKIE,
            self.sessions.begin(),
            httponly=True,
            samesite="Strict",
            path="/",
            secure=request.secure,
            max_age=int(self.sessions.lifetime),
        )
        return response

    async def _logout(self, request: web.Request) -> web.StreamResponse:
        self.sessions.end(request.cookies.get(COOKIE, ""))
        response = _see_other(LOGGED_OUT_PATH)
        response.del_cookie(COOKIE, path="/")
        return response

    async def _logged_out(self, request: web.Request) -> web.StreamResponse:
        return _page(200, "Logged out", "Logged out. " + LOGIN_HINT, login_next="/")


def _see_other(location: str) -> web.Response:
    return web.Response(status=303, headers={**_NO_STORE, "Location": location})


def _local_path(target: str) -> str:
    """``next=`` only ever leads to a path on this server (no open redirect)."""
    if not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def _ticket_in(given: str) -> str:
    """A pasted login link's ticket (its ``token=``), or what was pasted as is."""
    if "?" in given:
        found = parse_qs(urlsplit(given).query).get("token")
        return found[0] if found else ""
    return given


def _same_origin(request: web.Request) -> bool:
    """A browser says where a form came from; one of another site is refused. It says
    so in ``Sec-Fetch-Site``, else in ``Origin`` ("null" under the pages' no-referrer
    policy: not a site's name); a script or curl sends neither."""
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None:
        return site in ("same-origin", "none")
    origin = request.headers.get("Origin")
    if origin is None or origin == "null":
        return True
    return urlsplit(origin).netloc == request.host


def _wants_json(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "")
    return "application/json" in accept or "text/event-stream" in accept


def _login_form(target: str) -> str:
    """The token field: no script, no style (the CSP allows neither here)."""
    return (
        f'<form id="login" method="post" action="{LOGIN_PATH}">'
        '<p><label for="token">Web token or login link</label><br>'
        '<input type="password" id="token" name="token" required autocomplete="current-password"'
        ' autocapitalize="off" spellcheck="false" size="24"></p>'
        f'<input type="hidden" name="next" value="{html.escape(target)}">'
        '<p><button type="submit">Log in</button></p></form>'
        "<p><small>The token is in <code>FETCH_HOME/web-token</code>; "
        "<code>fetch login</code> prints a new link.</small></p>"
    )


def _page(status: int, title: str, text: str, login_next: str | None = None) -> web.Response:
    form = _login_form(login_next) if login_next is not None else ""
    body = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Fetch · {html.escape(title)}</title></head>"
        f'<body><main><h1>{html.escape(title)}</h1><p id="auth-hint">{html.escape(text)}</p>'
        f"{form}</main></body></html>"
    )
    return web.Response(
        status=status,
        text=body,
        content_type="text/html",
        headers={**_NO_STORE, "Content-Security-Policy": _FORM_CSP},
    )


def unauthorized(request: web.Request) -> web.Response:
    if _wants_json(request):
        return web.json_response({"error": LOGIN_HINT}, status=401, headers=_NO_STORE)
    # Back to this page once logged in; a POST's page is not worth returning to.
    target = request.path_qs if request.method == "GET" else "/"
    return _page(401, "Log in", LOGIN_HINT, login_next=_local_path(target))


def forbidden(request: web.Request, text: str) -> web.Response:
    if _wants_json(request):
        return web.json_response({"error": text}, status=403, headers=_NO_STORE)
    return _page(403, "Refused", text)


__all__ = [
    "COOKIE",
    "CSRF_FIELD",
    "CSRF_HEADER",
    "LINK_SPENT",
    "LOGIN_HINT",
    "LoginLimiter",
    "WebAuth",
    "load_token",
    "unauthorized",
]
