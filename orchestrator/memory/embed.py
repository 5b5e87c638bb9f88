"""Embeddings through the openai SDK, to any OpenAI-compatible ``/v1/embeddings``.

Vectors are normalised to unit length and packed as float32 bytes here, so everything
downstream (dedup, cosine, binary quantization) can rely on both.
"""

from __future__ import annotations

import math
import time
from array import array
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING

from core.errors import FetchError
from orchestrator.config import MemorySettings
from orchestrator.providers.chain import Attempt

if TYPE_CHECKING:
    from openai import AsyncOpenAI

BATCH = 64  # inputs per request: well under every provider's limit
CACHE = 256  # query embeddings kept: the same question is often asked twice in a row


class EmbeddingError(FetchError):
    pass


def pack(values: list[float]) -> bytes:
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return array("f", (v / norm for v in values)).tobytes()


def unpack(blob: bytes) -> list[float]:
    vec = array("f")
    vec.frombytes(blob)
    return vec.tolist()


def cosine(a: bytes, b: bytes) -> float:
    """Cosine of two packed unit vectors (used where sqlite-vec is not loaded)."""
    x, y = unpack(a), unpack(b)
    return sum(p * q for p, q in zip(x, y, strict=False)) if len(x) == len(y) else 0.0


class Embedder:
    def __init__(self, settings: MemorySettings, timeout: float = 30.0) -> None:
        if not settings.embedding_base_url:
            raise ValueError("no embedding endpoint configured")
        from openai import AsyncOpenAI  # imported only when memory embeds at all

        self.model = settings.embedding_model
        self.dims = settings.embedding_dimensions
        self.signature = f"{self.model}/{self.dims}"
        self._client: AsyncOpenAI = AsyncOpenAI(
            base_url=settings.embedding_base_url,
            api_key=settings.embedding_api_key or "not-needed",
            timeout=timeout,
            max_retries=1,
        )
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self.record: Callable[[Attempt], None] | None = None  # the cost ledger

    async def close(self) -> None:
        await self._client.close()

    def _spent(self, started: float, status: int, error: str = "", response: object = None) -> None:
        if self.record is None:
            return
        usage = getattr(response, "usage", None)
        tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        took = round((time.monotonic() - started) * 1000, 1)
        self.record(Attempt("embeddings", self.model, status, error, took, tokens, 0))

    async def embed(self, texts: list[str]) -> list[bytes]:
        import openai

        out: list[bytes] = []
        for start in range(0, len(texts), BATCH):
            batch = [t[:8000] or " " for t in texts[start : start + BATCH]]  # empty is refused
            started = time.monotonic()
            try:
                response = await self._client.embeddings.create(
                    model=self.model, input=batch, dimensions=self.dims
                )
            except openai.APIError as err:
                status = err.status_code if isinstance(err, openai.APIStatusError) else 0
                self._spent(started, status, _describe(err))
                raise EmbeddingError(f"embedding endpoint failed: {_describe(err)}") from err
            except (AttributeError, TypeError, ValueError, KeyError) as err:
                # The SDK parsing a 200 that is not embeddings (HTML, an error object).
                self._spent(started, 200, "not embeddings")
                raise EmbeddingError(
                    "embedding endpoint answered something that is not "
                    f"embeddings ({type(err).__name__})"
                ) from err
            self._spent(started, 200, response=response)
            out += self._vectors(response, len(batch))
        return out

    def _vectors(self, response: object, wanted: int) -> list[bytes]:
        """The packed vectors of one answer. A 200 can still be no answer (an error
        object, an HTML page, a proxy's notice): that is an EmbeddingError too, so memory
        falls back to keyword search instead of failing."""
        data = getattr(response, "data", None)
        if not isinstance(data, list):
            raise EmbeddingError(
                f"embedding endpoint answered without vectors: {_snippet(response)}"
            )
        try:
            rows = sorted(data, key=lambda d: int(d.index))
            vectors = [[float(v) for v in row.embedding] for row in rows]
        except (AttributeError, TypeError, ValueError) as err:
            raise EmbeddingError(f"embedding endpoint answered malformed vectors ({err})") from err
        if len(vectors) != wanted:
            raise EmbeddingError(f"asked for {wanted} embeddings, got {len(vectors)}")
        for vec in vectors:
            if len(vec) != self.dims:
                raise EmbeddingError(
                    f"{self.model} returns {len(vec)}-dimensional vectors; set "
                    f"memory.embedding_dimensions to {len(vec)}"
                )
        return [pack(vec) for vec in vectors]

    async def query(self, text: str) -> bytes:
        cached = self._cache.get(text)
        if cached is not None:
            self._cache.move_to_end(text)
            return cached
        (vec,) = await self.embed([text])
        self._cache[text] = vec
        if len(self._cache) > CACHE:
            self._cache.popitem(last=False)
        return vec


def _describe(err: Exception) -> str:
    import openai

    if isinstance(err, openai.APIConnectionError):
        return "could not connect"
    if isinstance(err, openai.APIStatusError):
        return f"HTTP {err.status_code}"
    return type(err).__name__


def _snippet(response: object) -> str:
    error = getattr(response, "error", None)  # {"error": {...}} under HTTP 200
    text = str(error if error is not None else response)
    return " ".join(text.split())[:120] or "an empty answer"
