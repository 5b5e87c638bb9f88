"""A ChatGPT sign-in (Codex) held on the host: its tokens, kept fresh, never in a kennel.

Codex signed in with ChatGPT keeps ``~/.codex/auth.json``: an id token (a JWT whose claims
say the account and plan), an access token that expires, a refresh token and the account
id. ``fetch login codex`` copies those into ``FETCH_HOME/credentials/openai.json`` (0600);
the CLI in a kennel gets a stand-in auth file whose access token is the run's secret
(harnesses/codex.py), and the relay sends the vendor the real one here, as codex itself
does (measured with codex 0.169.0, ../shared/facts/harness-clis.md): ``Authorization:
Bearer <access token>`` and ``chatgpt-account-id: <account id>``.

Refreshed on the host, as codex would: before the access token expires (its ``exp``
claim, when it is a JWT; else after codex's own 8 days), and when the vendor answers 401.
The request is codex's (read from its source and checked against the real binary): a
JSON ``POST`` of ``{"client_id": <codex's>, "grant_type": "refresh_token",
"refresh_token": …}`` to the token endpoint; the answer brings a new access token, and
may bring a new id token and refresh token. A refresh token the endpoint refuses (400 or
401: revoked, expired, used) ends in ``SignInExpired``, whose text is the owner's one line.
One refresh at a time per file (every relay runs on Fetch's event loop); the file is read
again first, so a refresh another relay (or ``fetch login``) just made is used, not redone.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp

# Codex's OAuth client (codex-rs/login; the value its binary sends) and endpoints. Both
# endpoints are settings (providers.openai.signin_base_url / token_url): tests point them
# at servers of their own.
CODEX_CLIENT_ID = "app_EMoamEEZ73f0CkXaXp7hrann"
DEFAULT_TOKEN_URL = "https://auth.openai.com/oauth/token"
DEFAULT_BACKEND_URL = "https://chatgpt.com/backend-api"
EXPIRED_LINE = "Codex sign-in expired: run fetch login codex"
ACCOUNT_HEADER = "chatgpt-account-id"
# Refreshed this long before the access token's own expiry: a turn may take a while.
SKEW_SECONDS = 300
# Codex refreshes a token it cannot read the expiry of after this long.
REFRESH_AFTER = 8 * 24 * 3600
# One refresh per file at a time, per event loop (a lock is bound to the loop it waits on).
_locks: dict[tuple[int, Path], asyncio.Lock] = {}
# A token fresh from the endpoint that the vendor refuses before it served any call is
# not refreshed again for this long: the vendor's 401 goes back to the kennel instead,
# so a kennel calling in a loop (or a vendor refusing everything) costs one refresh, not
# one per call.
REFRESH_AGAIN_SECONDS = 60
_had: dict[Path, tuple[str, float]] = {}  # by file: the last refresh's access token, when
# And at most this many refreshes per file in REFRESH_WINDOW seconds, whatever the calls
# between them: a kennel that can get a 401 for a good token at will (and a 200 between
# two) still costs a few refreshes, not one per pair. An expiry needs one an hour.
REFRESHES_PER_WINDOW = 3
REFRESH_WINDOW = 600.0
_refreshed: dict[Path, list[float]] = {}  # by file: when each recent refresh was asked


class SignInExpired(Exception):
    """The refresh token was refused: only a new ``fetch login <harness>`` helps."""

    def __init__(self, line: str = EXPIRED_LINE) -> None:
        super().__init__(line)


class SignInError(Exception):
    """The sign-in could not be used right now (unreadable file, token endpoint down)."""


def claims(jwt: str) -> dict[str, Any]:
    """A JWT's payload, unverified ({} when it is not one): only ever read for the
    account, plan and expiry the owner's own tokens say."""
    parts = jwt.split(".")
    if len(parts) != 3:
        return {}
    try:
        data = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, TypeError):
        return {}
    return data if isinstance(data, dict) else {}


def _auth_claims(id_token: str) -> dict[str, Any]:
    found = claims(id_token).get("https://api.openai.com/auth")
    return found if isinstance(found, dict) else {}


@dataclass(frozen=True)
class Tokens:
    id_token: str
    access_token: str
    refresh_token: str
    account_id: str
    refreshed_at: float  # when the access token was had (epoch seconds)
    expiry: float = 0.0  # when it expires, when the sign-in says so (else its claims do)

    @property
    def plan(self) -> str:
        """The plan the id token names ("plus", "pro", …; "" when it does not)."""
        return str(_auth_claims(self.id_token).get("chatgpt_plan_type") or "")

    @property
    def expires_at(self) -> float:
        if self.expiry > 0:
            return self.expiry
        exp = claims(self.access_token).get("exp")
        if isinstance(exp, int | float) and not isinstance(exp, bool):
            return float(exp)
        return self.refreshed_at + REFRESH_AFTER

    def stale(self, now: float | None = None) -> bool:
        return (now if now is not None else time.time()) >= self.expires_at - SKEW_SECONDS

    def stored(self) -> dict[str, Any]:
        return {
            "kind": "chatgpt",
            "tokens": {
                "id_token": self.id_token,
                "access_token": self.access_token,
                "refresh_token": self.refresh_token,
                "account_id": self.account_id,
            },
            "last_refresh": datetime.fromtimestamp(self.refreshed_at, UTC).isoformat(),
        }


