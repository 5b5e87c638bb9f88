"""A scripted OpenAI-compatible transcription server on 127.0.0.1 (real multipart HTTP).

``POST /v1/audio/transcriptions`` reads the multipart form the openai SDK sends (``file``
with its name and type, ``model``, optional ``language``), records it, and answers the
next scripted reply: a text (``{"text": ...}``), or an HTTP status with an error body.
With nothing scripted it answers ``default``. ``delay`` holds each answer that long.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from types import TracebackType

from aiohttp import BodyPartReader, web


@dataclass(frozen=True, slots=True)
class Heard:
    """One request as the server read it."""

    model: str
    filename: str
    content_type: str
    data: bytes
    language: str
    authorization: str


class TranscriptionServer:
    def __init__(self, default: str = "hello from a voice note", delay: float = 0.0) -> None:
        self.default = default
        self.delay = delay
        self.requests: list[Heard] = []
        self._script: deque[tuple[int, str]] = deque()
        self._runner: web.AppRunner | None = None
        self.url = ""  # the base URL to configure: http://127.0.0.1:<port>/v1

    def say(self, text: str) -> None:
        self._script.append((200, text))

    def fail(self, status: int) -> None:
        self._script.append((status, ""))

    async def start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/audio/transcriptions", self._transcribe)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        self._runner = runner
        port = next(a[1] for a in runner.addresses if isinstance(a, tuple))
        self.url = f"http://127.0.0.1:{port}/v1"

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> TranscriptionServer:
        await self.start()
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def _transcribe(self, request: web.Request) -> web.Response:
        if not request.content_type.startswith("multipart/form-data"):
            return web.json_response({"error": {"message": "multipart expected"}}, status=400)
        fields: dict[str, str] = {}
        filename = content_type = ""
        data = b""
        reader = await request.multipart()
        async for part in reader:
            if not isinstance(part, BodyPartReader):
                continue
            if part.name == "file":
                filename = part.filename or ""
                content_type = part.headers.get("Content-Type", "")
                data = await part.read()
            elif part.name:
                fields[part.name] = await part.text()
        if not data or "model" not in fields:
            return web.json_response({"error": {"message": "file and model needed"}}, status=400)
        self.requests.append(
            Heard(
                fields["model"],
                filename,
                content_type,
                data,
                fields.get("language", ""),
                request.headers.get("Authorization", ""),
            )
        )
        if self.delay:
            await asyncio.sleep(self.delay)
        status, text = self._script.popleft() if self._script else (200, self.default)
        if status != 200:
            return web.json_response({"error": {"message": f"scripted {status}"}}, status=status)
        return web.json_response({"text": text})
