"""The owner's model credentials, on the host: an API key, or a subscription's token.

The relay injects whichever the vendor expects (kennel/relay.py); the CLI in a kennel
only ever holds the run's secret in the credential's place. What each harness can use:

* Claude Code: an API key (``x-api-key``) or a Claude subscription's long-lived token
  (what ``claude setup-token`` prints; sent as ``Authorization: Bearer`` with the
  ``oauth-2025-04-20`` beta flag, measured: ../shared/facts/harness-clis.md). The CLI
  then holds the run's secret as ``CLAUDE_CODE_OAUTH_TOKEN``, and sends it the same way.
* Codex: an API key (a bearer) or a ChatGPT sign-in (codex's auth.json, imported by
  ``fetch login codex``; kennel/relay_signin.py keeps its access token fresh and the relay
  sends it with the account header to the ChatGPT backend, ``providers.openai.
  signin_base_url``). The CLI then holds a stand-in auth file whose access token is the
  run's secret (harnesses/codex.py).
* Gemini CLI: an API key (``x-goog-api-key``) or a Google sign-in (its oauth_creds.json,
  imported by ``fetch login gemini-cli``; kennel/relay_signin_google.py refreshes it): the
  CLI then talks to Code Assist (``providers.gemini.signin_base_url``) through the relay
  with the run's secret as its access token.
* Copilot CLI: a provider key (BYOK, ``providers.openai``) or a GitHub sign-in: a
  fine-grained or OAuth GitHub token (``fetch login copilot``). Measured with Copilot CLI
  1.0.102: with ``COPILOT_API_URL`` set it sends that token itself as the bearer of its
  Copilot API calls (``/models``, ``/responses``, ``/chat/completions``), no exchange
  first; so the CLI holds the run's secret as ``COPILOT_GITHUB_TOKEN`` and the relay sends
  the real token to ``providers.github.base_url`` (the Copilot API). A GitHub token does
  not expire on a schedule and has no refresh token: a refused one is the owner's to
  replace.

A token lives in ``providers.<vendor>.oauth_token`` (or ``CLAUDE_CODE_OAUTH_TOKEN``) or in
``FETCH_HOME/credentials/<vendor>.json`` (0600), which ``fetch login <harness>`` writes.
An API key wins when both are set.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from kennel.relay_signin import (
    DEFAULT_BACKEND_URL,
    DEFAULT_TOKEN_URL,
    ChatGptSignIn,
    GitHubToken,
    parse_auth,
    write_private,
)
from kennel.relay_signin_google import (
    DEFAULT_CODE_ASSIST_URL,
    DEFAULT_GOOGLE_TOKEN_URL,
    GoogleSignIn,
)
from kennel.settings import ProviderSettings

OAUTH_BETA = "oauth-2025-04-20"
# The Copilot API a GitHub sign-in's calls go to (``providers.github.base_url`` moves it).
DEFAULT_COPILOT_URL = "https://api.githubcopilot.com"
# What a sign-in cannot do through the relay, said plainly by /harness and fetch doctor
# (harness -> reason). Every harness's sign-in rides the relay today (checked with the
# real CLIs: tests/harnesses/test_*signin*.py), so there is none.
SIGN_IN_NOTES: dict[str, str] = {}


@dataclass(frozen=True, slots=True)
class Credential:
    kind: Literal["api_key", "oauth", "chatgpt", "google", "github"]
    value: str = field(repr=False)
    # A ChatGPT sign-in: its tokens, refreshed on the host (value is then unused).
    signin: ChatGptSignIn | None = field(default=None, repr=False, compare=False)
    # Where a sign-in's calls go instead of the provider's base_url (None: there).
    upstream: str | None = None

    def run_secret(self) -> str | None:
        """The run's secret in the shape the CLI wants its credential in (None: any).
        Copilot CLI takes only a GitHub-token-shaped token (measured: a random one gets
        "No authentication information found"), so a GitHub sign-in's secret is one."""
        if self.kind == "github":
            return "gho_" + secrets.token_hex(18)
        return None

    @property
    def shown(self) -> str:
        """What /harness says (never the value)."""
        return {
            "oauth": "subscription token",
            "chatgpt": "ChatGPT sign-in",
            "google": "Google sign-in",
            "github": "GitHub sign-in",
        }.get(self.kind, "API key")


