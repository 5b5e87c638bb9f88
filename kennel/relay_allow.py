"""Which vendor endpoints the relay forwards: each provider's inference calls, nothing else.

The relay adds the owner's key to whatever it forwards, and the kennel is hostile: the
owner's uploaded files, batches, fine-tunes, organisation and admin endpoints are all on
the same host as the model. So a request passes only when its method and path are one of
the calls the coding CLIs make to talk to a model (checked against the real CLIs through
the relay: tests/fakes/cli_recipes.md), or list the models.

The path is matched as the kennel sent it (raw, percent-encoding and all), relative to the
upstream's base: an upstream may carry the version itself (``…/v1`` for OpenAI) or leave
it to the CLI (``/v1/messages``, ``/v1beta/models/…``), so a version segment in front is
optional. Anything unexpected, an encoded character included, is refused, never guessed at.
"""

from __future__ import annotations

import re

_VERSION = r"(?:/v1(?:alpha|beta)?)?"
_MODEL = r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}"

_RULES: dict[str, tuple[tuple[str, str], ...]] = {
    "anthropic": (
        ("POST", r"/messages"),  # Claude Code, every turn (…?beta=true)
        ("POST", r"/messages/count_tokens"),
        ("GET", rf"/models(?:/{_MODEL})?"),
    ),
    "openai": (
        ("POST", r"/responses"),  # Codex; Copilot CLI with its Responses wire
        ("POST", r"/chat/completions"),  # Copilot CLI (BYOK)
        ("GET", rf"/models(?:/{_MODEL})?"),
    ),
    # Codex signed in with ChatGPT (kennel/relay_signin.py), below its backend prefix: a
    # turn, its compaction, the model list, and the account check it makes before any
    # turn (without an answer it stops: "workspace routing discovery failed"). Its other
    # startup calls (user settings, the ChatGPT apps' MCP) are not model calls: refused,
    # and codex goes on without them (measured with codex 0.169.0).
    "chatgpt": (
        ("POST", r"/codex/responses(?:/compact)?"),
        ("GET", r"/codex/models"),
        ("GET", r"/wham/accounts/check"),
    ),
    # Gemini CLI signed in with Google (kennel/relay_signin_google.py): Code Assist's setup
    # (which project and tier) and its model calls; its quota, experiments and metrics
    # calls are not model calls (refused; the CLI goes on, measured with 0.61.0).
    "codeassist": (
        (
            "POST",
            r"internal:(?:loadCodeAssist|onboardUser|streamGenerateContent"
            r"|generateContent|countTokens)",
        ),
    ),
    "gemini": (
        # Gemini CLI: a turn streams; with the model "auto" a router call comes first.
        ("POST", rf"/models/{_MODEL}:(?:generateContent|streamGenerateContent|countTokens)"),
        ("GET", rf"/models(?:/{_MODEL})?"),
    ),
}
_COMPILED = {
    provider: tuple((method, re.compile(_VERSION + path)) for method, path in rules)
    for provider, rules in _RULES.items()
}


def allowed(provider: str, method: str, raw_path: str) -> bool:
    """True when ``method`` ``raw_path`` (no query) is an inference call of ``provider``."""
    return any(
        method == m and pattern.fullmatch(raw_path) is not None
        for m, pattern in _COMPILED.get(provider, ())
    )


__all__ = ["allowed"]
