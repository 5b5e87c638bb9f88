"""OpenAI Responses: ``POST /v1/responses`` or ``/responses`` (Codex's only wire protocol).

Streamed as named SSE events, each with a ``sequence_number``: ``response.created``,
``response.in_progress``, per output item ``response.output_item.added`` ... item-specific
deltas ... ``response.output_item.done``, then ``response.completed`` carrying the usage.
A ``ToolCall`` with ``custom_input`` becomes a ``custom_tool_call`` (Codex's ``apply_patch``).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import ClassVar

from aiohttp import web

from tests.fakes.openai_chat import openai_error, openai_tools
from tests.fakes.steps import Part, Text
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

# emit(kind, **fields): send one named event with the next sequence_number.
Emit = Callable[..., Awaitable[None]]


def _item(part: Part, call: Call) -> JsonObject:
    if isinstance(part, Text):
        text = {"type": "output_text", "text": part.text, "annotations": [], "logprobs": []}
        return {
            "type": "message",
            "id": call.ids.new("msg_fake"),
            "status": "completed",
            "role": "assistant",
            "content": [text],
        }
    call_id = part.id or call.ids.new("call_fake")
    if part.custom_input is not None:
        return {
            "type": "custom_tool_call",
            "id": call.ids.new("ctc_fake"),
            "call_id": call_id,
            "name": part.name,
            "input": part.custom_input,
            "status": "completed",
        }
    return {
        "type": "function_call",
        "id": call.ids.new("fc_fake"),
        "call_id": call_id,
        "name": part.name,
        "arguments": arguments_of(part),
        "status": "completed",
    }


class OpenAIResponses(Dialect):
    name = "openai_responses"
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
        items = [_item(p, call) for p in parts]
        out = tokens(output_chars(parts))
        usage = {
            "input_tokens": call.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": call.input_tokens + out,
        }
        response: JsonObject = {
            "id": call.ids.new("resp_fake"),
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": call.model,
            "output": items,
            "usage": usage,
            "error": None,
            "incomplete_details": None,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
        if not stream:
            return web.json_response(response)

        resp = await start_sse(request)
        seq = itertools.count()

        async def emit(kind: str, **fields: object) -> None:
            await send_sse(resp, {"type": kind, "sequence_number": next(seq), **fields}, kind)

        pending = {**response, "status": "in_progress", "output": [], "usage": None}
        await emit("response.created", response=pending)
        await emit("response.in_progress", response=pending)
        for index, item in enumerate(items):
            await self._stream_item(emit, index, item)
        await emit("response.completed", response=response)
        await resp.write_eof()
        return resp

    @staticmethod
    async def _stream_item(emit: Emit, index: int, item: JsonObject) -> None:
        at = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            part = item["content"][0]
            await emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "content": []},
            )
            empty = {**part, "text": ""}
            await emit("response.content_part.added", **at, content_index=0, part=empty)
            for piece in chunks(part["text"]):
                await emit(
                    "response.output_text.delta", **at, content_index=0, delta=piece, logprobs=[]
                )
            await emit(
                "response.output_text.done", **at, content_index=0, text=part["text"], logprobs=[]
            )
            await emit("response.content_part.done", **at, content_index=0, part=part)
        elif item["type"] == "function_call":
            await emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            for piece in chunks(item["arguments"]):
                await emit("response.function_call_arguments.delta", **at, delta=piece)
            await emit(
                "response.function_call_arguments.done",
                **at,
                name=item["name"],
                arguments=item["arguments"],
            )
        else:  # custom_tool_call
            await emit(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "input": ""},
            )
            for piece in chunks(item["input"]):
                await emit("response.custom_tool_call_input.delta", **at, delta=piece)
            await emit("response.custom_tool_call_input.done", **at, input=item["input"])
        await emit("response.output_item.done", output_index=index, item=item)
