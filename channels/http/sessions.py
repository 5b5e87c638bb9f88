"""The web's logins, kept on the server: one-time login tickets and browser sessions.

* A **login ticket** is what a login link carries: ``<nonce>.<expiry>.<mac>``, the MAC an
  HMAC of the web token over the nonce and the expiry. Anything holding the web token can
  mint one (the start banner, ``fetch login``) without asking the running Fetch. It is
  good once: its nonce is remembered as used until it would have expired, so the link a
  browser keeps in its history opens nothing later.
* A **session** is a random id in the cookie. The server keeps only its SHA-256 with when
  it began and was last used: a session ends ``idle`` seconds after its last use and
  ``lifetime`` seconds after it began, and logging out deletes it. A cookie of 127.0.0.1
  reaches every local port, so it must be worth little: short-lived, revocable, and
  never the token or anything derived from it.

Kept in ``FETCH_HOME/web-sessions.json`` (0600, replaced atomically) so a restart logs no
one out, with a fingerprint of the token: a new token (the file deleted) ends them all.
Without a file (tests, scripts) they live in memory.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

SESSIONS_FILE = "web-sessions.json"
TICKET_SECONDS = 24 * 3600  # a printed link: opened within a day, once
IDLE_SECONDS = 24 * 3600  # a session unused for a day ends
LIFETIME_SECONDS = 7 * 24 * 3600  # and any session after a week
_MAX_SESSIONS = 256  # the oldest dropped first: a flood of logins cannot grow the file


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


@dataclass
class _Session:
    began: float
    seen: float


class WebSessions:
    """Tickets and sessions for one web token; see the module docstring."""

    def __init__(
        self,
        token: str,
        path: Path | None = None,
        *,
        clock: Callable[[], float] = time.time,
        idle: float = IDLE_SECONDS,
        lifetime: float = LIFETIME_SECONDS,
        ticket_seconds: float = TICKET_SECONDS,
    ) -> None:
        self._key = hmac.new(token.encode(), b"fetch login ticket v2", hashlib.sha256).digest()
        self._print = _digest("fetch web sessions v2:" + token)
        self._path, self._clock = path, clock
        self.idle, self.lifetime, self.ticket_seconds = idle, lifetime, ticket_seconds
        self._sessions: dict[str, _Session] = {}
        self._used: dict[str, float] = {}  # ticket nonce -> its expiry
        self._load()

    # -- tickets --------------------------------------------------------------------

    def _mac(self, nonce: str, expiry: int) -> str:
        return _b64(hmac.new(self._key, f"{nonce}.{expiry}".encode(), hashlib.sha256).digest())

    def ticket(self) -> str:
        """A new one-time login ticket, good for ``ticket_seconds``."""
        nonce = secrets.token_urlsafe(16)
        expiry = int(self._clock() + self.ticket_seconds)
        return f"{nonce}.{expiry}.{self._mac(nonce, expiry)}"

    def redeem(self, ticket: str) -> bool:
        """True once for a valid, unexpired ticket; it is spent by this call."""
        nonce, _, rest = ticket.partition(".")
        stamp, _, mac = rest.partition(".")
        if not (nonce and stamp.isdigit() and len(stamp) < 16 and mac):
            return False
        expiry = int(stamp)
        if not hmac.compare_digest(mac.encode(), self._mac(nonce, expiry).encode()):
            return False
        now = self._clock()
        if expiry <= now or nonce in self._used:
            return False
        self._used[nonce] = expiry
        self._save()
        return True

    # -- sessions -------------------------------------------------------------------

    def begin(self) -> str:
        """A new session; its id goes into the cookie and nowhere else."""
        sid = secrets.token_urlsafe(32)
        now = self._clock()
        self._sessions[_digest(sid)] = _Session(now, now)
        while len(self._sessions) > _MAX_SESSIONS:
            del self._sessions[next(iter(self._sessions))]
        self._save()
        return sid

    def alive(self, sid: str) -> bool:
        """The session is known and not expired; its last use is now."""
        if not sid:
            return False
        key, now = _digest(sid), self._clock()
        session = self._sessions.get(key)
        if session is None:
            return False
        if now - session.seen >= self.idle or now - session.began >= self.lifetime:
            del self._sessions[key]
            self._save()
            return False
        # Written at most every few minutes: a page load is not a disk write.
        stale = now - session.seen >= min(300.0, self.idle / 10)
        session.seen = now
        if stale:
            self._save()
        return True

    def end(self, sid: str) -> None:
        """Logout: the session is gone on the server, whatever the browser keeps."""
        if self._sessions.pop(_digest(sid), None) is not None:
            self._save()

    def __len__(self) -> int:
        return len(self._sessions)

    # -- the file -------------------------------------------------------------------

    def _purge(self) -> None:
        now = self._clock()
        self._used = {n: e for n, e in self._used.items() if e > now}
        self._sessions = {
            k: s
            for k, s in self._sessions.items()
            if now - s.seen < self.idle and now - s.began < self.lifetime
        }

    def _load(self) -> None:
        if self._path is None:
            return
        try:
            raw = json.loads(self._path.read_text(encoding="utf-8"))
            if not isinstance(raw, dict) or raw.get("token") != self._print:
                return  # another token's sessions: all ended
            self._sessions = {
                str(k): _Session(float(v[0]), float(v[1])) for k, v in raw["sessions"].items()
            }
            self._used = {str(k): float(v) for k, v in raw["used"].items()}
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError) as err:
            # Unreadable: every browser logs in again; nothing else is lost.
            log.warning("web sessions %s unreadable (%s); starting with none", self._path, err)
            self._sessions, self._used = {}, {}
        self._purge()

    def _save(self) -> None:
        if self._path is None:
            return
        self._purge()
        body = {
            "token": self._print,
            "sessions": {k: [s.began, s.seen] for k, s in self._sessions.items()},
            "used": self._used,
        }
        tmp = self._path.with_name(self._path.name + ".tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(body, out)
            os.replace(tmp, self._path)
        except OSError as err:  # a full disk: the sessions still hold until a restart
            log.warning("web sessions not saved to %s: %s", self._path, err)
            tmp.unlink(missing_ok=True)


__all__ = ["IDLE_SECONDS", "LIFETIME_SECONDS", "SESSIONS_FILE", "TICKET_SECONDS", "WebSessions"]
