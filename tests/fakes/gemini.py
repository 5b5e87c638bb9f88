"""Gemini: ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` and ``:generateContent``.

Gemini CLI streams every conversation turn. Its non-stream structured-output calls (the model
router's classifier when ``-m`` is not given, and similar helper checks) ask for JSON with
``generationConfig.responseJsonSchema`` / ``responseSchema`` / ``responseMimeType``; the fake
answers those from the schema itself, without consuming a script step, so a script only
describes the conversation.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping
from typing import ClassVar

from aiohttp import web

from tests.fakes.steps import Part, Text
from tests.fakes.wire import (
    Call,
    Dialect,
    JsonObject,
    OfferedTool,
    ScriptError,
    chunks,
    output_chars,
    send_sse,
    start_sse,
    tokens,
)

PATH = re.compile(
    r"^/(?:v1|v1beta|v1alpha)/models/(?P<model>[^/:]+):(?P<method>streamGenerateContent|generateContent)$"
)

_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

# Known helper schemas get answers that steer the CLI the boring way: a low complexity
# score routes to the flash model.
_KNOWN_VALUES: dict[str, object] = {
    "complexity_reasoning": "fake classifier: simple task",
    "complexity_score": 1,
}


def sample_from_schema(schema: Mapping[str, object], key: str = "") -> object:
    """A minimal value that validates against a (JSON or Gemini-style) schema."""
    if key in _KNOWN_VALUES:
        return _KNOWN_VALUES[key]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    kind = str(schema.get("type", "object")).lower()  # Gemini schemas spell types "OBJECT"
    if kind == "object":
        props = schema.get("properties")
        items = props.items() if isinstance(props, Mapping) else []
        return {name: sample_from_schema(sub, name) for name, sub in items}
    minimum = schema.get("minimum")
    if kind == "integer":
        return int(minimum) if isinstance(minimum, int | float) else 1
    if kind == "number":
        return float(minimum) if isinstance(minimum, int | float) else 1.0
    return {"string": "fake", "boolean": False, "array": []}.get(kind)


def wants_json(body: JsonObject) -> bool:
    config = body.get("generationConfig") or {}
    return bool(
        config.get("responseJsonSchema")
        or config.get("responseSchema")
        or config.get("responseMimeType") == "application/json"
    )


class Gemini(Dialect):
    name = "gemini"
    default_write_tool: ClassVar[str] = "write_file"
    default_edit_tool: ClassVar[str] = "replace"

    def offered_tools(self, body: JsonObject) -> Mapping[str, OfferedTool]:
        found: dict[str, OfferedTool] = {}
        for tool in body.get("tools") or []:
            for decl in tool.get("functionDeclarations") or tool.get("function_declarations") or []:
                schema = decl.get("parametersJsonSchema") or decl.get("parameters")
                found[decl["name"]] = OfferedTool("function", schema)
        return found

    def credential(self, request: web.Request) -> str | None:
        return request.headers.get("x-goog-api-key") or request.query.get("key")

    def error_body(self, status: int, message: str) -> JsonObject:
        return {
            "error": {"code": status, "message": message, "status": _STATUS.get(status, "UNKNOWN")}
        }

    def model_of(self, request: web.Request, body: JsonObject) -> str:
        match = PATH.match(request.path)
        return match["model"] if match else "gemini-fake"

    def is_stream(self, request: web.Request, body: JsonObject) -> bool:
        return request.path.endswith(":streamGenerateContent")

    def side_reply(self, request: web.Request, body: JsonObject) -> web.Response | None:
        if self.is_stream(request, body) or not wants_json(body):
            return None
        config = body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
        text = json.dumps(sample_from_schema(schema))
        model = self.model_of(request, body)
        payload = self._payload([{"text": text}], model, secrets.token_hex(8), final=True)
        payload["usageMetadata"] = _usage(tokens(len(request.path)), tokens(len(text)))
        return web.json_response(payload)

    async def reply(
        self, request: web.Request, call: Call, parts: list[Part], stream: bool
    ) -> web.StreamResponse:
        wire: list[JsonObject] = []
        for part in parts:
            if isinstance(part, Text):
                wire.extend({"text": c} for c in (chunks(part.text) if stream else [part.text]))
            elif part.raw_arguments is not None:
                raise ScriptError("Gemini function call args are a JSON object; no raw_arguments")
            else:
                wire.append({"functionCall": {"name": part.name, "args": part.args}})
        usage = _usage(call.input_tokens, tokens(output_chars(parts)))
        response_id = call.ids.new("gemini_fake")
        if not stream:
            payload = self._payload(wire, call.model, response_id, final=True)
            return web.json_response({**payload, "usageMetadata": usage})

        resp = await start_sse(request)
        # Every wire part but the last in its own event; the last event ends the turn.
        for piece in wire[:-1]:
            await send_sse(resp, self._payload([piece], call.model, response_id, final=False))
        last = self._payload(wire[-1:], call.model, response_id, final=True)
        await send_sse(resp, {**last, "usageMetadata": usage})
        await resp.write_eof()
        return resp

    @staticmethod
    def _payload(parts: list[JsonObject], model: str, response_id: str, final: bool) -> JsonObject:
        candidate: JsonObject = {"content": {"role": "model", "parts": parts}, "index": 0}
        if final:
            candidate["finishReason"] = "STOP"  # also for function calls, as Gemini does
        return {"candidates": [candidate], "modelVersion": model, "responseId": response_id}


def _usage(prompt: int, output: int) -> JsonObject:
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": output,
        "totalTokenCount": prompt + output,
    }
