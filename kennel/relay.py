"""The model relay: the kennel's only way out, and the only holder of real credentials.

It listens on a unix socket (a file the kennel can see; no network needed), forwards
each request to the one upstream configured for the harness, strips whatever
credential the CLI sent, injects the real one, logs the call and enforces the task's
token budget. The CLI inside only ever holds a placeholder key.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

log = logging.getLogger(__name__)

PLACEHOLDER_KEY = "fetch-relay-placeholder"
# Headers a CLI might use to carry a credential; all are dropped before forwarding.
CREDENTIAL_HEADERS = {
    "authorization", "x-api-key", "x-goog-api-key", "api-key", "cookie",
    "proxy-authorization", "openai-organization", "openai-project",
}
HOP_BY_HOP = {
    "connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host",
    "content-length", "accept-encoding",
}
# How each vendor expects its key.
AUTH_STYLE = {"anthropic": "x-api-key", "gemini": "x-goog-api-key", "openai": "bearer"}
USAGE_IN = ("input_tokens", "prompt_tokens", "promptTokenCount")
USAGE_OUT = ("output_tokens", "completion_tokens", "candidatesTokenCount")


@dataclass
class Usage:
    tokens_in: int = 0
    tokens_out: int = 0

    def add_from(self, obj: Any) -> None:
        """Take the largest usage figures found anywhere in ``obj`` (streams repeat them)."""
        found_in, found_out = _walk_usage(obj)
        self.tokens_in = max(self.tokens_in, found_in)
        self.tokens_out = max(self.tokens_out, found_out)


def _walk_usage(obj: Any) -> tuple[int, int]:
    best_in = best_out = 0
    stack = [obj]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(value, int) and not isinstance(value, bool):
                    if key in USAGE_IN:
                        best_in = max(best_in, value)
                    elif key in USAGE_OUT:
                        best_out = max(best_out, value)
                elif isinstance(value, dict | list):
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
    return best_in, best_out


@dataclass
class RelayStats:
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    log: list[dict[str, Any]] = field(default_factory=list)


class ModelRelay:
    def __init__(
        self,
        *,
        socket_path: Path,
        upstream: str,
        provider: str,
        api_key: str | None,
        harness: str,
        task_id: int | None,
        log_path: Path,
        token_budget: int = 0,
        mcp: Callable[[web.Request], Awaitable[web.StreamResponse]] | None = None,
    ) -> None:
        # Fetch's memory as an MCP server (orchestrator/memory/mcp_server.py): served on
        # this same socket at /mcp, so the kennel needs no other way out.
        self.mcp = mcp
        self.socket_path = socket_path
        self.upstream = upstream.rstrip("/")
        self.provider = provider
        self._api_key = api_key
        self.harness = harness
        self.task_id = task_id
        self.log_path = log_path
        self.token_budget = token_budget
        self.stats = RelayStats()
        self._runner: web.AppRunner | None = None
        self._client: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> ModelRelay:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("relay already started")
        self.socket_path.parent.mkdir(parents=True, exist_ok=True)
        if self.socket_path.exists():
            self.socket_path.unlink()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._client = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=15, sock_read=600),
            auto_decompress=False,
        )
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        try:
            await web.UnixSite(runner, str(self.socket_path)).start()
        except Exception:
            await runner.cleanup()
            await self._client.close()
            raise
        # The kennel's user is not ours (uid 1000 in Docker): the socket must be open to
        # it; the folder it lives in is what keeps others out.
        os.chmod(self.socket_path, 0o666)
        self._runner = runner

    async def stop(self) -> None:
        # Close the upstream side first: a request hanging on the vendor is aborted, so
        # its handler ends and the server side can shut down at once (a /stop is waiting).
        if self._client is not None:
            await self._client.close()
            self._client = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self.socket_path.exists():
            self.socket_path.unlink()

    def _headers(self, incoming: Any) -> dict[str, str]:
        headers = {
            k: v for k, v in incoming.items()
            if k.lower() not in CREDENTIAL_HEADERS and k.lower() not in HOP_BY_HOP
        }
        if self._api_key:
            style = AUTH_STYLE.get(self.provider, "bearer")
            if style == "bearer":
                headers["Authorization"] = f"Bearer {self._api_key}"
            else:
                headers[style] = self._api_key
        return headers

    def _over_budget(self) -> bool:
        used = self.stats.tokens_in + self.stats.tokens_out
        return self.token_budget > 0 and used >= self.token_budget

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if self.mcp is not None and request.path.rstrip("/") == "/mcp":
            return await self.mcp(request)  # never forwarded to the vendor
        started = time.monotonic()
        body = await request.read()
        model = _model_of(body, request.path)
        if self._over_budget():
            used = self.stats.tokens_in + self.stats.tokens_out
            message = (f"Fetch budget exceeded: this task used {used} tokens of its "
                       f"{self.token_budget} budget")
            self._record(request, model, 429, started, Usage(), error=message)
            return web.json_response(
                {"type": "error", "error": {"type": "budget_exceeded", "message": message}},
                status=429,
            )
        if self._client is None or self._client.closed:
            raise web.HTTPServiceUnavailable(text="relay is shutting down")
        url = self.upstream + request.path_qs
        usage = Usage()
        try:
            async with self._client.request(
                request.method, url, data=body, headers=self._headers(request.headers)
            ) as upstream:
                response = web.StreamResponse(status=upstream.status)
                for key, value in upstream.headers.items():
                    if key.lower() not in HOP_BY_HOP:
                        response.headers[key] = value
                await response.prepare(request)
                pending = b""
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
                    pending = _scan_usage(pending + chunk, usage)
                _scan_usage(pending + b"\n", usage)
                await response.write_eof()
                status = upstream.status
        except aiohttp.ClientError as err:
            self._record(request, model, 502, started, usage, error=str(err))
            return web.json_response(
                {"type": "error", "error": {"type": "relay_error",
                                            "message": f"upstream unreachable: {err}"}},
                status=502,
            )
        self._record(request, model, status, started, usage)
        return response

    def _record(
        self, request: web.Request, model: str, status: int, started: float, usage: Usage,
        error: str = "",
    ) -> None:
        self.stats.calls += 1
        self.stats.tokens_in += usage.tokens_in
        self.stats.tokens_out += usage.tokens_out
        entry = {
            "ts": round(time.time(), 3),
            "harness": self.harness,
            "task": self.task_id,
            "provider": self.provider,
            "model": model,
            "path": request.path,
            "status": status,
            "latency_ms": round((time.monotonic() - started) * 1000, 1),
            "tokens_in": usage.tokens_in,
            "tokens_out": usage.tokens_out,
        }
        if error:
            entry["error"] = error
        self.stats.log.append(entry)
        try:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with self.log_path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry) + "\n")
        except OSError as err:  # logging must never break a model call
            log.warning("relay log write failed: %s", err)


def _model_of(body: bytes, path: str) -> str:
    if "/models/" in path:  # gemini puts the model in the path
        return path.split("/models/", 1)[1].split(":", 1)[0]
    try:
        parsed = json.loads(body) if body else {}
    except ValueError:
        return ""
    return str(parsed.get("model", "")) if isinstance(parsed, dict) else ""


def _scan_usage(buffer: bytes, usage: Usage) -> bytes:
    """Parse complete lines of an SSE or JSON body for usage; return the unfinished tail."""
    *complete, tail = buffer.split(b"\n")
    for line in complete:
        line = line.strip()
        if line.startswith(b"data:"):
            line = line[5:].strip()
        if not line.startswith(b"{") or b"oken" not in line:
            continue
        try:
            usage.add_from(json.loads(line))
        except ValueError:
            continue
    return tail