def parse_auth(data: object) -> Tokens:
    """Tokens from codex's auth.json (or Fetch's copy of it); ValueError saying what is
    missing otherwise."""
    if not isinstance(data, dict) or not isinstance(data.get("tokens"), dict):
        raise ValueError("no ChatGPT sign-in in it (no tokens: was codex signed in with ChatGPT?)")
    tokens: dict[str, Any] = data["tokens"]
    got = {k: tokens.get(k) for k in ("id_token", "access_token", "refresh_token")}
    missing = [k for k, v in got.items() if not isinstance(v, str) or not v.strip()]
    if missing:
        raise ValueError(f"the sign-in has no {', '.join(missing)}")
    id_token = str(got["id_token"]).strip()
    account = tokens.get("account_id") or _auth_claims(id_token).get("chatgpt_account_id")
    if not isinstance(account, str) or not account.strip():
        raise ValueError("the sign-in names no ChatGPT account (account_id)")
    when = time.time()
    last = data.get("last_refresh")
    if isinstance(last, str):
        with contextlib.suppress(ValueError):
            when = datetime.fromisoformat(last.replace("Z", "+00:00")).timestamp()
    for value in (*got.values(), account):
        if any(c.isspace() for c in str(value).strip()) or len(str(value)) > 16384:
            raise ValueError("a token in it has spaces in it or is far too long")
    return Tokens(
        id_token=id_token,
        access_token=str(got["access_token"]).strip(),
        refresh_token=str(got["refresh_token"]).strip(),
        account_id=account.strip(),
        refreshed_at=when,
    )


def write_private(path: Path, data: dict[str, Any]) -> Path:
    """``data`` as ``path`` (0600, in a 0700 folder), whole or not at all."""
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(folder, 0o700)
    fresh = path.with_name(f".{path.name}.{os.getpid()}.new")
    fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(fresh, path)
    except BaseException:
        fresh.unlink(missing_ok=True)
        raise
    return path


