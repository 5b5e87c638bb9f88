"""What the four dialect modules share: the recorded request, ids, SSE writing, the base class.

A dialect turns resolved assistant *parts* (:class:`Text` / :class:`ToolCall`) into one
vendor's response, streamed or not, and knows that vendor's error body, credential header and
how it lists the tools a request offers. Everything about the script (order, control steps,
file-writing resolution) lives in :mod:`tests.fakes.model_server` and :mod:`tests.fakes.resolve`.
"""

from __future__ import annotations

import itertools
import json
import secrets
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from aiohttp import web

from tests.fakes.steps import Part, Text, ToolCall

JsonObject = dict[str, Any]


class ScriptError(Exception):
    """The script asks for something this dialect cannot express (a bug in the test)."""


@dataclass(frozen=True)
class Recorded:
    """One HTTP request as the fake received it (model calls, side calls and 404s alike)."""

    dialect: str  # "anthropic" | "openai_chat" | "openai_responses" | "gemini" | "unknown"
    path: str  # without the query string
    headers: dict[str, str]  # lower-case keys
    body: JsonObject | None  # None when the body was not a JSON object
    raw: bytes
    query: dict[str, str] = field(default_factory=dict)
    method: str = "POST"


class Ids:
    """Fresh ids per server. Unique ids matter: Claude Code merges assistant messages that
    share a message id, which reorders a resumed transcript."""

    def __init__(self) -> None:
        self._counter = itertools.count(1)

    def new(self, prefix: str) -> str:
        return f"{prefix}{next(self._counter):04d}{secrets.token_hex(6)}"


def tokens(chars: int) -> int:
    """A plausible token count for ``chars`` characters (usage numbers only need to be sane)."""
    return max(1, chars // 4)


def output_chars(parts: list[Part]) -> int:
    return sum(len(p.text) if isinstance(p, Text) else len(arguments_of(p)) for p in parts)


def arguments_of(call: ToolCall) -> str:
    """The JSON string of a call's arguments, or the deliberately broken raw string."""
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.args)


def chunks(text: str, pieces: int = 2) -> list[str]:
    """Split text into a few deltas so consumers must really concatenate a stream."""
    if len(text) < 2 * pieces:
        return [text]
    size = -(-len(text) // pieces)
    return [text[i : i + size] for i in range(0, len(text), size)]


async def start_sse(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(
        status=200,
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"},
    )
    await resp.prepare(request)
    return resp


async def send_sse(
    resp: web.StreamResponse, data: JsonObject | str, event: str | None = None
) -> None:
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    await resp.write(f"{head}data: {payload}\n\n".encode())


@dataclass(frozen=True)
class OfferedTool:
    """A tool as the request offered it."""

    kind: str  # "function" (JSON arguments) or "custom" (freeform input)
    schema: Mapping[str, Any] | None = None  # JSON schema of the arguments, when given


@dataclass(frozen=True)
class Call:
    """One model request being answered."""

    body: JsonObject
    raw: bytes
    model: str
    ids: Ids

    @property
    def input_tokens(self) -> int:
        return tokens(len(self.raw))


class Dialect(ABC):
    """One vendor wire format."""

    name: ClassVar[str]
    #: Tool used for WriteFile / EditFile when the request offers none that we know.
    default_write_tool: ClassVar[str]
    default_edit_tool: ClassVar[str]

    @abstractmethod
    def offered_tools(self, body: JsonObject) -> Mapping[str, OfferedTool]:
        """The tools the request offers, by name."""

    @abstractmethod
    def credential(self, request: web.Request) -> str | None:
        """The API key the client sent, in this vendor's header."""

    @abstractmethod
    def error_body(self, status: int, message: str) -> JsonObject:
        """The vendor's JSON error body."""

    @abstractmethod
    def model_of(self, request: web.Request, body: JsonObject) -> str: ...

    @abstractmethod
    def is_stream(self, request: web.Request, body: JsonObject) -> bool: ...

    @abstractmethod
    async def reply(
        self, request: web.Request, call: Call, parts: list[Part], stream: bool
    ) -> web.StreamResponse:
        """Answer with one assistant turn made of ``parts``."""

    def side_reply(self, request: web.Request, body: JsonObject) -> web.Response | None:
        """Answer calls that are not conversation turns (and so consume no script step)."""
        return None


def bearer(request: web.Request) -> str | None:
    auth = request.headers.get("Authorization", "")
    return auth[len("Bearer ") :] if auth.startswith("Bearer ") else None
