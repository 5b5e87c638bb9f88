"""The kennel's side of the owner's MCP servers: ``/mcp/<server>`` on each run's relay.

One MCP server (the ``mcp`` package's low-level ``Server``, stateless streamable HTTP,
JSON answers) per upstream, in this process: it lists the upstream's tools, and sends
each call on only after the permission model said yes for *this* run's subject
(``mcp:<server>:<tool>``; ``Guard``). Who calls is set by the handler the runner built
for the run, never by anything the CLI sends. Every call is told to ``on_call`` (the
task's record: server, tool, outcome, milliseconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from orchestrator.mcphost.asgi import asgi_bridge
from orchestrator.mcphost.upstream import McpDown, Upstream

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True)
class Caller:
    """The run a request comes from (set by the run's handler)."""

    subject: str  # whose task
    chat: str  # key_str of the task's chat
    task_id: int | None


# Allowed: None; refused: the line the CLI gets (the owner said no, a rule denies it,
# nobody answered the question in time).
Guard = Callable[[Caller, str, str], Awaitable[str | None]]
CallRecord = Callable[[Caller, Mapping[str, Any]], None]

_CALLER: ContextVar[Caller | None] = ContextVar("mcphost_caller", default=None)


class Gateway:
    """Every configured server's kennel-facing endpoint; one per app."""

    def __init__(
        self, upstreams: Mapping[str, Upstream], guard: Guard, on_call: CallRecord | None = None
    ) -> None:
        self._upstreams = dict(upstreams)
        self._guard = guard
        self._on_call = on_call
        self._apps: dict[str, Any] = {}
        self._managers: list[Any] = []
        self._stack: contextlib.AsyncExitStack | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()
        for name, upstream in self._upstreams.items():
            self._apps[name] = self._build(name, upstream)

    @property
    def names(self) -> list[str]:
        return sorted(self._upstreams)

    def up(self) -> list[str]:
        return [n for n in self.names if self._upstreams[n].state == "up"]

    def _build(self, name: str, upstream: Upstream) -> Any:
        from mcp import types
        from mcp.server.lowlevel import Server
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
        from mcp.server.transport_security import TransportSecuritySettings

        async def list_tools(_ctx: Any, _params: Any) -> Any:
            return types.ListToolsResult(tools=list(upstream.tools))

        async def call_tool(_ctx: Any, params: Any) -> Any:
            caller = _CALLER.get()
            tool = str(params.name)
            started = time.monotonic()

            def record(outcome: str) -> None:
                if self._on_call is not None and caller is not None:
                    ms = (time.monotonic() - started) * 1000
                    entry = {"server": name, "tool": tool, "outcome": outcome, "ms": ms}
                    self._on_call(caller, entry)

            def refuse(text: str) -> Any:
                return types.CallToolResult(
                    content=[types.TextContent(type="text", text=text)], is_error=True
                )

            if caller is None:  # a request that bypassed the run's handler: fail closed
                return refuse("refused: no run")
            why = await self._guard(caller, name, tool)
            if why is not None:
                record("refused")
                return refuse(why)
            try:
                result = await upstream.call(tool, dict(params.arguments or {}))
            except McpDown as err:
                record("failed")
                return refuse(str(err))
            record("error" if result.is_error else "ok")
            return result

        server: Any = Server(name, on_list_tools=list_tools, on_call_tool=call_tool)
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "127.0.0.1", "localhost"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*"],
        )
        manager = StreamableHTTPSessionManager(
            server, json_response=True, stateless=True, security_settings=security
        )
        self._managers.append(manager)
        return manager

    # -- lifecycle: the session managers' task groups live in one task -------------------
    async def start(self) -> None:
        for upstream in self._upstreams.values():
            await upstream.start()
        self._task = asyncio.create_task(self._serve(), name="mcphost:gateway")
        await self._ready.wait()

    async def _serve(self) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                for manager in self._managers:
                    await stack.enter_async_context(manager.run())
                self._ready.set()
                await self._stop.wait()
        except Exception:
            log.exception("the MCP gateway stopped")
        finally:
            self._ready.set()

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._task, 5)
            self._task = None
        for upstream in self._upstreams.values():
            await upstream.stop()

    # -- the relay's /mcp/<server> route -------------------------------------------------
    def handler(self, caller: Caller) -> Handler:
        """The run's handler for every ``/mcp/<server>`` path."""

        async def handle(request: web.Request) -> web.StreamResponse:
            name = request.path.rstrip("/").rpartition("/")[2]
            manager = self._apps.get(name)
            if manager is None:
                return web.json_response({"error": f"no MCP server {name[:40]!r}"}, status=404)
            if not self._ready.is_set() or self._stop.is_set():
                return web.json_response({"error": "Fetch is stopping"}, status=503)
            token = _CALLER.set(caller)
            try:
                body = await request.read()
                return await asgi_bridge(manager.handle_request, request, body)
            finally:
                _CALLER.reset(token)

        return handle

    def listing(self) -> list[str]:
        """For /tools and doctor: each server, its state and its tools."""
        out = []
        for name in self.names:
            upstream = self._upstreams[name]
            if upstream.state == "up":
                tools = ", ".join(t.name for t in upstream.tools) or "no tools"
                out.append(f"mcp:{name} — {tools}")
            else:
                out.append(f"mcp:{name} — {upstream.state}: {upstream.why or 'not started'}")
        return out


def dumps(entry: Mapping[str, Any]) -> str:
    return json.dumps(dict(entry), default=str)


__all__ = ["Caller", "Gateway", "Guard"]