class ChatGptSignIn:
    """The owner's ChatGPT sign-in as the relay uses it: headers to send, refreshed.
    Another vendor's sign-in changes the hooks (kennel/relay_signin_google.py)."""

    name = "ChatGPT"
    expired_line = EXPIRED_LINE

    def __init__(self, path: Path, token_url: str = DEFAULT_TOKEN_URL) -> None:
        self.path = path
        self.token_url = token_url
        self.expired = False  # the refresh token was refused during this run
        self._refused = ""  # that refresh token: not offered again (a new login is)
        self._tokens: Tokens | None = None

    def load(self) -> Tokens:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise SignInError(f"cannot read the {self.name} sign-in in {self.path}: {err}") from err
        try:
            self._tokens = self.parse(data)
        except ValueError as err:
            raise SignInError(f"{self.path}: {err}") from err
        return self._tokens

    def parse(self, data: object) -> Tokens:
        return parse_auth(data)

    def stored(self, tokens: Tokens) -> dict[str, Any]:
        return tokens.stored()

    def auth_headers(self, tokens: Tokens) -> dict[str, str]:
        return {"Authorization": f"Bearer {tokens.access_token}", ACCOUNT_HEADER: tokens.account_id}

    def request(self, refresh_token: str) -> dict[str, Any]:
        """The token endpoint's request (aiohttp ``post`` arguments): codex's."""
        return {
            "json": {
                "client_id": CODEX_CLIENT_ID,
                "grant_type": "refresh_token",
                "refresh_token": refresh_token,
            }
        }

    def answered(self, got: dict[str, Any], access: str, current: Tokens) -> Tokens:
        """The tokens after a refresh: what the answer brings, the rest kept."""

        def kept(name: str, old: str) -> str:
            value = got.get(name)
            return value if isinstance(value, str) and value else old

        return Tokens(
            id_token=kept("id_token", current.id_token),
            access_token=access,
            refresh_token=kept("refresh_token", current.refresh_token),
            account_id=current.account_id,
            refreshed_at=time.time(),
        )

    @property
    def tokens(self) -> Tokens:
        return self._tokens if self._tokens is not None else self.load()

    def secrets(self) -> tuple[str, ...]:
        """What must never reach a kennel (scrubbed from every answer)."""
        t = self.tokens
        return (t.access_token, t.refresh_token, t.id_token)

    async def headers(self) -> dict[str, str]:
        """The vendor's credential headers, refreshed first when the token is about to
        expire."""
        tokens = self.tokens
        if tokens.stale():
            tokens = await self.refresh(tokens.access_token)
        return self.auth_headers(tokens)

    def served(self, access_token: str) -> None:
        """The vendor answered a call made with ``access_token`` (not a 401)."""
        if _had.get(self.path, ("",))[0] == access_token:
            del _had[self.path]

    async def refresh(self, rejected: str) -> Tokens:
        """New tokens, unless the file already holds newer ones than ``rejected`` (the
        access token the vendor refused or that expired)."""
        loop = id(asyncio.get_running_loop())
        lock = _locks.setdefault((loop, self.path), asyncio.Lock())
        async with lock:
            current = await asyncio.to_thread(self.load)
            if current.access_token != rejected and not current.stale():
                return current  # someone refreshed while this one waited
            had = _had.get(self.path, ("", -REFRESH_AGAIN_SECONDS))
            if had[0] == current.access_token == rejected and (
                time.monotonic() - had[1] < REFRESH_AGAIN_SECONDS
            ):
                return current  # just had, never served: the vendor's refusal stands
            if current.refresh_token == self._refused:
                raise SignInExpired(self.expired_line)  # said once to the endpoint is enough
            now = time.monotonic()
            asked = [t for t in _refreshed.get(self.path, []) if now - t < REFRESH_WINDOW]
            if len(asked) >= REFRESHES_PER_WINDOW:
                return current  # the vendor's refusal stands until the window moves on
            _refreshed[self.path] = [*asked, now]
            fresh = await self._ask(current)
            await asyncio.to_thread(write_private, self.path, self.stored(fresh))
            self._tokens = fresh
            _had[self.path] = (fresh.access_token, time.monotonic())
            return fresh

    async def exchange(self, refresh_token: str) -> Tokens:
        """A sign-in from its refresh token alone (``fetch login codex`` with a pasted
        token): refreshed once, and kept with the account its id token names."""
        bare = Tokens("", "", refresh_token, "", 0.0)
        fresh = await self._ask(bare)
        account = _auth_claims(fresh.id_token).get("chatgpt_account_id")
        if not isinstance(account, str) or not account:
            raise SignInError("the token endpoint's answer names no ChatGPT account")
        fresh = replace(fresh, account_id=account)
        await asyncio.to_thread(write_private, self.path, self.stored(fresh))
        self._tokens = fresh
        return fresh

    async def _ask(self, current: Tokens) -> Tokens:
        timeout = aiohttp.ClientTimeout(total=30)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout, trust_env=False) as client,
                client.post(
                    self.token_url, allow_redirects=False, **self.request(current.refresh_token)
                ) as answer,
            ):
                status = answer.status
                text = await answer.text()
        except (aiohttp.ClientError, TimeoutError) as err:
            why = str(err) or type(err).__name__
            raise SignInError(f"the {self.name} token endpoint is unreachable: {why}") from err
        if status in (400, 401, 403):
            self.expired, self._refused = True, current.refresh_token
            raise SignInExpired(self.expired_line)
        if status != 200:
            raise SignInError(f"the {self.name} token endpoint answered {status}")
        try:
            got = json.loads(text)
            access = got["access_token"]
        except (ValueError, KeyError, TypeError) as err:
            raise SignInError(
                f"the {self.name} token endpoint's answer has no access token"
            ) from err
        if not isinstance(access, str) or not access or any(c.isspace() for c in access):
            raise SignInError(f"the {self.name} token endpoint's answer has no access token")
        return self.answered(got, access, current)


class GitHubToken(ChatGptSignIn):
    """A GitHub token for the Copilot CLI, as the relay uses it: sent as the bearer; it has
    no refresh token, so a 401 for it is the owner's one line (nothing to refresh)."""

    name = "GitHub"
    expired_line = "GitHub token refused: run fetch login copilot"

    def parse(self, data: object) -> Tokens:
        token = data.get("token") if isinstance(data, dict) else None
        if not isinstance(token, str) or not token or any(c.isspace() for c in token):
            raise ValueError("no GitHub token in it")
        return Tokens("", token, "", "", time.time(), expiry=float("inf"))

    def stored(self, tokens: Tokens) -> dict[str, Any]:
        return {"kind": "github", "token": tokens.access_token}

    def auth_headers(self, tokens: Tokens) -> dict[str, str]:
        return {"Authorization": f"Bearer {tokens.access_token}"}

    def secrets(self) -> tuple[str, ...]:
        return (self.tokens.access_token,)

    async def refresh(self, rejected: str) -> Tokens:
        current = await asyncio.to_thread(self.load)
        if current.access_token != rejected:
            return current  # a new `fetch login copilot` since
        self.expired = True
        raise SignInExpired(self.expired_line)


__all__ = [
    "ACCOUNT_HEADER",
    "CODEX_CLIENT_ID",
    "DEFAULT_BACKEND_URL",
    "DEFAULT_TOKEN_URL",
    "EXPIRED_LINE",
    "ChatGptSignIn",
    "GitHubToken",
    "SignInError",
    "SignInExpired",
    "Tokens",
    "claims",
    "parse_auth",
    "write_private",
]
