"""A real HTTP model server on 127.0.0.1 that replays a per-test script in four wire formats.

    async with ScriptedModelServer() as srv:
        srv.script(WriteFile("hello.txt", "hi\\n"), Text("Done"))
        ...point a CLI or SDK at srv.url...
        await srv.wait_for_requests(2)
        assert srv.requests[1].dialect == "anthropic"

Each model request consumes the next step; an empty script answers with ``srv.default``
(``Text("ok")``). The dialect is chosen by the request path:

* ``POST …/v1/messages`` (``?beta=true`` ok): Anthropic Messages (:mod:`tests.fakes.anthropic`)
* ``POST …/chat/completions``: OpenAI Chat Completions (:mod:`tests.fakes.openai_chat`)
* ``POST …/responses``: OpenAI Responses (:mod:`tests.fakes.openai_responses`)
* ``POST /v1beta/models/M:streamGenerateContent`` / ``:generateContent``: Gemini
  (:mod:`tests.fakes.gemini`)
* anything else: 404 with a JSON body. Every request, 404s included, lands in ``srv.requests``.

Calls that are not conversation turns (Gemini's JSON-schema router/helper calls, Anthropic
``count_tokens``) are answered without consuming a step. How to drive each real CLI against
this server is in ``tests/fakes/cli_recipes.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import zlib
from collections import deque
from collections.abc import Callable
from types import TracebackType

from aiohttp import web

from tests.fakes import gemini
from tests.fakes.anthropic import Anthropic
from tests.fakes.embeddings import FakeEmbeddings
from tests.fakes.gemini import Gemini
from tests.fakes.openai_chat import OpenAIChat
from tests.fakes.openai_responses import OpenAIResponses
from tests.fakes.resolve import Offer, mismatches, turns_of
from tests.fakes.steps import (
    Delay,
    EditFile,
    Error,
    Garbage,
    Hang,
    Step,
    Text,
    ToolCall,
    Turn,
    WriteFile,
)
from tests.fakes.wire import Call, Dialect, Ids, JsonObject, Recorded, ScriptError

__all__ = [
    "Delay",
    "EditFile",
    "Error",
    "Garbage",
    "Hang",
    "Recorded",
    "ScriptedModelServer",
    "Step",
    "Text",
    "ToolCall",
    "Turn",
    "WriteFile",
]


class ScriptedModelServer:
    """Async context manager; see the module docstring."""

    def __init__(self, *, unix_path: str | None = None, default: Step | None = None) -> None:
        self.default: Step = default if default is not None else Text("ok")
        self.requests: list[Recorded] = []
        #: Indices into ``requests`` of Hang-ed requests the client gave up on.
        self.disconnected: list[int] = []
        #: Script mistakes (e.g. raw_arguments on Gemini); each was answered with a 500.
        self.failures: list[str] = []
        #: Tool calls sent although they do not fit the tools the request offered (unknown
        #: name, missing required argument). Sent anyway: a test may want exactly that.
        self.mismatches: list[str] = []
        self.url = ""
        self.unix_path = unix_path
        self._steps: deque[Step] = deque()
        self._key: str | None = None
        self._ids = Ids()
        self._dialects: dict[str, Dialect] = {
            d.name: d for d in (Anthropic(), OpenAIChat(), OpenAIResponses(), Gemini())
        }
        self._changed = asyncio.Event()
        self._closing = asyncio.Event()
        self._runner: web.AppRunner | None = None
        #: ``POST /v1/embeddings`` (not scripted: deterministic vectors, see its module).
        self.embeddings = FakeEmbeddings()

    # -- script -----------------------------------------------------------------------------

    def script(self, *steps: Step) -> None:
        """Append steps; each model request consumes one, in order."""
        self._steps.extend(steps)

    @property
    def model_requests(self) -> list[Recorded]:
        """The requests that reached a dialect (not 404s, e.g. Claude Code's ``HEAD /``)."""
        return [r for r in self.requests if r.dialect != "unknown"]

    @property
    def pending(self) -> list[Step]:
        """Steps not consumed yet (handy for ``assert not srv.pending``)."""
        return list(self._steps)

    def require_key(self, key: str | None) -> None:
        """Answer 401 to model requests whose credential header is not ``key`` (None: any).

        The header is the vendor's: ``x-api-key`` (or Bearer) for Anthropic,
        ``x-goog-api-key`` (or ``?key=``) for Gemini, ``Authorization: Bearer`` for OpenAI.
        A refused request consumes no step.
        """
        self._key = key

    # The timeout parameter is the agreed public API; callers should not need asyncio.timeout.
    async def wait_for_requests(self, n: int, timeout: float = 10) -> list[Recorded]:
        """Wait until at least ``n`` requests (of any kind) were received; return them all."""
        await self._wait(lambda: len(self.requests) >= n, timeout, f"{n} requests")
        return list(self.requests)

    async def wait_for_disconnects(self, n: int = 1, timeout: float = 10) -> list[int]:
        """Wait until clients gave up on ``n`` Hang-ed requests (e.g. a cancelled CLI run)."""
        await self._wait(lambda: len(self.disconnected) >= n, timeout, f"{n} disconnects")
        return list(self.disconnected)

    async def _wait(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        try:
            async with asyncio.timeout(timeout):
                while not done():
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            seen = [f"{r.method} {r.path}" for r in self.requests]
            raise TimeoutError(
                f"wanted {what} within {timeout}s; requests: {seen}, disconnected: "
                f"{self.disconnected}"
            ) from None

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("ScriptedModelServer already started")
        app = web.Application(client_max_size=64 * 1024 * 1024)  # CLIs send big prompts
        app.router.add_post("/v1/embeddings", self.embeddings.handle)  # tests/fakes/embeddings
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            if self.unix_path:
                await web.UnixSite(runner, self.unix_path).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        port = next(addr[1] for addr in runner.addresses if isinstance(addr, tuple))
        self.url = f"http://127.0.0.1:{port}"

    async def close(self) -> None:
        if self._runner is None:
            return
        self._closing.set()  # wakes Hang and Delay so shutdown does not wait for them
        runner, self._runner = self._runner, None
        await runner.cleanup()

    async def __aenter__(self) -> ScriptedModelServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- request handling -------------------------------------------------------------------

    def _dialect_for(self, request: web.Request) -> Dialect | None:
        if request.method != "POST":
            return None
        path, by_name = request.path, self._dialects
        if path.endswith(("/messages", "/messages/count_tokens")):
            return by_name["anthropic"]
        if path.endswith("/chat/completions"):
            return by_name["openai_chat"]
        if path.endswith("/responses"):
            return by_name["openai_responses"]
        if gemini.PATH.match(path):
            return by_name["gemini"]
        return None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body = _json_object(raw, request.headers.get("Content-Encoding", ""))
        dialect = self._dialect_for(request)
        self.requests.append(
            Recorded(
                dialect=dialect.name if dialect else "unknown",
                path=request.path,
                headers={k.lower(): v for k, v in request.headers.items()},
                body=body,
                raw=raw,
                query=dict(request.query),
                method=request.method,
            )
        )
        index = len(self.requests) - 1
        self._changed.set()
        if dialect is None:
            message = f"fake model server: no route for {request.method} {request.path}"
            return web.json_response({"error": {"message": message, "code": 404}}, status=404)
        if self._key is not None and dialect.credential(request) != self._key:
            return _error(dialect, 401, "fake: invalid API key")
        if body is None:
            return _error(dialect, 400, "fake: request body is not a JSON object")
        side = dialect.side_reply(request, body)
        if side is not None:
            return side
        step = self._steps.popleft() if self._steps else self.default
        try:
            return await self._play(request, dialect, body, raw, step, index)
        except ScriptError as err:
            self.failures.append(f"request {index}: {err}")
            return _error(dialect, 500, f"fake script error: {err}")

    async def _play(
        self,
        request: web.Request,
        dialect: Dialect,
        body: JsonObject,
        raw: bytes,
        step: Step,
        index: int,
    ) -> web.StreamResponse:
        while isinstance(step, Delay):
            await self._sleep(step.seconds)
            step = step.step
        stream = dialect.is_stream(request, body)
        if isinstance(step, Error):
            response = _error(dialect, step.status, step.message)
            response.headers.update(step.headers)
            return response
        if isinstance(step, Garbage):
            return web.Response(body=step.body, headers={"Content-Type": step.content_type})
        if isinstance(step, Hang):
            return await self._hang(request, dialect, step, stream, index)
        tools = dialect.offered_tools(body)
        offer = Offer(
            tools,
            dialect.default_write_tool,
            dialect.default_edit_tool,
            add_file_overwrites=request.headers.get("originator", "").startswith("codex"),
        )
        turns = turns_of(step, offer)
        # A step that needs several turns (Claude's Read-before-Edit) answers this request
        # with its first turn and puts the rest at the front of the script.
        self._steps.extendleft(Turn(*t) for t in reversed(turns[1:]))
        self.mismatches.extend(f"request {index}: {m}" for m in mismatches(turns[0], tools))
        call = Call(body=body, raw=raw, model=dialect.model_of(request, body), ids=self._ids)
        return await dialect.reply(request, call, turns[0], stream)

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._closing.wait(), seconds)

    async def _hang(
        self, request: web.Request, dialect: Dialect, step: Hang, stream: bool, index: int
    ) -> web.StreamResponse:
        started: web.StreamResponse | None = None
        if step.after_headers:
            kind = "text/event-stream" if stream else "application/json"
            started = web.StreamResponse(status=200, headers={"Content-Type": kind})
            await started.prepare(request)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + step.seconds
        # aiohttp does not cancel a handler when its client goes away, so poll for it.
        while not self._closing.is_set() and loop.time() < deadline:
            if request.transport is None or request.transport.is_closing():
                self.disconnected.append(index)
                self._changed.set()
                return started or web.Response(status=499)
            await self._sleep(min(0.05, deadline - loop.time()))
        if self._closing.is_set() and request.transport is not None:
            # The server is going away: drop the connection, as a dying server would,
            # rather than answer after all.
            request.transport.abort()
            return started or web.Response(status=503)
        if started is not None:
            return started
        return _error(dialect, 504, "fake: hung request timed out")


def _error(dialect: Dialect, status: int, message: str) -> web.Response:
    return web.json_response(dialect.error_body(status, message), status=status)


def _json_object(raw: bytes, encoding: str) -> JsonObject | None:
    try:
        if encoding == "gzip":
            raw = gzip.decompress(raw)
        elif encoding == "deflate":
            raw = zlib.decompress(raw)
        value = json.loads(raw)
    except (ValueError, OSError, zlib.error):
        return None
    return value if isinstance(value, dict) else None
