"""A minimal Bot API client: one JSON POST per method, flood waits honoured, errors typed.

Only what the channel needs. Every failure (network, a non-JSON answer, ``ok: false``)
becomes a ``TelegramApiError``; the token never appears in a message or a log line.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import aiohttp

from core.errors import ChannelError

log = logging.getLogger(__name__)


class TelegramApiError(ChannelError):
    def __init__(
        self,
        method: str,
        description: str,
        code: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.method, self.description, self.code = method, description, code
        self.retry_after = retry_after
        shown = f"{code} " if code is not None else ""
        super().__init__(f"telegram {method}: {shown}{description}")


class BotApi:
    """``await api.call("sendMessage", {...})`` returns the ``result`` of the answer.

    ``request_seconds`` bounds one HTTP exchange (a long poll needs more than its own
    ``timeout``); flood waits come on top of it.

    A 429 carries ``parameters.retry_after``: the call sleeps that long and tries again,
    at most ``flood_retries`` times and never for longer than ``max_flood_wait`` at once
    (a longer ban is reported instead of silently stalling a reply for minutes).
    """

    def __init__(
        self,
        token: str,
        base_url: str,
        *,
        flood_retries: int = 3,
        max_flood_wait: float = 60.0,
    ) -> None:
        self._token = token
        self._base = base_url.rstrip("/")
        self._flood_retries = flood_retries
        self._max_flood_wait = max_flood_wait
        self._session: aiohttp.ClientSession | None = None

    async def open(self) -> None:
        if self._session is None:
            self._session = aiohttp.ClientSession()

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    def _redact(self, text: str) -> str:
        return text.replace(self._token, "<token>")

    async def call(
        self, method: str, params: dict[str, Any] | None = None, *, request_seconds: float = 30.0
    ) -> Any:
        if self._session is None:
            raise TelegramApiError(method, "client is not open")
        url = f"{self._base}/bot{self._token}/{method}"
        attempt = 0
        while True:
            data = await self._post(method, url, params or {}, request_seconds)
            if data.get("ok") is True:
                return data.get("result")
            code = data.get("error_code")
            code = code if isinstance(code, int) else None
            description = str(data.get("description") or "no description")
            parameters = data.get("parameters")
            retry_after = parameters.get("retry_after") if isinstance(parameters, dict) else None
            wait = float(retry_after) if isinstance(retry_after, int | float) else None
            if (
                code == 429
                and wait is not None
                and attempt < self._flood_retries
                and wait <= self._max_flood_wait
            ):
                attempt += 1
                log.warning(
                    "telegram %s: flood limit, retrying in %.1fs (%d/%d)",
                    method,
                    wait,
                    attempt,
                    self._flood_retries,
                )
                await asyncio.sleep(wait)
                continue
            raise TelegramApiError(method, self._redact(description), code, wait)

    async def upload(
        self,
        method: str,
        params: dict[str, Any],
        field: str,
        filename: str,
        data: bytes,
        mime: str,
        *,
        seconds: float = 120.0,
    ) -> Any:
        """A method that takes a file (sendDocument, sendPhoto): multipart/form-data,
        ``data`` as ``field``; the ``result`` of the answer, errors as ``call``'s."""
        if self._session is None:
            raise TelegramApiError(method, "client is not open")
        form = aiohttp.FormData()
        for key, value in params.items():
            form.add_field(key, value if isinstance(value, str) else json.dumps(value))
        form.add_field(field, data, filename=filename, content_type=mime)
        url = f"{self._base}/bot{self._token}/{method}"
        try:
            async with self._session.post(
                url, data=form, timeout=aiohttp.ClientTimeout(total=seconds)
            ) as resp:
                answer = await resp.json(content_type=None)
                status = resp.status
        except (aiohttp.ClientError, TimeoutError, ValueError) as err:
            raise TelegramApiError(method, self._redact(f"request failed: {err!r}")) from err
        if not isinstance(answer, dict):
            raise TelegramApiError(method, f"unexpected answer (HTTP {status})", status)
        if answer.get("ok") is True:
            return answer.get("result")
        code = answer.get("error_code")
        description = self._redact(str(answer.get("description") or "no description"))
        raise TelegramApiError(method, description, code if isinstance(code, int) else None)

    async def download(self, file_id: str, limit: int, *, seconds: float = 120.0) -> bytes:
        """A file a message carries: ``getFile`` for its path, then its bytes from the
        file endpoint, refused past ``limit`` bytes (whatever the message declared)."""
        found = await self.call("getFile", {"file_id": file_id})
        path = found.get("file_path") if isinstance(found, dict) else None
        if not isinstance(path, str) or not path or ".." in path.split("/"):
            raise TelegramApiError("getFile", "answer carries no usable file_path")
        if self._session is None:
            raise TelegramApiError("getFile", "client is not open")
        url = f"{self._base}/file/bot{self._token}/{path}"
        try:
            async with self._session.get(url, timeout=aiohttp.ClientTimeout(total=seconds)) as resp:
                if resp.status != 200:
                    raise TelegramApiError("download", f"HTTP {resp.status}", resp.status)
                data = bytearray()
                async for chunk in resp.content.iter_chunked(65536):
                    data += chunk
                    if len(data) > limit:
                        raise TelegramApiError("download", f"file is over {limit} bytes")
        except (aiohttp.ClientError, TimeoutError) as err:
            raise TelegramApiError("download", self._redact(f"request failed: {err!r}")) from err
        return bytes(data)

    async def _post(
        self, method: str, url: str, params: dict[str, Any], seconds: float
    ) -> dict[str, Any]:
        assert self._session is not None
        try:
            async with self._session.post(
                url, json=params, timeout=aiohttp.ClientTimeout(total=seconds)
            ) as resp:
                data = await resp.json(content_type=None)
                status = resp.status
        except (aiohttp.ClientError, TimeoutError, ValueError) as err:
            raise TelegramApiError(method, self._redact(f"request failed: {err!r}")) from err
        if not isinstance(data, dict):
            raise TelegramApiError(method, f"unexpected answer (HTTP {status})", status)
        return data
