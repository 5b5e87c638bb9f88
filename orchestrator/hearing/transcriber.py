"""Audio -> text through the ``transcription:`` chain of OpenAI-compatible endpoints.

Per call, the endpoints are tried in order, each with its keys in turn (``KeyRing``: a 401
parks a key for good, a 429 tries the endpoint's next key); anything else that fails (no
answer, a timeout, an error status, an answer without text) moves on to the next
endpoint. Every request, good or failed, is recorded in the cost ledger (source
``transcribe``, priced by the minute of audio). The SDK's own retries are off.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.errors import FetchError
from orchestrator.hearing.settings import TranscriptionEntry, TranscriptionSettings
from orchestrator.providers.keys import KeyRing
from orchestrator.store.usage import UsageRow

if TYPE_CHECKING:
    from openai import AsyncOpenAI

log = logging.getLogger(__name__)
SOURCE = "transcribe"
_sdk_imported = False  # set once a thread finished importing the openai SDK


async def _import_sdk() -> None:
    """The openai SDK (~0.5 s of CPU) imported in a thread the first time, not on the
    event loop, where every chat would wait for it; at once after that."""
    global _sdk_imported
    if not _sdk_imported:
        await asyncio.to_thread(importlib.import_module, "openai")
        _sdk_imported = True


class TranscriptionFailed(FetchError):
    """Every endpoint failed; the message names each and what it answered."""


@dataclass(frozen=True, slots=True)
class Heard:
    text: str
    provider: str
    model: str
    latency_ms: float


@dataclass
class _Endpoint:
    entry: TranscriptionEntry
    keys: KeyRing
    clients: dict[str, AsyncOpenAI] = field(default_factory=dict)

    def client(self, key: str, timeout: float) -> AsyncOpenAI:
        client = self.clients.get(key)
        if client is None:
            from openai import AsyncOpenAI  # only when a voice note comes

            client = AsyncOpenAI(
                base_url=self.entry.base_url,
                api_key=key or "not-needed",
                timeout=timeout,
                max_retries=0,
            )
            self.clients[key] = client
        return client


class Transcriber:
    def __init__(
        self,
        settings: TranscriptionSettings,
        *,
        record: Callable[[UsageRow], Any] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.record = record  # the cost ledger's record (set by the app)
        self._monotonic = monotonic
        self._endpoints = [_Endpoint(e, KeyRing(e.name, e.api_keys)) for e in settings.entries()]

    @property
    def configured(self) -> bool:
        return bool(self._endpoints)

    async def close(self) -> None:
        for endpoint in self._endpoints:
            for client in endpoint.clients.values():
                await client.close()
            endpoint.clients.clear()

    async def transcribe(
        self, data: bytes, filename: str, mime: str, seconds: float, *, session: str = ""
    ) -> Heard:
        said: list[str] = []
        for endpoint in self._endpoints:
            while (key := endpoint.keys.current()) is not None:
                heard, status, error = await self._once(endpoint, key, data, filename, mime)
                self._record(endpoint.entry, heard, status, error, seconds, session)
                if heard is not None:
                    return heard
                said.append(f"{endpoint.entry.name}: {endpoint.keys.label(key)}{error}")
                if status == 401:
                    endpoint.keys.park(key, "HTTP 401 (unauthorised)")
                    continue
                if status == 429 and endpoint.keys.rotate():
                    continue
                break
            else:
                said.append(f"{endpoint.entry.name}: every key parked (401)")
        raise TranscriptionFailed("every transcription endpoint failed: " + "; ".join(said))

    async def _once(
        self, endpoint: _Endpoint, key: str, data: bytes, filename: str, mime: str
    ) -> tuple[Heard | None, int, str]:
        await _import_sdk()
        import openai

        entry = endpoint.entry
        model = entry.model or self.settings.model
        timeout = entry.timeout or self.settings.timeout_seconds
        started = self._monotonic()
        kwargs: dict[str, Any] = {"model": model, "file": (filename, data, mime)}
        if self.settings.language:
            kwargs["language"] = self.settings.language
        create: Any = endpoint.client(key, timeout).audio.transcriptions.create
        try:
            answer = await create(**kwargs)
        except openai.APITimeoutError:
            return None, 0, f"timed out after {timeout:g}s"
        except openai.APIConnectionError:
            return None, 0, "could not be reached"
        except openai.APIStatusError as err:
            return None, err.status_code, f"answered HTTP {err.status_code}"
        except (ValueError, TypeError, KeyError, AttributeError):
            return None, 200, "answered something that is not a transcription"
        text = answer if isinstance(answer, str) else getattr(answer, "text", None)
        if not isinstance(text, str):
            return None, 200, "answered something that is not a transcription"
        latency = round((self._monotonic() - started) * 1000, 1)
        return Heard(text.strip(), entry.name, model, latency), 200, ""

    def _record(
        self,
        entry: TranscriptionEntry,
        heard: Heard | None,
        status: int,
        error: str,
        seconds: float,
        session: str,
    ) -> None:
        if self.record is None:
            return
        paid = heard is not None
        try:
            self.record(
                UsageRow(
                    source=SOURCE,
                    model=entry.model or self.settings.model,
                    provider=entry.name,
                    cost=entry.usd_per_minute * seconds / 60 if paid else 0.0,
                    latency_ms=heard.latency_ms if heard is not None else 0.0,
                    status=status,
                    error=error,
                    session=session,
                )
            )
        except Exception:  # the ledger must never lose the owner's words
            log.exception("transcription cost not recorded")
