"""Vendor-side tools never ride a relayed call (kennel/relay_tools.py): through real HTTP,
what the scripted vendor received has no web search or fetch, no code execution, no remote
MCP, no file or URL references, and no beta flag that switches those on; the CLI's own
tools and every ordinary beta flag (Claude Code stops working without them) are kept."""

from __future__ import annotations

import gzip
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kennel.relay_tools import Stripper
from tests.kennel.relay_vendor import Vendor, call, logged, relay_to

# What Claude Code 2.1 sends on every call (measured through the relay).
CLAUDE_CODE_FLAGS = [
    "claude-code-20250219",
    "context-1m-2025-08-07",
    "interleaved-thinking-2025-05-14",
    "thinking-token-count-2026-05-13",
    "context-management-2025-06-27",
    "prompt-caching-scope-2026-01-05",
    "mid-conversation-system-2026-04-07",
    "effort-2025-11-24",
    "oauth-2025-04-20",
    "fine-grained-tool-streaming-2025-05-14",
    "token-efficient-tools-2025-02-19",
    "prompt-caching-2024-07-31",
    "computer-use-2025-01-24",  # the CLI runs computer use itself: kept
]
SERVER_FLAGS = [
    "web-search-2025-03-05",
    "web-fetch-2025-09-10",
    "code-execution-2025-08-25",
    "mcp-client-2025-04-04",
    "files-api-2025-04-14",
    "skills-2025-10-02",
]
CLIENT_TOOLS = [
    {"name": "Edit", "description": "edit", "input_schema": {"type": "object"}},
    {"type": "bash_20250124", "name": "bash"},
    {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"},
    {"type": "computer_20250124", "name": "computer", "display_width_px": 1024},
    {"type": "memory_20250818", "name": "memory"},
]
SERVER_TOOLS = [
    {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
    {"type": "web_fetch_20250910", "name": "web_fetch"},
    {"type": "code_execution_20250825", "name": "code_execution"},
    {"type": "mcp_toolset", "mcp_server_name": "evil"},
]


@pytest.fixture
async def vendor() -> AsyncIterator[Vendor]:
    async with Vendor() as v:
        yield v


def _anthropic_body() -> dict[str, Any]:
    url_image = {"type": "image", "source": {"type": "url", "url": "https://evil.example/x"}}
    return {
        "model": "claude-x",
        "max_tokens": 10,
        "tools": CLIENT_TOOLS + SERVER_TOOLS,
        "tool_choice": {"type": "tool", "name": "web_search"},
        "mcp_servers": [{"type": "url", "url": "https://evil.example/mcp", "name": "evil"}],
        "container": "container_011CQd",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    url_image,
                    {"type": "document", "source": {"type": "file", "file_id": "file_011C"}},
                    {"type": "container_upload", "file_id": "file_011D"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"},
                    },
                ],
            },
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x"}]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [url_image]}],
            },
        ],
    }


async def test_claude_codes_flags_stay_and_server_tools_go(vendor: Vendor, tmp_path: Path) -> None:
    async with relay_to(vendor, tmp_path / "r.sock") as relay:
        answer = await call(
            relay.socket_path,
            "POST",
            "/v1/messages?beta=true",
            _anthropic_body(),
            {"anthropic-beta": ",".join(CLAUDE_CODE_FLAGS + SERVER_FLAGS)},
        )
    assert answer.status == 200
    (seen,) = vendor.seen
    assert seen.headers["anthropic-beta"].split(",") == CLAUDE_CODE_FLAGS
    body = seen.json
    assert body["tools"] == CLIENT_TOOLS
    assert "mcp_servers" not in body and "container" not in body and "tool_choice" not in body
    first = body["messages"][0]["content"]
    assert first[0] == {"type": "text", "text": "look"}
    assert [b["type"] for b in first] == ["text", "text", "text", "text", "image"]
    assert all("removed" in b["text"] for b in first[1:4])
    assert first[4]["source"]["type"] == "base64"  # an image the CLI sent itself stays
    nested = body["messages"][2]["content"][0]["content"][0]
    assert nested["type"] == "text" and "removed an image by url" in nested["text"]
    assert "evil.example" not in seen.body.decode()
    (entry,) = logged(relay.socket_path)
    assert "tool web_search_20250305" in entry["removed"]
    assert "beta web-fetch-2025-09-10" in entry["removed"]


async def test_the_owner_may_keep_web_search(vendor: Vendor, tmp_path: Path) -> None:
    async with relay_to(vendor, tmp_path / "r.sock", allow_server_tools=("web_search",)) as relay:
        await call(
            relay.socket_path,
            "POST",
            "/v1/messages",
            {"model": "m", "tools": CLIENT_TOOLS + SERVER_TOOLS, "messages": []},
            {"anthropic-beta": "claude-code-20250219,web-search-2025-03-05,web-fetch-2025-09-10"},
        )
    (seen,) = vendor.seen
    assert seen.headers["anthropic-beta"] == "claude-code-20250219,web-search-2025-03-05"
    assert seen.json["tools"] == [*CLIENT_TOOLS, SERVER_TOOLS[0]]


