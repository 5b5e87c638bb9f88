"""ScriptedModelServer against real clients: the openai SDK, and raw HTTP for the wire shapes
(no anthropic or google SDK is installed; the real CLIs in test_real_clis.py cover those)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp
import openai
import pytest
from openai.types.chat import (
    ChatCompletionMessageCustomToolCall,
    ChatCompletionMessageFunctionToolCall,
)
from openai.types.responses import (
    ResponseCompletedEvent,
    ResponseCustomToolCall,
    ResponseFunctionToolCall,
)

from tests.fakes import patches
from tests.fakes.model_server import (
    Delay,
    EditFile,
    Error,
    Garbage,
    Hang,
    ScriptedModelServer,
    Text,
    ToolCall,
    Turn,
    WriteFile,
)

GEMINI_STREAM = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
TOOLS_CHAT: Any = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
]


def sdk(srv: ScriptedModelServer) -> openai.AsyncOpenAI:
    # max_retries=0: an Error step must surface as one request, not the SDK's retries.
    return openai.AsyncOpenAI(base_url=srv.url + "/v1", api_key="x", max_retries=0)


async def post(
    srv: ScriptedModelServer, path: str, body: dict[str, Any], headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    """POST and return (status, JSON body) or (status, [(event, data), ...]) for SSE."""
    async with (
        aiohttp.ClientSession() as session,
        session.post(srv.url + path, json=body, headers=headers or {}) as resp,
    ):
        text = await resp.text()
        if resp.content_type != "text/event-stream":
            return resp.status, json.loads(text)
        events = []
        for block in text.split("\n\n"):
            fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
            if "data" in fields:
                data = fields["data"]
                events.append((fields.get("event"), data if data == "[DONE]" else json.loads(data)))
        return resp.status, events


# -- OpenAI Chat Completions through the SDK ---------------------------------------------------


async def test_chat_tool_call_then_text_non_stream() -> None:
    async with ScriptedModelServer() as srv:
        srv.script(ToolCall("get_weather", {"city": "Paris"}), Text("Sunny"))
        client = sdk(srv)
        messages: list[Any] = [{"role": "user", "content": "weather?"}]
        first = await client.chat.completions.create(
            model="gpt-test", messages=messages, tools=TOOLS_CHAT
        )
        second = await client.chat.completions.create(
            model="gpt-test", messages=messages, tools=TOOLS_CHAT
        )
        await client.close()

    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls is not None
    call = choice.message.tool_calls[0]
    assert isinstance(call, ChatCompletionMessageFunctionToolCall)
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    assert first.usage is not None and first.usage.total_tokens > 0
    assert second.choices[0].message.content == "Sunny"
    assert second.choices[0].finish_reason == "stop"
    assert first.id != second.id
    assert [r.dialect for r in srv.requests] == ["openai_chat", "openai_chat"]
    assert srv.requests[0].path == "/v1/chat/completions"
    assert srv.requests[0].headers["authorization"] == "Bearer x"
    assert srv.requests[0].body is not None and srv.requests[0].body["model"] == "gpt-test"


async def test_chat_custom_tool_call_non_stream() -> None:
    patch = patches.add_file("hello.txt", "hi\n")
    async with ScriptedModelServer() as srv:
        srv.script(ToolCall("apply_patch", custom_input=patch))
        client = sdk(srv)
        done = await client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "x"}]
        )
        await client.close()
    assert done.choices[0].message.tool_calls is not None
    call = done.choices[0].message.tool_calls[0]
    assert isinstance(call, ChatCompletionMessageCustomToolCall)
    assert call.custom.name == "apply_patch"
    assert call.custom.input == patch


async def test_chat_invalid_json_arguments_arrive_raw() -> None:
    async with ScriptedModelServer() as srv:
        srv.script(ToolCall("get_weather", raw_arguments="{not json"))
        client = sdk(srv)
        done = await client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "x"}], tools=TOOLS_CHAT
        )
        await client.close()
    assert done.choices[0].message.tool_calls is not None
    call = done.choices[0].message.tool_calls[0]
    assert isinstance(call, ChatCompletionMessageFunctionToolCall)
    assert call.function.arguments == "{not json"


@pytest.mark.parametrize(
    ("status", "exc"),
    [
        (500, openai.InternalServerError),
        (401, openai.AuthenticationError),
        (429, openai.RateLimitError),
    ],
)
async def test_chat_error_raises(status: int, exc: type[openai.APIStatusError]) -> None:
    async with ScriptedModelServer() as srv:
        srv.script(Error(status, "boom"))
        client = sdk(srv)
        with pytest.raises(exc) as info:
            await client.chat.completions.create(
                model="gpt-test", messages=[{"role": "user", "content": "x"}]
            )
        await client.close()
    assert info.value.status_code == status
    assert "boom" in info.value.message
    assert len(srv.requests) == 1


async def test_chat_garbage_is_not_a_completion() -> None:
    async with ScriptedModelServer() as srv:
        srv.script(Garbage())
        client = sdk(srv)
        with pytest.raises((openai.APIError, ValueError)):
            await client.chat.completions.create(
                model="gpt-test", messages=[{"role": "user", "content": "x"}]
            )
        await client.close()


async def test_chat_stream_with_usage_and_tool_call() -> None:
    async with ScriptedModelServer() as srv:
        srv.script(Turn(Text("Checking the weather"), ToolCall("get_weather", {"city": "Oslo"})))
        client = sdk(srv)
        stream = await client.chat.completions.create(
            model="gpt-test",
            messages=[{"role": "user", "content": "x"}],
            tools=TOOLS_CHAT,
            stream=True,
            stream_options={"include_usage": True},
        )
        text, args, finish, usage = "", "", None, None
        async for chunk in stream:
            usage = chunk.usage or usage
            for choice in chunk.choices:
                text += choice.delta.content or ""
                for call in choice.delta.tool_calls or []:
                    args += call.function.arguments or "" if call.function else ""
                finish = choice.finish_reason or finish
        await client.close()
    assert text == "Checking the weather"
    assert json.loads(args) == {"city": "Oslo"}
    assert finish == "tool_calls"
    assert usage is not None and usage.prompt_tokens > 0


async def test_default_answer_when_script_is_empty() -> None:
    async with ScriptedModelServer() as srv:
        client = sdk(srv)
        messages: list[Any] = [{"role": "user", "content": "x"}]
        first = await client.chat.completions.create(model="m", messages=messages)
        srv.default = Text("custom default")
        second = await client.chat.completions.create(model="m", messages=messages)
        await client.close()
    assert first.choices[0].message.content == "ok"
    assert second.choices[0].message.content == "custom default"


# -- OpenAI Responses through the SDK ----------------------------------------------------------


async def test_responses_stream_events_and_custom_tool_call() -> None:
    patch = patches.add_file("a.txt", "a\n")
    async with ScriptedModelServer() as srv:
        srv.script(Turn(Text("Writing"), ToolCall("apply_patch", custom_input=patch)))
        client = sdk(srv)
        stream = await client.responses.create(model="gpt-5.5", input="x", stream=True)
        events = [event async for event in stream]
        await client.close()
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds
    assert "response.custom_tool_call_input.delta" in kinds
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert isinstance(events[-1], ResponseCompletedEvent)
    final = events[-1].response
    assert final.usage is not None and final.usage.total_tokens > 0
    assert final.output_text == "Writing"
    custom = final.output[1]
    assert isinstance(custom, ResponseCustomToolCall)
    assert custom.input == patch


async def test_responses_non_stream_function_call() -> None:
    async with ScriptedModelServer() as srv:
        srv.script(ToolCall("exec_command", {"cmd": "ls"}), Text("listed"))
        client = sdk(srv)
        first = await client.responses.create(model="gpt-5.5", input="x")
        second = await client.responses.create(model="gpt-5.5", input="x")
        await client.close()
    call = first.output[0]
    assert isinstance(call, ResponseFunctionToolCall)
    assert json.loads(call.arguments) == {"cmd": "ls"}
    assert second.output_text == "listed"
    assert srv.requests[0].dialect == "openai_responses"


# -- Anthropic and Gemini wire shapes ---------------------------------------------------------


async def test_anthropic_stream_shape() -> None:
    async with ScriptedModelServer() as srv:
        srv.script(Turn(Text("Writing it"), ToolCall("Write", {"file_path": "a", "content": "b"})))
        status, events = await post(
            srv, "/v1/messages?beta=true", {"model": "claude-x", "stream": True, "messages": []}
        )
        _, again = await post(srv, "/v1/messages", {"model": "claude-x", "stream": True})
    assert status == 200
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert all(name == data["type"] for name, data in events)
    deltas = [d["delta"] for n, d in events if n == "content_block_delta"]
    text = "".join(d["text"] for d in deltas if d["type"] == "text_delta")
    args = "".join(d["partial_json"] for d in deltas if d["type"] == "input_json_delta")
    assert text == "Writing it"
    assert json.loads(args) == {"file_path": "a", "content": "b"}
    starts = [d["content_block"] for n, d in events if n == "content_block_start"]
    assert [b["type"] for b in starts] == ["text", "tool_use"]
    assert starts[1]["id"].startswith("toolu_") and starts[1]["input"] == {}
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == "tool_use" and delta["usage"]["output_tokens"] > 0
    message = events[0][1]["message"]
    assert message["usage"]["input_tokens"] > 0
    # Claude Code merges assistant messages sharing an id, so every response needs its own.
    assert message["id"] != again[0][1]["message"]["id"]
    assert srv.requests[0].query == {"beta": "true"} and srv.requests[0].path == "/v1/messages"


async def test_anthropic_non_stream_and_count_tokens() -> None:
    async with ScriptedModelServer() as srv:
        srv.script(Text("hello"))
        _, counted = await post(srv, "/v1/messages/count_tokens", {"model": "m", "messages": []})
        status, message = await post(srv, "/v1/messages", {"model": "m", "messages": []})
    assert counted["input_tokens"] > 0
    assert status == 200
    assert message["content"] == [{"type": "text", "text": "hello"}]
    assert message["stop_reason"] == "end_turn"


async def test_gemini_stream_and_router_classifier() -> None:
    classifier = {
        "generationConfig": {
            "responseMimeType": "application/json",
            "responseJsonSchema": {
                "type": "OBJECT",
                "properties": {
                    "complexity_reasoning": {"type": "STRING"},
                    "complexity_score": {"type": "INTEGER"},
                },
            },
        }
    }
    async with ScriptedModelServer() as srv:
        srv.script(Turn(Text("Sure thing"), ToolCall("write_file", {"file_path": "a"})))
        status, routed = await post(
            srv, "/v1beta/models/gemini-3.5-flash-lite:generateContent", classifier
        )
        _, events = await post(srv, GEMINI_STREAM + "?alt=sse", {"contents": []})
    assert status == 200
    verdict = json.loads(routed["candidates"][0]["content"]["parts"][0]["text"])
    assert isinstance(verdict["complexity_reasoning"], str)
    assert isinstance(verdict["complexity_score"], int)
    # The classifier consumed no step: the stream got the scripted turn.
    parts = [p for _, e in events for p in e["candidates"][0]["content"]["parts"]]
    assert "".join(p.get("text", "") for p in parts) == "Sure thing"
    assert parts[-1] == {"functionCall": {"name": "write_file", "args": {"file_path": "a"}}}
    assert events[-1][1]["candidates"][0]["finishReason"] == "STOP"
    assert events[-1][1]["usageMetadata"]["totalTokenCount"] > 0
    assert [r.dialect for r in srv.requests] == ["gemini", "gemini"]


async def test_gemini_error_shape_and_unrepresentable_script() -> None:
    async with ScriptedModelServer() as srv:
        srv.script(Error(429, "slow down"), ToolCall("x", raw_arguments="{"))
        status, body = await post(srv, GEMINI_STREAM, {"contents": []})
        bad_status, _ = await post(srv, GEMINI_STREAM, {"contents": []})
    assert status == 429
    assert body == {"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}}
    assert bad_status == 500
    assert len(srv.failures) == 1 and "raw_arguments" in srv.failures[0]


# -- server behaviour ----------------------------------------------------------------------------


async def test_unknown_path_is_404_and_recorded() -> None:
    async with ScriptedModelServer() as srv:
        srv.script(Text("kept"))
        status, body = await post(srv, "/v2/whatever", {"a": 1})
    assert status == 404 and "no route" in body["error"]["message"]
    assert srv.requests[0].dialect == "unknown" and srv.requests[0].body == {"a": 1}
    assert srv.pending == [Text("kept")]


@pytest.mark.parametrize(
    ("path", "good", "bad"),
    [
        ("/v1/messages", {"x-api-key": "secret"}, {"x-api-key": "nope"}),
        ("/v1/chat/completions", {"Authorization": "Bearer secret"}, {}),
        ("/v1/responses", {"Authorization": "Bearer secret"}, {"Authorization": "Bearer no"}),
        (GEMINI_STREAM, {"x-goog-api-key": "secret"}, {"x-goog-api-key": "nope"}),
    ],
)
async def test_require_key(path: str, good: dict[str, str], bad: dict[str, str]) -> None:
    async with ScriptedModelServer() as srv:
        srv.require_key("secret")
        srv.script(Text("only for the right key"))
        refused, _ = await post(srv, path, {"model": "m"}, bad)
        assert srv.pending, "a refused request must not consume a step"
        accepted, _ = await post(srv, path, {"model": "m"}, good)
    assert (refused, accepted) == (401, 200)
    assert not srv.pending


async def test_edit_file_on_claude_reads_first_and_keeps_order() -> None:
    body = {"model": "m", "tools": [{"name": n} for n in ("Read", "Edit", "Write")]}
    async with ScriptedModelServer() as srv:
        srv.script(EditFile("README.md", "teh", "the"), Text("fixed"))
        replies = [(await post(srv, "/v1/messages", body))[1] for _ in range(3)]
    read, edit, done = (r["content"][0] for r in replies)
    assert (read["name"], read["input"]) == ("Read", {"file_path": "README.md"})
    assert edit["name"] == "Edit"
    assert edit["input"] == {"file_path": "README.md", "old_string": "teh", "new_string": "the"}
    assert done == {"type": "text", "text": "fixed"}
    assert srv.mismatches == []


@pytest.mark.parametrize(
    ("path", "body", "check"),
    [
        (
            "/v1/messages",
            {"tools": [{"name": "Write"}]},
            lambda r: r["content"][0]["input"] == {"file_path": "f.txt", "content": "hi\n"},
        ),
        (
            "/v1beta/models/g:generateContent",
            {"tools": [{"functionDeclarations": [{"name": "write_file"}]}]},
            lambda r: (
                r["candidates"][0]["content"]["parts"][0]["functionCall"]
                == {"name": "write_file", "args": {"file_path": "f.txt", "content": "hi\n"}}
            ),
        ),
        (
            "/v1/responses",
            {"tools": [{"type": "custom", "name": "apply_patch"}]},
            lambda r: r["output"][0]["input"] == patches.add_file("f.txt", "hi\n"),
        ),
        (
            "/v1/chat/completions",
            {"tools": [{"type": "custom", "custom": {"name": "apply_patch"}}]},
            lambda r: (
                r["choices"][0]["message"]["tool_calls"][0]["custom"]["input"]
                == patches.add_file("f.txt", "hi\n")
            ),
        ),
        (
            "/v1/messages",  # Copilot on the Anthropic wire
            {"tools": [{"name": "create"}, {"name": "edit"}]},
            lambda r: r["content"][0]["input"] == {"path": "f.txt", "file_text": "hi\n"},
        ),
    ],
)
async def test_write_file_picks_the_offered_tool(
    path: str, body: dict[str, Any], check: Any
) -> None:
    async with ScriptedModelServer() as srv:
        srv.script(WriteFile("f.txt", "hi\n"))
        status, reply = await post(srv, path, {"model": "m", **body})
    assert status == 200 and check(reply), reply


async def test_mismatched_tool_calls_are_reported() -> None:
    body = {"model": "m", "tools": [{"name": "Read", "input_schema": {"required": ["file_path"]}}]}
    async with ScriptedModelServer() as srv:
        srv.script(ToolCall("Nope"), ToolCall("Read", {}))
        await post(srv, "/v1/messages", body)
        await post(srv, "/v1/messages", body)
    assert len(srv.mismatches) == 2
    assert "'Nope' is not offered" in srv.mismatches[0]
    assert "lacks required ['file_path']" in srv.mismatches[1]


async def test_hang_notices_the_client_leaving_and_does_not_block_close() -> None:
    srv = ScriptedModelServer()
    async with srv:
        srv.script(Hang(), Hang(after_headers=True))
        for _ in range(2):
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.3):
                    await post(srv, "/v1/messages", {"model": "m", "stream": True})
        await srv.wait_for_disconnects(2, timeout=5)
        srv.script(Hang())  # this one is still hanging when the server closes
        pending = asyncio.create_task(post(srv, "/v1/messages", {"model": "m"}))
        await srv.wait_for_requests(3)
        started = time.monotonic()
    assert time.monotonic() - started < 3
    assert srv.disconnected == [0, 1]
    with pytest.raises(aiohttp.ClientError):
        await pending


async def test_hang_times_out_with_504_and_delay_delays() -> None:
    async with ScriptedModelServer() as srv:
        srv.script(Hang(seconds=0.1), Delay(0.3, Text("late")))
        status, _ = await post(srv, "/v1/messages", {"model": "m"})
        started = time.monotonic()
        _, late = await post(srv, "/v1/messages", {"model": "m"})
    assert status == 504
    assert time.monotonic() - started >= 0.3
    assert late["content"][0]["text"] == "late"


async def test_wait_for_requests_times_out_with_what_it_saw() -> None:
    async with ScriptedModelServer() as srv:
        await post(srv, "/nope", {})
        with pytest.raises(TimeoutError, match="/nope"):
            await srv.wait_for_requests(2, timeout=0.2)


async def test_unix_socket(tmp_path: Any) -> None:
    sock = str(tmp_path / "fake.sock")
    async with ScriptedModelServer(unix_path=sock) as srv:
        srv.script(Text("over a socket"))
        connector = aiohttp.UnixConnector(path=sock)
        async with (
            aiohttp.ClientSession(connector=connector) as session,
            session.post("http://localhost/v1/messages", json={"model": "m"}) as resp,
        ):
            body = await resp.json()
    assert body["content"][0]["text"] == "over a socket"
