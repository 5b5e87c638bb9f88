"""Anthropic Messages: ``POST /v1/messages`` (Claude Code adds ``?beta=true``).

Streaming order, as Claude Code and the anthropic SDK expect: ``message_start`` ->
per block ``content_block_start`` / ``content_block_delta`` (``text_delta`` or
``input_json_delta``) / ``content_block_stop`` -> ``message_delta`` (stop_reason, usage) ->
``message_stop``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import ClassVar

from aiohttp import web

from tests.fakes.steps import Part, Text, ToolCall
from tests.fakes.wire import (
    Call,
    Dialect,
    JsonObject,
    OfferedTool,
    arguments_of,
    bearer,
    chunks,
    output_chars,
    send_sse,
    start_sse,
    tokens,
)

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _block(part: Part, call: Call) -> JsonObject:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if part.raw_arguments is not None:
        tool_input: object = part.raw_arguments  # deliberately not an object
    else:
        tool_input = part.args
    return {
        "type": "tool_use",
        "id": part.id or call.ids.new("toolu_fake"),
        "name": part.name,
        "input": tool_input,
    }


def _usage(call: Call, output_tokens: int) -> JsonObject:
    return {
        "input_tokens": call.input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


class Anthropic(Dialect):
    name = "anthropic"
    default_write_tool: ClassVar[str] = "Write"
    default_edit_tool: ClassVar[str] = "Edit"

    def offered_tools(self, body: JsonObject) -> Mapping[str, OfferedTool]:
        tools = body.get("tools") or []
        return {
            t["name"]: OfferedTool("function", t.get("input_schema")) for t in tools if "name" in t
        }

    def credential(self, request: web.Request) -> str | None:
        # x-api-key for API keys; Bearer when ANTHROPIC_AUTH_TOKEN is used instead.
        return request.headers.get("x-api-key") or bearer(request)

    def error_body(self, status: int, message: str) -> JsonObject:
        kind = _ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def model_of(self, request: web.Request, body: JsonObject) -> str:
        return str(body.get("model", "claude-fake"))

    def is_stream(self, request: web.Request, body: JsonObject) -> bool:
        return bool(body.get("stream"))

    def side_reply(self, request: web.Request, body: JsonObject) -> web.Response | None:
        if request.path.endswith("/count_tokens"):
            return web.json_response({"input_tokens": tokens(len(json.dumps(body)))})
        return None

    async def reply(
        self, request: web.Request, call: Call, parts: list[Part], stream: bool
    ) -> web.StreamResponse:
        blocks = [_block(p, call) for p in parts]
        stop = "tool_use" if any(isinstance(p, ToolCall) for p in parts) else "end_turn"
        out_tokens = tokens(output_chars(parts))
        message = {
            "id": call.ids.new("msg_fake"),
            "type": "message",
            "role": "assistant",
            "model": call.model,
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": _usage(call, out_tokens),
        }
        if not stream:
            return web.json_response(message)

        resp = await start_sse(request)
        start = {**message, "content": [], "stop_reason": None, "usage": _usage(call, 1)}
        await send_sse(resp, {"type": "message_start", "message": start}, "message_start")
        for index, (part, block) in enumerate(zip(parts, blocks, strict=True)):
            await self._stream_block(resp, index, part, block)
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": out_tokens},
        }
        await send_sse(resp, delta, "message_delta")
        await send_sse(resp, {"type": "message_stop"}, "message_stop")
        await resp.write_eof()
        return resp

    async def _stream_block(
        self, resp: web.StreamResponse, index: int, part: Part, block: JsonObject
    ) -> None:
        if isinstance(part, Text):
            opening: JsonObject = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": c} for c in chunks(part.text)]
        else:
            opening = {**block, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": c} for c in chunks(arguments_of(part))
            ]
        await send_sse(
            resp,
            {"type": "content_block_start", "index": index, "content_block": opening},
            "content_block_start",
        )
        for delta in deltas:
            await send_sse(
                resp,
                {"type": "content_block_delta", "index": index, "delta": delta},
                "content_block_delta",
            )
        await send_sse(resp, {"type": "content_block_stop", "index": index}, "content_block_stop")
