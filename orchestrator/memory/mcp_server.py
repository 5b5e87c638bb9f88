"""Memory as an MCP server for the coding CLIs, served on the relay's own socket.

The kennel has no network; its one way out is the task's model relay (a unix socket,
forwarded to ``127.0.0.1:PORT`` inside). The relay hands ``/mcp`` to ``handler()`` here,
which runs the ``mcp`` package's streamable-HTTP app (stateless, JSON responses: a CLI's
session needs no server-side state, and a relay lives only as long as its task) through
a small ASGI bridge, in this process and event loop. Who is calling is decided by the
relay that built the handler, never by a header the CLI could forge.

The CLI is assumed hostile (scope.py): it sees archived conversations only of its
task's chat and memories only of its task's subject, and its writes never change a row
it did not write.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

from orchestrator.mcphost.asgi import asgi_bridge
from orchestrator.memory.scope import KENNEL_PREFIX, archive_threads, from_kennel

if TYPE_CHECKING:
    from orchestrator.memory.service import Memory

log = logging.getLogger(__name__)
SERVER_NAME = "fetch-memory"
TOOL_NAMES = ("memory_search", "memory_read", "memory_write")
CALLER_HEADER = "x-fetch-memory-caller"
MAX_WRITES_PER_RUN = 20  # a runaway CLI cannot flood the owner's memory
INSTRUCTIONS = (
    "Fetch's long-term memory of this owner: facts, preferences, learnings, and summaries "
    "of this chat's past conversations. memory_search first, memory_read(id) for a past "
    "conversation's full transcript, memory_write for something worth remembering across "
    "tasks."
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


# Set per request by the bridge (the app runs each request in a task of its own that
# copies this context), read by the tools.
@dataclass
class _Caller:
    source: str  # what its memories are marked with, e.g. harness:claude-code
    subject: str = "owner"  # whose task: it reads and writes only their memories
    chat: str | None = None  # the task's session: the one chat whose archives it reads
    writes: int = 0  # one handler serves one task's relay: the limit is per run

    @property
    def threads(self) -> tuple[str, ...]:
        return archive_threads(self.chat)


_CALLER: ContextVar[_Caller | None] = ContextVar("memory_mcp_caller", default=None)


def _current() -> _Caller:
    """The caller the relay's handler set; none (a request that bypassed it) fails
    closed rather than acting with some default's rights."""
    caller = _CALLER.get()
    if caller is None:
        raise RuntimeError("no caller: memory is served only through a relay's handler")
    return caller


class MemoryMcp:
    def __init__(self, memory: Memory) -> None:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.transport_security import TransportSecuritySettings

        self._memory = memory
        server: Any = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, log_level="WARNING")
        self._register(server)
        # Loopback only: inside the kennel the CLI reaches the relay as 127.0.0.1:PORT.
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "127.0.0.1", "localhost"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*"],
        )
        self._app = server.streamable_http_app(
            streamable_http_path="/mcp",
            json_response=True,
            stateless_http=True,
            transport_security=security,
        )
        self._manager = server.session_manager
        # JSON-RPC methods served, for /status-style checks and tests (e.g. a CLI that
        # lists the tools but defers them behind its own tool search: codex).
        self.methods: Counter[str] = Counter()
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def _register(self, server: Any) -> None:
        memory = self._memory

        async def memory_search(query: str, limit: int = 5) -> str:
            caller = _current()
            hits = await memory.search(
                query,
                max(1, min(int(limit), 20)),
                subject=caller.subject,
                threads=caller.threads,
            )
            return json.dumps(
                {"mode": memory.mode(), "hits": [h.as_dict() for h in hits]}, ensure_ascii=False
            )

        async def memory_read(id: int) -> str:
            caller = _current()
            if caller.subject != "owner":  # transcripts are the owner's conversations
                return "refused: past conversations are the owner's"
            # Another chat's chunk reads as absent: no hint that it exists.
            text = await memory.read(int(id), threads=caller.threads)
            return text or (
                f"no archived conversation #{id} of this chat (ids come from memory_search)"
            )

        async def memory_write(
            content: str, type: str = "learning", tags: list[str] | None = None
        ) -> str:
            caller = _current()
            if caller.writes >= MAX_WRITES_PER_RUN:
                return f"refused: at most {MAX_WRITES_PER_RUN} memories per task"
            caller.writes += 1
            result = await memory.write(
                content,
                type,
                tuple(tags or ()),
                source=caller.source,
                subject=caller.subject,
                chat=caller.chat,
            )
            # Only a memory this CLI wrote in this chat is ever merged into (items.py).
            verb = "updated your near-duplicate" if result.merged else "saved as"
            return f"{verb} memory #{result.item.id}"

        server.add_tool(
            memory_search,
            description=(
                "Search Fetch's memory (facts, preferences, learnings and past conversations). "
                "Returns JSON hits with id, source, content or summary, score, thread and time "
                "range."
            ),
        )
        server.add_tool(
            memory_read,
            description=(
                "The full transcript of an archived conversation chunk, by the id memory_search "
                "returned for it."
            ),
        )
        server.add_tool(
            memory_write,
            description=(
                "Remember something for later tasks: a fact about the project, a preference of "
                "the owner, or a learning (a fix or command that worked). type: fact | "
                "preference | learning."
            ),
        )

    # -- lifecycle: the session manager's task group lives in its own task ---------------
    async def start(self) -> None:
        self._task = self._memory.supervisor.spawn(self._serve(), name="memory:mcp")
        await self._ready.wait()

    async def _serve(self) -> None:
        try:
            async with self._manager.run():
                self._ready.set()
                await self._stop.wait()
        finally:
            self._ready.set()

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._task, 5)
            self._task = None

    # -- the relay's /mcp route -----------------------------------------------------------
    def handler(self, source: str, subject: str = "owner", *, chat: str | None = None) -> Handler:
        # Whatever reaches /mcp comes from a kennel: a source without the mark would let
        # its writes merge into anyone's memory (items.remember).
        if not from_kennel(source):
            raise ValueError(f"an MCP caller is a kennel, marked {KENNEL_PREFIX}<name>: {source}")
        caller = _Caller(source, subject, chat)

        async def handle(request: web.Request) -> web.StreamResponse:
            token = _CALLER.set(caller)
            try:
                return await self._bridge(request)
            finally:
                _CALLER.reset(token)

        return handle

    async def _bridge(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        with contextlib.suppress(ValueError, AttributeError, TypeError):
            self.methods[str(json.loads(body or b"{}").get("method") or request.method)] += 1
        return await asgi_bridge(self._app, request, body, drop=(CALLER_HEADER,))


@contextlib.asynccontextmanager
async def running(mcp: MemoryMcp) -> AsyncIterator[MemoryMcp]:
    await mcp.start()
    try:
        yield mcp
    finally:
        await mcp.stop()
