"""Gemini CLI signed in with Google, held on the host (the ChatGPT sign-in's hooks,
kennel/relay_signin.py, for Google's OAuth).

Gemini CLI keeps its Google sign-in in ``~/.gemini/oauth_creds.json``: ``access_token``,
``refresh_token``, ``expiry_date`` (milliseconds) and more. Signed in, it talks to
Google's Code Assist backend (``/v1internal:…``), not to the Gemini API. Measured with
Gemini CLI 0.61.0: with ``GOOGLE_GENAI_USE_GCA=true`` and ``GOOGLE_CLOUD_ACCESS_TOKEN``
set it takes that token as is (no file, no refresh), and ``CODE_ASSIST_ENDPOINT`` moves
the backend: so the CLI in a kennel gets the run's secret as that token and the relay as
that endpoint (harnesses/gemini_cli.py), and the relay sends the real access token as a
bearer to ``providers.gemini.signin_base_url``.

The refresh is Google's: a form ``POST`` of ``grant_type=refresh_token``, the refresh
token and Gemini CLI's own OAuth client (an installed app's id and "secret", public in its
source). Fetch does not copy those: it reads them from the Gemini CLI installed on this
host, the one it runs. A refused refresh token is the owner's one line.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from functools import cache
from pathlib import Path
from typing import Any

from kennel.relay_signin import ChatGptSignIn, SignInError, Tokens

DEFAULT_GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token"
DEFAULT_CODE_ASSIST_URL = "https://cloudcode-pa.googleapis.com"
GOOGLE_EXPIRED_LINE = "Gemini sign-in expired: run fetch login gemini-cli"
_CLIENT = re.compile(r'OAUTH_CLIENT_(ID|SECRET) = "([A-Za-z0-9._-]{8,200})"')


@cache
def gemini_oauth_client(binary: str = "gemini") -> tuple[str, str]:
    """Gemini CLI's OAuth client (id, secret), read from its installed bundle."""
    found = shutil.which(binary)
    if found is None:
        raise SignInError("Gemini CLI is not installed here: its OAuth client refreshes the token")
    package = Path(found).resolve().parent.parent
    seen: dict[str, str] = {}
    for script in sorted(package.glob("bundle/*.js")) + sorted(package.glob("dist/**/*.js")):
        try:
            text = script.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for kind, value in _CLIENT.findall(text):
            seen.setdefault(kind, value)
        if len(seen) == 2:
            return seen["ID"], seen["SECRET"]
    raise SignInError(f"cannot find Gemini CLI's OAuth client in {package}")


def parse_google(data: object) -> Tokens:
    """Tokens from Gemini CLI's oauth_creds.json (or Fetch's copy); ValueError otherwise."""
    if not isinstance(data, dict):
        raise ValueError("no Google sign-in in it (not Gemini CLI's oauth_creds.json)")
    got = {k: data.get(k) for k in ("access_token", "refresh_token")}
    missing = [k for k, v in got.items() if not isinstance(v, str) or not v.strip()]
    if missing:
        raise ValueError(f"the sign-in has no {', '.join(missing)}")
    for value in got.values():
        if any(c.isspace() for c in str(value).strip()) or len(str(value)) > 16384:
            raise ValueError("a token in it has spaces in it or is far too long")
    expiry = data.get("expiry_date")
    ms = float(expiry) if isinstance(expiry, int | float) and not isinstance(expiry, bool) else 0
    id_token = data.get("id_token")
    return Tokens(
        id_token=id_token if isinstance(id_token, str) else "",
        access_token=str(got["access_token"]).strip(),
        refresh_token=str(got["refresh_token"]).strip(),
        account_id="",
        refreshed_at=time.time(),
        expiry=ms / 1000 if ms > 0 else time.time() + 3600,
    )


class GoogleSignIn(ChatGptSignIn):
    """The owner's Google sign-in (Gemini CLI) as the relay uses it."""

    name = "Google"
    expired_line = GOOGLE_EXPIRED_LINE

    def __init__(self, path: Path, token_url: str = DEFAULT_GOOGLE_TOKEN_URL) -> None:
        super().__init__(path, token_url)

    def parse(self, data: object) -> Tokens:
        return parse_google(data)

    def stored(self, tokens: Tokens) -> dict[str, Any]:
        return {
            "kind": "google",
            "access_token": tokens.access_token,
            "refresh_token": tokens.refresh_token,
            "id_token": tokens.id_token,
            "expiry_date": int(tokens.expires_at * 1000),
        }

    def auth_headers(self, tokens: Tokens) -> dict[str, str]:
        return {"Authorization": f"Bearer {tokens.access_token}"}

    def request(self, refresh_token: str) -> dict[str, Any]:
        client_id, client_secret = gemini_oauth_client()
        return {
            "data": {
                "client_id": client_id,
                "client_secret": client_secret,
                "grant_type": "refresh_token",
                "refresh_token": refresh_token,
            }
        }

    def answered(self, got: dict[str, Any], access: str, current: Tokens) -> Tokens:
        fresh = super().answered(got, access, current)
        lasts = got.get("expires_in")
        seconds = float(lasts) if isinstance(lasts, int | float) and lasts > 0 else 3600.0
        return Tokens(
            fresh.id_token,
            fresh.access_token,
            fresh.refresh_token,
            "",
            fresh.refreshed_at,
            expiry=fresh.refreshed_at + seconds,
        )


def save_google(path: Path, creds_json: str) -> Tokens:
    """Gemini CLI's oauth_creds.json text, kept as ``path`` (0600); ValueError if not one."""
    from kennel.relay_signin import write_private

    try:
        data = json.loads(creds_json)
    except ValueError:
        raise ValueError("that is not Gemini CLI's oauth_creds.json (not JSON)") from None
    tokens = parse_google(data)
    write_private(path, GoogleSignIn(path).stored(tokens))
    return tokens


__all__ = [
    "DEFAULT_CODE_ASSIST_URL",
    "DEFAULT_GOOGLE_TOKEN_URL",
    "GOOGLE_EXPIRED_LINE",
    "GoogleSignIn",
    "gemini_oauth_client",
    "parse_google",
    "save_google",
]