def path_for(home: Path, vendor: str) -> Path:
    return home / "credentials" / f"{vendor}.json"


def save_token(home: Path, vendor: str, token: str) -> Path:
    """Keep a subscription token for ``vendor`` (0600, in a 0700 folder)."""
    token = token.strip()
    if not token or any(c.isspace() for c in token) or len(token) > 4096:
        raise ValueError("that is not a token (empty, too long, or with spaces in it)")
    return write_private(path_for(home, vendor), {"kind": "oauth", "token": token})


def save_github(home: Path, token: str) -> Path:
    """Keep a GitHub token for the Copilot CLI (0600); ValueError saying why not."""
    token = token.strip()
    if not token or any(c.isspace() for c in token) or len(token) > 1024:
        raise ValueError("that is not a GitHub token (empty, too long, or with spaces in it)")
    if token.startswith("ghp_"):
        # Measured: Copilot CLI refuses them ("Classic Personal Access Tokens (ghp_) are
        # not supported by Copilot").
        raise ValueError(
            "Copilot does not take classic personal access tokens (ghp_): use a "
            "fine-grained token with the Copilot Requests permission, or `gh auth token`"
        )
    return write_private(path_for(home, "github"), {"kind": "github", "token": token})


def save_chatgpt(home: Path, auth_json: str) -> Path:
    """Keep a ChatGPT sign-in (the text of codex's auth.json) for the openai vendor;
    ValueError saying what is wrong with it, and nothing kept."""
    try:
        data = json.loads(auth_json)
    except ValueError:
        raise ValueError("that is not codex's auth.json (not JSON)") from None
    return write_private(path_for(home, "openai"), parse_auth(data).stored())


def _read(home: Path, vendor: str) -> dict[str, object]:
    try:
        data = json.loads(path_for(home, vendor).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _stored(home: Path, vendor: str) -> str | None:
    token = _read(home, vendor).get("token")
    return token if isinstance(token, str) and token else None


def credential_for(
    home: Path,
    vendor: str,
    provider: ProviderSettings | None,
    harness: str = "",
    providers: Mapping[str, ProviderSettings] | None = None,
) -> Credential | None:
    """The credential the relay injects for ``vendor`` when ``harness`` runs (None: none
    configured). A sign-in is the one CLI's it came from: codex's ChatGPT sign-in is
    nothing to the Copilot CLI, though both talk to "openai"."""
    if provider is not None and provider.api_key:
        return Credential("api_key", provider.api_key)
    signed = vendor == "openai" and harness in ("", "codex")
    if signed and _read(home, vendor).get("kind") == "chatgpt":
        signin = ChatGptSignIn(
            path_for(home, vendor),
            (provider.token_url if provider is not None else None) or DEFAULT_TOKEN_URL,
        )
        where = (provider.signin_base_url if provider is not None else None) or DEFAULT_BACKEND_URL
        return Credential("chatgpt", "", signin=signin, upstream=where)
    if (
        vendor == "gemini"
        and harness in ("", "gemini-cli")
        and _read(home, vendor).get("kind") == "google"
    ):
        google = GoogleSignIn(
            path_for(home, vendor),
            (provider.token_url if provider is not None else None) or DEFAULT_GOOGLE_TOKEN_URL,
        )
        where = (
            provider.signin_base_url if provider is not None else None
        ) or DEFAULT_CODE_ASSIST_URL
        return Credential("google", "", signin=google, upstream=where)
    github = _read(home, "github")
    token = github.get("token")
    if harness == "copilot" and github.get("kind") == "github" and isinstance(token, str):
        copilot = (providers or {}).get("github")
        where = copilot.base_url if copilot is not None else DEFAULT_COPILOT_URL
        signin = GitHubToken(path_for(home, "github"))
        return Credential("github", "", signin=signin, upstream=where)
    if vendor != "anthropic":
        return None  # only the sign-ins above and Claude's token ride the relay
    token = (provider.oauth_token if provider is not None else None) or _stored(home, vendor)
    return Credential("oauth", token) if token else None


__all__ = [
    "OAUTH_BETA",
    "SIGN_IN_NOTES",
    "Credential",
    "credential_for",
    "save_chatgpt",
    "save_github",
    "save_token",
]
