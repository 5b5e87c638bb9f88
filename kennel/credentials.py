"""The owner's model credentials, on the host: an API key, or a subscription's token.

The relay injects whichever the vendor expects (kennel/relay.py); the CLI in a kennel
only ever holds the run's secret in the credential's place. What each harness can use:

* Claude Code: an API key (``x-api-key``) or a Claude subscription's long-lived token
  (what ``claude setup-token`` prints; sent as ``Authorization: Bearer`` with the
  ``oauth-2025-04-20`` beta flag, measured: ../shared/facts/harness-clis.md). The CLI
  then holds the run's secret as ``CLAUDE_CODE_OAUTH_TOKEN``, and sends it the same way.
* Codex, Gemini CLI, Copilot CLI: API keys only here (``SIGN_IN_NOTES``).

A token lives in ``providers.<vendor>.oauth_token`` (or ``CLAUDE_CODE_OAUTH_TOKEN``) or in
``FETCH_HOME/credentials/<vendor>.json`` (0600), which ``fetch login claude-code``
writes. An API key wins when both are set.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from kennel.settings import ProviderSettings

OAUTH_BETA = "oauth-2025-04-20"
# What a sign-in cannot do through the relay, said plainly by /harness and fetch doctor.
SIGN_IN_NOTES = {
    "codex": "a ChatGPT sign-in is not supported through Fetch's relay yet: use an API key",
    "gemini-cli": "a Google sign-in is not supported through Fetch's relay: use an API key",
    "copilot": "a GitHub sign-in is not supported through Fetch's relay: use a provider key",
}


@dataclass(frozen=True, slots=True)
class Credential:
    kind: Literal["api_key", "oauth"]
    value: str = field(repr=False)

    @property
    def shown(self) -> str:
        """What /harness says (never the value)."""
        return "subscription token" if self.kind == "oauth" else "API key"


def path_for(home: Path, vendor: str) -> Path:
    return home / "credentials" / f"{vendor}.json"


def save_token(home: Path, vendor: str, token: str) -> Path:
    """Keep a subscription token for ``vendor`` (0600, in a 0700 folder)."""
    token = token.strip()
    if not token or any(c.isspace() for c in token) or len(token) > 4096:
        raise ValueError("that is not a token (empty, too long, or with spaces in it)")
    folder = home / "credentials"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(folder, 0o700)
    path = path_for(home, vendor)
    fresh = path.with_suffix(".new")
    fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump({"kind": "oauth", "token": token}, out)
    os.replace(fresh, path)
    return path


def _stored(home: Path, vendor: str) -> str | None:
    try:
        data = json.loads(path_for(home, vendor).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    token = data.get("token") if isinstance(data, dict) else None
    return token if isinstance(token, str) and token else None


def credential_for(home: Path, vendor: str, provider: ProviderSettings | None) -> Credential | None:
    """The credential the relay injects for ``vendor`` (None: none configured)."""
    if provider is not None and provider.api_key:
        return Credential("api_key", provider.api_key)
    if vendor != "anthropic":
        return None  # only Claude's subscription token can ride the relay (see above)
    token = (provider.oauth_token if provider is not None else None) or _stored(home, vendor)
    return Credential("oauth", token) if token else None


__all__ = ["OAUTH_BETA", "SIGN_IN_NOTES", "Credential", "credential_for", "save_token"]