async def test_a_header_of_server_flags_only_is_dropped(vendor: Vendor, tmp_path: Path) -> None:
    async with relay_to(vendor, tmp_path / "r.sock") as relay:
        await call(
            relay.socket_path,
            "POST",
            "/v1/messages",
            {"model": "m", "messages": []},
            {"anthropic-beta": "files-api-2025-04-14"},
        )
    assert "anthropic-beta" not in vendor.seen[0].headers


async def test_openai_responses_and_chat(vendor: Vendor, tmp_path: Path) -> None:
    own = [
        {"type": "function", "name": "shell", "parameters": {}},
        {"type": "custom", "name": "apply_patch"},
        {"type": "tool_search", "execution": "client"},  # Codex's own, run by Codex
        {"type": "local_shell"},
    ]
    hosted = [
        {"type": "web_search", "external_web_access": False},  # Codex sends this one
        {"type": "web_search_preview"},
        {"type": "file_search", "vector_store_ids": ["vs_1"]},
        {"type": "code_interpreter", "container": {"type": "auto"}},
        {"type": "mcp", "server_label": "x", "server_url": "https://evil.example/mcp"},
        {"type": "image_generation"},
    ]
    responses = {
        "model": "gpt-5.5",
        "tools": own + hosted,
        "tool_choice": {"type": "web_search_preview"},
        "input": [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "hi"},
                    {"type": "input_file", "file_id": "file-abc"},
                    {"type": "input_file", "file_url": "https://evil.example/a.pdf"},
                    {"type": "input_image", "image_url": "https://evil.example/a.png"},
                    {"type": "input_image", "image_url": "data:image/png;base64,iVBO"},
                ],
            }
        ],
    }
    chat = {
        "model": "gpt-5.4",
        "web_search_options": {},
        "tools": own[:2],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": "http://evil.example/a.png"}},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
                    {"type": "file", "file": {"file_id": "file-abc"}},
                ],
            }
        ],
    }
    async with relay_to(vendor, tmp_path / "r.sock", "openai", "/v1") as relay:
        await call(relay.socket_path, "POST", "/responses", responses)
        await call(relay.socket_path, "POST", "/chat/completions", chat)
    first, second = (s.json for s in vendor.seen)
    assert first["tools"] == own and "tool_choice" not in first
    parts = first["input"][0]["content"]
    assert [p["type"] for p in parts] == ["input_text"] * 4 + ["input_image"]
    assert parts[4]["image_url"].startswith("data:")
    assert "web_search_options" not in second and second["tools"] == own[:2]
    kinds = [p["type"] for p in second["messages"][0]["content"]]
    assert kinds == ["text", "image_url", "text"]
    assert all("evil.example" not in s.body.decode() for s in vendor.seen)


async def test_gemini(vendor: Vendor, tmp_path: Path) -> None:
    functions = {"functionDeclarations": [{"name": "write_file", "parameters": {}}]}
    body = {
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"text": "hi"},
                    {"fileData": {"fileUri": "https://x.example/v1beta/files/abc"}},
                    {"file_data": {"file_uri": "https://www.youtube.com/watch?v=x"}},
                    {"inlineData": {"mimeType": "image/png", "data": "iVBO"}},
                ],
            }
        ],
        "tools": [
            functions,
            {"googleSearch": {}},
            {"google_search_retrieval": {}},
            {"codeExecution": {}},
            {"urlContext": {}},
        ],
        "cachedContent": "cachedContents/abc",
    }
    async with relay_to(vendor, tmp_path / "r.sock", "gemini") as relay:
        await call(
            relay.socket_path,
            "POST",
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
            body,
            {"x-api-key": None, "x-goog-api-key": "run-secret-Qx7pT2mZ"},
        )
    sent = vendor.seen[0].json
    assert sent["tools"] == [functions] and "cachedContent" not in sent
    parts = sent["contents"][0]["parts"]
    assert parts[0] == {"text": "hi"} and "inlineData" in parts[3]
    assert all(set(p) == {"text"} and "removed" in p["text"] for p in parts[1:3])


async def test_what_the_vendor_reads_is_what_was_checked(vendor: Vendor, tmp_path: Path) -> None:
    """A second "tools" key (JSON parsers disagree on which one counts), a compressed body
    and a body that is not JSON cannot carry a server tool past the check."""
    dupe = b'{"model":"m","tools":[{"type":"web_search_20250305","name":"web_search"}],"tools":[]}'
    async with relay_to(vendor, tmp_path / "r.sock") as relay:
        await call(relay.socket_path, "POST", "/v1/messages", dupe)
        (seen,) = vendor.seen
        assert seen.body.count(b'"tools"') == 1 and b"web_search" not in seen.body
        packed = gzip.compress(json.dumps({"model": "m", "tools": SERVER_TOOLS}).encode())
        zipped = await call(
            relay.socket_path, "POST", "/v1/messages", packed, {"content-encoding": "gzip"}
        )
        junk = await call(relay.socket_path, "POST", "/v1/messages", b"not json")
        listed = await call(relay.socket_path, "POST", "/v1/messages", b"[1, 2]")
    assert (zipped.status, junk.status, listed.status) == (415, 400, 400)
    assert len(vendor.seen) == 1


def test_stripper_leaves_a_plain_body_alone() -> None:
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    for provider in ("anthropic", "openai", "gemini"):
        copy = json.loads(json.dumps(body))
        assert Stripper(provider).body(copy) == [] and copy == body
    assert Stripper("anthropic", ["nonsense"]).unknown == ["nonsense"]
