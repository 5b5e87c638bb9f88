"""``POST /v1/embeddings`` for the scripted model server: OpenAI's wire format, with
deterministic vectors that carry enough meaning for semantic search to be exercised.

A text's vector is a sum of hashed features, normalised:

* each *concept* it mentions (a small synonym table: "postgres" and "database" share
  one), weight 1.0 — so texts about the same thing are near without sharing a word,
  which keyword search cannot do;
* each word stem, weight 0.6 — shared words bring texts together too;
* character trigrams of each word, weight 0.15 — "deploying" is near "deployment".

Each feature lands on ``SPREAD`` dimensions picked by a hash, with hashed signs, so
unrelated texts are near-orthogonal at any dimension a request asks for.

    srv.embeddings.fail = 503   # answer errors until set back to None
    srv.embeddings.bad_200 = "error"  # HTTP 200 that is no answer: "error" (an error
                                      # object), "html" (a portal's page); None: off
    srv.embeddings.calls        # inputs embedded so far
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import struct
from typing import Any

from aiohttp import web

DEFAULT_DIMS = 1536
SPREAD = 8
_WORD = re.compile(r"[a-z0-9]+")
SYNONYMS: tuple[tuple[str, ...], ...] = (
    ("database", "db", "postgres", "postgresql", "sqlite", "mysql", "datastore"),
    ("car", "automobile", "vehicle", "sedan"),
    ("dog", "puppy", "canine", "hound"),
    ("deploy", "release", "ship", "rollout", "publish"),
    ("bug", "defect", "fault", "glitch"),
    ("test", "pytest", "unittest", "spec"),
    ("indent", "indentation", "tab", "whitespace"),
    ("fast", "quick", "speedy", "rapid"),
    ("repository", "repo", "codebase"),
    ("prefer", "like", "favour", "favor", "love"),
    ("phone", "mobile", "smartphone", "whatsapp"),
    ("build", "compile", "ci"),
    ("money", "cost", "price", "budget"),
)
CONCEPT = {word: group[0] for group in SYNONYMS for word in group}


def stem(word: str) -> str:
    for suffix in ("ations", "ation", "ments", "ment", "ings", "ing", "ies", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def features(text: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for word in _WORD.findall(text.lower()):
        root = stem(word)
        concept = CONCEPT.get(word) or CONCEPT.get(root)
        if concept:
            found["c:" + concept] = found.get("c:" + concept, 0.0) + 1.0
        found["w:" + root] = found.get("w:" + root, 0.0) + 0.6
        padded = f"^{word}$"
        for i in range(len(padded) - 2):
            key = "t:" + padded[i : i + 3]
            found[key] = found.get(key, 0.0) + 0.15
    return found


def embed(text: str, dims: int = DEFAULT_DIMS) -> list[float]:
    vec = [0.0] * dims
    for feature, weight in features(text).items():
        digest = hashlib.blake2b(feature.encode(), digest_size=2 * SPREAD * 4).digest()
        for j in range(SPREAD):
            index, sign = struct.unpack_from("<II", digest, 8 * j)
            vec[index % dims] += weight if sign & 1 else -weight
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0:  # no words at all: a fixed unit vector, not NaNs
        vec[0], norm = 1.0, 1.0
    return [v / norm for v in vec]


class FakeEmbeddings:
    def __init__(self) -> None:
        self.fail: int | None = None
        self.bad_200: str | None = None
        self.calls = 0
        self.requests: list[dict[str, Any]] = []

    async def handle(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "body is not JSON")
        if not isinstance(body, dict):
            return _error(400, "body is not a JSON object")
        self.requests.append(body)
        if self.fail is not None:
            return _error(self.fail, "fake: embeddings are down")
        if self.bad_200 == "html":
            return web.Response(
                text="<html><body>Please log in</body></html>", content_type="text/html"
            )
        if self.bad_200 == "error":
            return web.json_response(
                {"error": {"message": "fake: model overloaded", "type": "server_error"}}
            )
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if (
            not isinstance(inputs, list)
            or not inputs
            or not all(isinstance(i, str) for i in inputs)
        ):
            return _error(400, "input must be a string or a list of strings")
        dims = int(body.get("dimensions") or DEFAULT_DIMS)
        base64_out = body.get("encoding_format") == "base64"
        data = []
        for index, text in enumerate(inputs):
            vec = embed(text, dims)
            value: Any = (
                base64.b64encode(struct.pack(f"<{dims}f", *vec)).decode() if base64_out else vec
            )
            data.append({"object": "embedding", "index": index, "embedding": value})
        self.calls += len(inputs)
        used = sum(max(1, len(t) // 4) for t in inputs)
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": str(body.get("model", "fake-embedding")),
                "usage": {"prompt_tokens": used, "total_tokens": used},
            }
        )


def _error(status: int, message: str) -> web.Response:
    return web.json_response(
        {"error": {"message": message, "type": "invalid_request_error", "code": status}},
        status=status,
    )
