"""The ``mcp:`` section: the owner's MCP servers, declared once.

```yaml
mcp:
  servers:
    files:                      # the CLI sees its tools as mcp__files__<tool>
      command: [mcp-server-filesystem, /srv/docs]   # a stdio server, run in a sandbox
      env: {API_TOKEN: "${DOCS_TOKEN}"}             # secrets by reference to Fetch's env
      hosts: [docs.example.com]                     # what it may reach (the egress proxy)
      binds: [/srv/docs]                            # folders it sees (read-only)
      default: ask                                  # a tool with no rule: allow|ask|deny
    tracker:
      url: https://mcp.tracker.example/mcp          # a streamable-HTTP server
      headers: {Authorization: "Bearer ${TRACKER_TOKEN}"}
```

Each tool call is the permission model's action ``mcp:<server>:<tool>`` (rules, grants,
asks as for any other action); ``default`` decides when no rule or grant speaks, for the
owner's own tasks too: a new server asks first.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from core.settings import StrictSettings
from kennel.egress import parse_allow

NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class McpServerSettings(StrictSettings):
    command: tuple[str, ...] = ()  # argv of a stdio server
    url: str = ""  # or a streamable-HTTP server's endpoint
    env: dict[str, str] = Field(default_factory=dict)  # values may be ${VAR}
    headers: dict[str, str] = Field(default_factory=dict)  # for url servers; ${VAR} too
    hosts: tuple[str, ...] = ()  # a stdio server's egress allowlist (kennel/egress.py)
    binds: tuple[Path, ...] = ()  # folders a stdio server sees, read-only
    default: Literal["allow", "ask", "deny"] = "ask"
    timeout_seconds: float = Field(30.0, gt=0, le=600)
    start_seconds: float = Field(30.0, gt=0, le=600)

    @model_validator(mode="after")
    def _one_kind(self) -> McpServerSettings:
        if bool(self.command) == bool(self.url):
            raise ValueError("give either command (a stdio server) or url, not both")
        if self.url and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"url {self.url!r} is not http(s)")
        return self

    @field_validator("hosts")
    @classmethod
    def _hosts(cls, hosts: tuple[str, ...]) -> tuple[str, ...]:
        parse_allow(hosts)
        return hosts

    @field_validator("binds")
    @classmethod
    def _binds(cls, binds: tuple[Path, ...]) -> tuple[Path, ...]:
        for path in binds:
            if not path.is_absolute():
                raise ValueError(f"{path}: a bind is an absolute path")
        return binds


class McpSettings(StrictSettings):
    servers: dict[str, McpServerSettings] = Field(default_factory=dict)

    @field_validator("servers")
    @classmethod
    def _names(cls, servers: dict[str, McpServerSettings]) -> dict[str, McpServerSettings]:
        for name in servers:
            if not NAME.match(name) or name == "fetch-memory":
                raise ValueError(f"{name!r}: a server's name is a-z, 0-9, - and _ (32 at most)")
        return servers


def expand(value: str, env: dict[str, str] | None = None) -> str:
    """``${VAR}`` from Fetch's environment; a missing one is a clear error, never ''."""
    source = os.environ if env is None else env

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in source:
            raise KeyError(f"${{{name}}} is not set in Fetch's environment")
        return source[name]

    return REFERENCE.sub(one, value)


__all__ = ["McpServerSettings", "McpSettings", "expand"]
