"""The owner's MCP servers in the app: started with it, offered to every task's CLI
through its relay, each call decided by the permission model.

A call is the action ``mcp:<server>:<tool>`` of the task's subject. A deny rule (or
``permissions.deny``) refuses it; an allow rule or a grant (once, session, persisted)
allows it; otherwise the server's ``default`` decides, for the owner's own tasks too:
``ask`` (a new server's default) sends the owner the usual question
(``/grants yes <nonce> once|session|always``) and the call waits for the answer, at
most ``ASK_SECONDS``; ``deny`` refuses, ``allow`` lets it through.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.events import SessionKey
from orchestrator.mcphost.gateway import Caller, Gateway, Handler
from orchestrator.mcphost.settings import McpSettings
from orchestrator.mcphost.upstream import Upstream, sandbox_owner

if TYPE_CHECKING:
    from orchestrator.messenger import Messenger
    from orchestrator.permissions.service import Permissions

log = logging.getLogger(__name__)
ASK_SECONDS = 300.0  # how long a call waits for the owner's answer
POLL = 0.25
GRANTED = ("allow rule", "session grant", "persisted grant")


class McpHost:
    def __init__(
        self,
        settings: McpSettings,
        permissions: Permissions,
        messenger: Messenger,
        *,
        home: Path,
        owner: tuple[int, int] | None,
        user: str = "auto",
        ask_seconds: float = ASK_SECONDS,
    ) -> None:
        self._settings = settings
        self._permissions = permissions
        self._messenger = messenger
        self._ask_seconds = ask_seconds
        self._log = home / "mcp.jsonl"
        upstreams = {
            name: Upstream(name, server, home=home, owner=owner, user=user)
            for name, server in settings.servers.items()
        }
        self.gateway = Gateway(upstreams, self._guard, self._record)

    async def start(self) -> None:
        await self.gateway.start()
        for line in self.gateway.listing():
            log.info("%s", line)

    async def stop(self) -> None:
        await self.gateway.stop()

    def up(self) -> list[str]:
        return self.gateway.up()

    def handler(self, subject: str, key: SessionKey, task_id: int | None) -> Handler:
        return self.gateway.handler(Caller(subject, f"{key.channel}:{key.chat}", task_id))

    def listing(self) -> list[str]:
        return self.gateway.listing()

    # -- the decision ----------------------------------------------------------------
    async def _guard(self, caller: Caller, server: str, tool: str) -> str | None:
        perms = self._permissions
        action = f"mcp:{server}:{tool}"
        key = _key(caller.chat)
        subject = perms.subject_named(caller.subject)
        decision = perms.decide(subject, action, key)
        if decision.effect.value == "deny":
            return f"🔒 refused: {action} ({decision.why})"
        if decision.allowed and (decision.step in GRANTED or "grant" in decision.why):
            await self._use_once(subject, action, key)
            return None
        default = self._settings.servers[server].default
        if default == "allow":
            return None
        if default == "deny":
            return f"🔒 refused: {action} (the server's default is deny)"
        return await self._ask(subject, action, key, server, tool)

    async def _use_once(self, subject: Any, action: str, key: SessionKey) -> None:
        perms = self._permissions
        used = perms.resolver.once_grant(subject, action, key)
        if used is not None:
            await perms.grants.revoke(used)

    async def _ask(
        self, subject: Any, action: str, key: SessionKey, server: str, tool: str
    ) -> str | None:
        """Ask the owner and wait: a grant allows the call, a "no" or the time running
        out refuses it (the CLI is told which)."""
        perms = self._permissions

        shown = f"{tool} of the MCP server {server}"
        told: list[str] = []

        async def reply(text: str) -> None:
            # The task's chat hears that the call waits (not "try again": the CLI's call
            # is held open), unless it is the owner's own chat, which has the question.
            told.append(text)
            if key != perms.owner_chat(key.channel):
                await self._messenger.send(key, f"⏳ {shown} waits for the owner's yes.")

        await perms.ask_owner(subject, action, key, reply, shown)
        if not any(a.subject == subject.id and a.action == action for a in perms.asks.pending()):
            return f"🔒 refused: {action} needs the owner's yes, and they cannot be asked"
        deadline = time.monotonic() + self._ask_seconds
        while time.monotonic() < deadline:
            await asyncio.sleep(POLL)
            decision = perms.decide(subject, action, key)
            if decision.allowed and (decision.step in GRANTED or "grant" in decision.why):
                await self._use_once(subject, action, key)
                return None
            waiting = perms.asks.pending()
            if not any(a.subject == subject.id and a.action == action for a in waiting):
                return f"🔒 refused: the owner said no to {action}"
        return f"🔒 refused: the owner did not answer about {action} in {self._ask_seconds:.0f} s"

    def _record(self, caller: Caller, entry: Mapping[str, Any]) -> None:
        line = {"at": time.time(), "task": caller.task_id, "chat": caller.chat, **entry}
        try:
            with open(self._log, "a", encoding="utf-8") as out:
                out.write(json.dumps(line, default=str) + "\n")
        except OSError as err:
            log.warning("mcp.jsonl: %s", err)


def _key(chat: str) -> SessionKey:
    channel, _, rest = chat.partition(":")
    return SessionKey(channel, rest)


__all__ = ["McpHost", "sandbox_owner"]
