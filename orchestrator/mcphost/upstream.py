"""One of the owner's MCP servers, held open by Fetch on the host.

A stdio server runs in a bubblewrap sandbox of its own (``kennel.bwrap.service_argv``:
no network but an egress proxy to the hosts it is declared to need, the folders it is
given read-only, the kennel's uid when Fetch is root); a URL server is reached from the
host with its headers. Its secrets (``env``, ``headers``: ``${VAR}`` references to
Fetch's environment) go to the server only, never to a kennel.

The session lives in a task of its own (the ``mcp`` client's streams and cancel scopes
belong to one task); calls from the relay's handlers go through it, each bounded in
time and size. A server that does not start, hangs, answers garbage or floods is cut
off with one line saying why (``down``); the tasks go on without it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from contextlib import AsyncExitStack, suppress
from pathlib import Path
from typing import Any

from core.errors import KennelError
from kennel.egress import EgressProxy, parse_allow
from kennel.paths import open_room, relay_dir, release
from orchestrator.mcphost.settings import McpServerSettings, expand

log = logging.getLogger(__name__)

MAX_TOOLS = 128  # listed per server
MAX_DESCRIPTION = 1_000  # characters of a tool's description the CLI is shown
MAX_RESULT = 256 * 1024  # bytes of one call's answer


class McpDown(Exception):
    """The server is not there to call; ``str`` says why, in one line."""


class Upstream:
    def __init__(
        self,
        name: str,
        settings: McpServerSettings,
        *,
        home: Path,
        owner: tuple[int, int] | None = None,
        user: str = "auto",
    ) -> None:
        self.name = name
        self.settings = settings
        self._home = home
        self._owner = owner
        self._user = user
        self.state = "stopped"  # starting, up, down
        self.why = ""
        self.tools: list[Any] = []  # mcp.types.Tool
        self.calls = 0
        self._session: Any = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()
        self._egress: EgressProxy | None = None
        # The server's stderr (its last line says why it failed), a file of Fetch's.
        self.log_path = home / "logs" / f"mcp-{name}.log"

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self) -> None:
        self.state, self.why = "starting", ""
        self._stop.clear()
        self._ready.clear()
        self._task = asyncio.create_task(self._hold(), name=f"mcp:{self.name}")
        try:
            async with asyncio.timeout(self.settings.start_seconds):
                await self._ready.wait()
        except TimeoutError:
            await self._cut(f"did not start within {self.settings.start_seconds:.0f} s")

    async def stop(self) -> None:
        self._stop.set()
        task, self._task = self._task, None
        if task is not None:
            try:
                async with asyncio.timeout(5):
                    await asyncio.shield(task)
            except (TimeoutError, Exception):
                task.cancel()
                with suppress(asyncio.CancelledError, Exception):
                    await task
        if self.state == "up":
            self.state = "stopped"

    async def _cut(self, why: str) -> None:
        """Cut the server off: its session ends, every later call is told why."""
        log.warning("MCP server %s cut off: %s", self.name, why)
        self.state, self.why = "down", why
        self._session = None
        self._ready.set()
        self._stop.set()
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with suppress(asyncio.CancelledError, Exception):
                await task

    async def _hold(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                streams = await self._open(stack)
                from mcp import ClientSession

                session = await stack.enter_async_context(ClientSession(*streams[:2]))
                await session.initialize()
                listed = await session.list_tools()
                self.tools = [_trimmed(t) for t in listed.tools[:MAX_TOOLS]]
                self._session = session
                self.state = "up"
                self._ready.set()
                await self._stop.wait()
        except asyncio.CancelledError:
            raise
        except BaseException as err:  # an ExceptionGroup from the client's task group too
            if self.state != "down":
                self.state = "down"
                self.why = _why(err, _tail(self.log_path))
                log.warning("MCP server %s is down: %s", self.name, self.why)
        finally:
            self._session = None
            self._ready.set()
            if self._egress is not None:
                await self._egress.stop()
                release(self._egress.socket_path)
                self._egress = None

    async def _open(self, stack: AsyncExitStack) -> tuple[Any, ...]:
        settings = self.settings
        if settings.url:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            headers = {k: expand(v) for k, v in settings.headers.items()}
            client = await stack.enter_async_context(
                httpx2.AsyncClient(headers=headers, timeout=settings.timeout_seconds)
            )
            return tuple(
                await stack.enter_async_context(
                    streamable_http_client(settings.url, http_client=client)
                )
            )
        from mcp.client.stdio import StdioServerParameters, stdio_client

        from kennel.bwrap import RELAY_PORT, service_argv

        socket: Path | None = None
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}
        env.update({k: expand(v) for k, v in settings.env.items()})
        if settings.hosts:
            # The sandbox's uid connects (through its forwarder): the socket's folder and
            # the proxy's peer check are its.
            owner = self._owner or sandbox_owner(self._home, self._user)
            socket = relay_dir(self._home, owner) / "relay.sock"
            open_room(socket)
            peers = frozenset({owner[0]}) if owner else frozenset()
            self._egress = EgressProxy(socket, parse_allow(settings.hosts), peer_uids=peers)
            await self._egress.start()
            proxy = f"http://127.0.0.1:{RELAY_PORT}"
            for key in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
                env[key] = proxy
            env["NODE_USE_ENV_PROXY"] = "1"  # Node's own fetch honours the proxy (Node 24+)
        argv = service_argv(
            list(settings.command),
            binds=list(settings.binds),
            socket=socket,
            path_env=env["PATH"],
            home=self._home,
            user=self._user,
        )
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd="/")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        # The stack closes it; a local file of Fetch's, opened once per server start.
        errlog = stack.enter_context(open(self.log_path, "a", encoding="utf-8"))  # noqa: SIM115, ASYNC230
        return tuple(await stack.enter_async_context(stdio_client(params, errlog=errlog)))

    # -- calls -------------------------------------------------------------------------
    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """The server's ``CallToolResult`` for ``tool``; ``McpDown`` when it is not up,
        or is cut off by this call (too slow, garbage, too big)."""
        session = self._session
        if self.state != "up" or session is None:
            raise McpDown(f"{self.name} is not available: {self.why or self.state}")
        if tool not in {t.name for t in self.tools}:
            raise McpDown(f"{self.name} has no tool {tool!r}")
        self.calls += 1
        try:
            async with asyncio.timeout(self.settings.timeout_seconds):
                result = await session.call_tool(tool, arguments)
        except TimeoutError:
            await self._cut(f"{tool} did not answer within {self.settings.timeout_seconds:.0f} s")
            raise McpDown(f"{self.name} was cut off: {self.why}") from None
        except McpDown:
            raise
        except Exception as err:
            await self._cut(f"{tool} failed: {_one_line(str(err) or type(err).__name__)}")
            raise McpDown(f"{self.name} was cut off: {self.why}") from None
        size = len(json.dumps(result.model_dump(mode="json", by_alias=True), default=str))
        if size > MAX_RESULT:
            raise McpDown(f"{self.name}'s answer to {tool} is {size // 1024} KB, over the limit")
        return result


def sandbox_owner(home: Path, user: str) -> tuple[int, int] | None:
    """The uid:gid a stdio server runs as (the bwrap kennel's), when Fetch is root."""
    from kennel.owner import parse_user, user_for

    return parse_user(user_for(home, user)) if os.geteuid() == 0 else None


def _trimmed(tool: Any) -> Any:
    if tool.description and len(tool.description) > MAX_DESCRIPTION:
        return tool.model_copy(update={"description": tool.description[:MAX_DESCRIPTION]})
    return tool


def _tail(path: Path) -> str:
    """The last lines of a log, bounded."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - 4096))
            return fh.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _one_line(text: str) -> str:
    return " ".join(text.split())[:200]


def _why(err: BaseException, stderr: str) -> str:
    inner: BaseException = err
    while isinstance(inner, BaseExceptionGroup) and inner.exceptions:
        inner = inner.exceptions[0]
    tail = _one_line(stderr.strip().splitlines()[-1]) if stderr.strip() else ""
    if isinstance(inner, KennelError | KeyError | OSError):
        what = _one_line(str(inner))
    else:
        what = _one_line(f"{type(inner).__name__}: {inner}")
    return what + (f" ({tail})" if tail and tail not in what else "")


__all__ = ["McpDown", "Upstream", "sandbox_owner"]
