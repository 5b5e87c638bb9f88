"""OpenAI Chat Completions: ``POST /v1/chat/completions`` or ``/chat/completions``.

Non-stream is what ``AsyncOpenAI().chat.completions.create()`` uses; Copilot CLI streams with
``stream_options.include_usage`` and so expects a last chunk with empty ``choices`` and the
usage, before ``data: [DONE]``. A ``ToolCall`` with ``custom_input`` becomes a
``type:"custom"`` tool call (Copilot's ``apply_patch``).
"""

from __future__ import annotations

import time
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
    401: "invalid_request_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_exceeded",
}
_ERROR_CODES = {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}


def openai_error(status: int, message: str) -> JsonObject:
    """The error body shared by Chat Completions and Responses."""
    return {
        "error": {
            "message": message,
            "type": _ERROR_TYPES.get(status, "server_error"),
            "param": None,
            "code": _ERROR_CODES.get(status),
        }
    }


def openai_tools(body: JsonObject) -> Mapping[str, OfferedTool]:
    """Tools offered in a Chat or Responses request (function, custom; nested or flat)."""
    found: dict[str, OfferedTool] = {}
    for tool in body.get("tools") or []:
        kind = str(tool.get("type", "function"))
        # Chat nests {"type":"function","function":{"name":…}}; Responses is flat.
        spec = tool.get(kind) if isinstance(tool.get(kind), dict) else tool
        if spec.get("name"):
            found[str(spec["name"])] = OfferedTool(kind, spec.get("parameters"))
    return found


def _tool_call(call: ToolCall, call_id: str) -> JsonObject:
    if call.custom_input is not None:
        return {
            "id": call_id,
            "type": "custom",
            "custom": {"name": call.name, "input": call.custom_input},
        }
    fn = {"name": call.name, "arguments": arguments_of(call)}
    return {"id": call_id, "type": "function", "function": fn}


class OpenAIChat(Dialect):
    name = "openai_chat"
    default_write_tool: ClassVar[str] = "apply_patch"
    default_edit_tool: ClassVar[str] = "apply_patch"

    def offered_tools(self, body: JsonObject) -> Mapping[str, OfferedTool]:
        return openai_tools(body)

    def credential(self, request: web.Request) -> str | None:
        return bearer(request)

    def error_body(self, status: int, message: str) -> JsonObject:
        return openai_error(status, message)

    def model_of(self, request: web.Request, body: JsonObject) -> str:
        return str(body.get("model", "gpt-fake"))

    def is_stream(self, request: web.Request, body: JsonObject) -> bool:
        return bool(body.get("stream"))

    async def reply(
        self, request: web.Request, call: Call, parts: list[Part], stream: bool
    ) -> web.StreamResponse:
        text = "".join(p.text for p in parts if isinstance(p, Text))
        calls = [(p, p.id or call.ids.new("call_fake")) for p in parts if isinstance(p, ToolCall)]
        finish = "tool_calls" if calls else "stop"
        completion_tokens = tokens(output_chars(parts))
        usage = {
            "prompt_tokens": call.input_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": call.input_tokens + completion_tokens,
        }
        head = {
            "id": call.ids.new("chatcmpl-fake"),
            "created": int(time.time()),
            "model": call.model,
        }
        if not stream:
            message: JsonObject = {"role": "assistant", "content": text or None, "refusal": None}
            if calls:
                message["tool_calls"] = [_tool_call(c, cid) for c, cid in calls]
            choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
            return web.json_response(
                {**head, "object": "chat.completion", "choices": [choice], "usage": usage}
            )

        include_usage = bool((call.body.get("stream_options") or {}).get("include_usage"))
        resp = await start_sse(request)

        async def chunk(delta: JsonObject, finish_reason: str | None = None) -> None:
            choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
            data: JsonObject = {**head, "object": "chat.completion.chunk", "choices": [choice]}
            if include_usage:
                data["usage"] = None  # only the extra last chunk carries usage
            await send_sse(resp, data)

        await chunk({"role": "assistant", "content": ""})
        for piece in chunks(text) if text else []:
            await chunk({"content": piece})
        for index, (tc, cid) in enumerate(calls):
            for delta in self._call_deltas(index, tc, cid):
                await chunk({"tool_calls": [delta]})
        await chunk({}, finish)
        if include_usage:
            await send_sse(
                resp, {**head, "object": "chat.completion.chunk", "choices": [], "usage": usage}
            )
        await send_sse(resp, "[DONE]")
        await resp.write_eof()
        return resp

    @staticmethod
    def _call_deltas(index: int, tc: ToolCall, call_id: str) -> list[JsonObject]:
        if tc.custom_input is not None:
            # Custom calls arrive whole in one delta, as Copilot was seen to accept.
            return [{"index": index, **_tool_call(tc, call_id)}]
        # Like OpenAI: id and name first with empty arguments, then argument fragments.
        first = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": tc.name, "arguments": ""},
        }
        rest = [{"index": index, "function": {"arguments": c}} for c in chunks(arguments_of(tc))]
        return [first, *rest]
