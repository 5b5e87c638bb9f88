"""What a start refuses beyond the settings' own validation: names and values that only
make sense against what Fetch ships (a harness that exists, a secret that is not the
example's, a workspace that is there).

One function for every command: ``fetch``, ``fetch serve`` and ``fetch doctor`` call it
right after loading the settings (``orchestrator/cli.py``), and the app calls it when it
starts, so a config that doctor accepts is one that ``fetch`` accepts, and the other way
round (tests/cli/test_doctor_agrees.py). Each refusal is one ``ConfigError`` naming the
environment variable or file the value came from, the key, and what is expected.
"""

from __future__ import annotations

from core.errors import ConfigError
from orchestrator.config import Settings


def check_start(settings: Settings) -> None:
    """Raise the first ``ConfigError`` a start would meet; return when there is none."""
    from channels.webhook import PLACEHOLDER
    from harnesses import builtin_harnesses

    wanted = settings.harness.default
    names = [h.name for h in builtin_harnesses()]
    if wanted != "auto" and wanted not in names:
        raise ConfigError(
            settings.source_of("harness.default"),
            "harness.default",
            f"auto or one of {', '.join(names)} (got {wanted!r})",
        )
    secret = settings.webhook.secret or ""
    if settings.webhook.enabled and PLACEHOLDER in secret.lower():
        # fetch.env.example's own value: public, so anyone holding it would be the owner.
        raise ConfigError(
            settings.source_of("webhook.secret"),
            "webhook.secret",
            "your own random secret (openssl rand -hex 24), not the example's",
        )
    if settings.workspace is not None and not settings.workspace_dir.is_dir():
        raise ConfigError(
            settings.source_of("workspace"),
            "workspace",
            f"an existing folder of git repositories ({settings.workspace_dir} is none)",
        )


__all__ = ["check_start"]
