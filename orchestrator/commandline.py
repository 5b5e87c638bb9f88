"""What counts as a command in a message: parsed once, by the gateway, onto the event."""

from __future__ import annotations

import re
from dataclasses import replace

from core.events import Inbound

COMMAND = re.compile(r"^/([A-Za-z][\w-]{0,31})(?:@\S+)?(?:\s+(.*))?$", re.DOTALL)

# Words people type on a phone without the slash; alone in a message they are commands.
BARE_COMMANDS = {"undo", "stop", "status", "help", "commands", "cancel"}


def parse_command(text: str) -> tuple[str, str] | None:
    bare = text.strip().lower().rstrip("!.")
    if bare in BARE_COMMANDS:
        return bare, ""
    m = COMMAND.match(text.strip())
    if not m:
        return None
    return m.group(1).lower(), (m.group(2) or "").strip()


def with_command(inbound: Inbound, text: str) -> Inbound:
    """``inbound`` with ``command``/``args`` set from its cleaned ``text``."""
    parsed = parse_command(text)
    if parsed is None:
        # Most messages are not commands: skip the copy when there is nothing to clear.
        if inbound.command is None and not inbound.args:
            return inbound
        return replace(inbound, command=None, args="")
    return replace(inbound, command=parsed[0], args=parsed[1])
