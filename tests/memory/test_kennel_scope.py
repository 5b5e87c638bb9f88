"""Memory as a hostile kennel sees it (issue "Trust III" point 4): over the real MCP
handler, on real HTTP, with a real memory.db. Archived conversations only of the task's
chat (none without one), memories only of the task's subject, and a write that never
changes a row the kennel did not write."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from core.events import SessionKey
from orchestrator.config import Settings
from orchestrator.memory import Memory
from orchestrator.memory.items import has_vec_index
from orchestrator.memory.schema import is_pg
from orchestrator.store.db import key_str
from tests.fakes.embeddings import embed
from tests.fakes.model_server import ScriptedModelServer, Text
from tests.memory.conftest import Running, on_both_engines

pytestmark = on_both_engines

KEY_A = SessionKey("telegram", "A")
KEY_B = SessionKey("telegram", "B")
CHAT_A, CHAT_B = key_str(KEY_A), key_str(KEY_B)
HARNESS = "harness:test-cli"
LINE = "word " * 80  # ~100 tokens a message
SUMMARY_A = "The owner planned the bakery invoices and the oven repair with Fetch."
SUMMARY_B = "The owner planned the bakery invoices and a secret salary raise with Fetch."
FACT = "The staging database of the shop listens on port 5433 and is only reachable over the VPN"
TWIN = "The staging database of the shop listens on port 5433 and is only reachable through the VPN"


class Kennel:
    """A CLI in the kennel: JSON-RPC over streamable HTTP to its relay's /mcp."""

    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session = session
        self.url = url
        self.next_id = 0

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}}
        headers = {"Accept": "application/json, text/event-stream"}
        async with self.session.post(self.url, json=body, headers=headers) as resp:
            assert resp.status == 200, await resp.text()
            return json.loads(await resp.text())

    async def tool(self, name: str, **args: Any) -> str:
        reply = await self.call("tools/call", {"name": name, "arguments": args})
        assert not reply["result"].get("isError"), reply
        return str(reply["result"]["content"][0]["text"])

    async def search(self, query: str) -> list[dict[str, Any]]:
        found = json.loads(await self.tool("memory_search", query=query, limit=20))
        return list(found["hits"])


@contextlib.asynccontextmanager
async def kennel(
    memory: Memory, *, subject: str = "owner", chat: str | None = None, source: str = HARNESS
) -> AsyncIterator[Kennel]:
    """The handler the runner puts on a task's relay, served on a TCP port."""
    await memory.mcp_ready()
    handler = memory.mcp_handler(source, subject, chat=chat)
    assert handler is not None
    app = web.Application()
    app.router.add_route("*", "/mcp", handler)
    async with TestServer(app, host="127.0.0.1") as server, aiohttp.ClientSession() as session:
        client = Kennel(session, str(server.make_url("/mcp")))
        init = await client.call(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "kennel", "version": "1"},
            },
        )
        assert init["result"]["serverInfo"]["name"] == "fetch-memory"
        yield client


async def _archive(
    run: Running, model: ScriptedModelServer, key: SessionKey, summary: str
) -> list[int]:
    model.default = Text(summary)
    for i in range(12):
        await run.store.messages.add(key, "in", f"message {i} of {key.chat} {LINE}")
    assert run.memory.archiver is not None
    made = await run.memory.archiver.archive(key)
    assert made
    return made


@pytest.fixture
async def archived(
    memory_settings: Callable[..., Settings], model: ScriptedModelServer
) -> AsyncIterator[tuple[Running, list[int], list[int]]]:
    """Chats A and B, each with archived conversation chunks, and the owner's facts."""
    async with Running(memory_settings(FETCH__MEMORY__ARCHIVE_TOKENS="500")) as run:
        chunks_a = await _archive(run, model, KEY_A, SUMMARY_A)
        chunks_b = await _archive(run, model, KEY_B, SUMMARY_B)
        await run.memory.write("The bakery invoices go out on the first Monday", "fact")
        await run.memory.write(
            "Alice files the bakery invoices in the blue folder",
            "fact",
            source="member:alice",
            subject="alice",
        )
        yield run, chunks_a, chunks_b


async def _row(memory: Memory, item_id: int) -> tuple[Any, ...]:
    """Everything stored of a row: its columns and its exact vector, as bytes."""

    def read(c: Any) -> tuple[Any, ...]:
        row = tuple(c.execute("SELECT * FROM memory_items WHERE id=?", (item_id,)).fetchone())
        if is_pg(c) and not has_vec_index(c, True):  # no embeddings: no vectors table
            return row, None
        vec = c.execute("SELECT vec FROM memory_vectors WHERE id=?", (item_id,)).fetchone()
        return row, None if vec is None else tuple(vec)

    return await memory.db.run(read)


async def test_a_chats_kennel_gets_only_its_own_archives(
    archived: tuple[Running, list[int], list[int]],
) -> None:
    run, chunks_a, chunks_b = archived
    async with kennel(run.memory, chat=CHAT_A) as cli:
        hits = await cli.search("bakery invoices")
        archives = [h for h in hits if h["kind"] == "archive"]
        assert archives and {h["thread"] for h in archives} == {CHAT_A}
        assert not {h["id"] for h in hits} & set(chunks_b)
        assert "secret salary" not in json.dumps(hits)
        assert any("first Monday" in h.get("content", "") for h in hits)  # facts still there
        own = await cli.tool("memory_read", id=chunks_a[0])
        assert "message 0 of A" in own
        for chunk in chunks_b:
            other = await cli.tool("memory_read", id=chunk)
            assert other.startswith(f"no archived conversation #{chunk}")
            assert "of B" not in other


async def test_without_a_chat_no_archive_at_all(
    archived: tuple[Running, list[int], list[int]],
) -> None:
    run, chunks_a, chunks_b = archived
    async with kennel(run.memory) as cli:
        hits = await cli.search("bakery invoices")
        assert hits and all(h["kind"] != "archive" for h in hits)
        for chunk in chunks_a + chunks_b:
            assert "message 0" not in await cli.tool("memory_read", id=chunk)
    # The memory put in a kennel's prompt is scoped the same way.
    assert "past conversation" not in await run.memory.context_for("bakery invoices")
    scoped = await run.memory.context_for("bakery invoices", chat=CHAT_A)
    assert f"past conversation #{chunks_a[0]}" in scoped and "secret salary" not in scoped


async def test_facts_only_of_the_tasks_subject(
    archived: tuple[Running, list[int], list[int]],
) -> None:
    run, _, _ = archived
    async with kennel(run.memory, subject="alice", chat=CHAT_A) as cli:
        hits = await cli.search("bakery invoices")
        assert [h["content"] for h in hits] == [
            "Alice files the bakery invoices in the blue folder"
        ]  # no owner fact, no owner's archive
    async with kennel(run.memory, chat=CHAT_A) as cli:
        assert "blue folder" not in json.dumps(await cli.search("bakery invoices folder"))


def _cos(a: str, b: str) -> float:
    return sum(x * y for x, y in zip(embed(a), embed(b), strict=True))


@pytest.mark.parametrize("author", ["owner", "orchestrator", "harness:other-cli"])
async def test_a_near_duplicate_never_rewrites_anothers_row(memory: Memory, author: str) -> None:
    assert _cos(FACT, TWIN) >= memory.config.dedup_threshold  # the old code merged these
    theirs = await memory.write(FACT, "fact", ("infra",), source=author, chat=CHAT_A)
    before = await _row(memory, theirs.item.id)
    async with kennel(memory, chat=CHAT_A) as cli:
        saved = await cli.tool("memory_write", content=TWIN, type="fact", tags=["db"])
        assert saved.startswith("saved as memory #")
        mine = int(saved.rsplit("#", 1)[1])
        assert mine != theirs.item.id
        # Its own row, in its own chat, it may update.
        again = await cli.tool("memory_write", content=TWIN + ".", type="fact")
        assert again == f"updated your near-duplicate memory #{mine}"
    async with kennel(memory, chat=CHAT_B) as cli:  # the same CLI in another chat: not its
        other = await cli.tool("memory_write", content=TWIN, type="fact")
        assert other.startswith("saved as memory #") and int(other.rsplit("#", 1)[1]) != mine
    assert await _row(memory, theirs.item.id) == before  # byte for byte
    written = await memory.get(mine)
    assert written is not None
    assert (written.source, written.chat, written.content) == (HARNESS, CHAT_A, TWIN + ".")


async def test_a_word_for_word_repeat_without_embeddings(
    memory_settings: Callable[..., Settings],
) -> None:
    async with Running(memory_settings(embeddings=False)) as run:
        owners = await run.memory.write(FACT, "fact")
        before = await _row(run.memory, owners.item.id)
        async with kennel(run.memory, chat=CHAT_A) as cli:
            saved = await cli.tool("memory_write", content=FACT.upper(), type="learning")
        assert saved.startswith("saved as memory #")
        assert await _row(run.memory, owners.item.id) == before
        written = await run.memory.get(int(saved.rsplit("#", 1)[1]))
        assert written is not None and written.source == HARNESS and written.chat == CHAT_A


async def test_a_kennel_cannot_forget_and_is_always_marked(memory: Memory) -> None:
    async with kennel(memory, chat=CHAT_A) as cli:
        listed = await cli.call("tools/list")
        assert {t["name"] for t in listed["result"]["tools"]} == {
            "memory_search",
            "memory_read",
            "memory_write",
        }
        gone = await cli.call("tools/call", {"name": "memory_forget", "arguments": {"id": 1}})
        assert "error" in gone or gone["result"].get("isError")
    await memory.mcp_ready()
    with pytest.raises(ValueError):  # an MCP caller unmarked would write as anyone
        memory.mcp_handler("owner", chat=CHAT_A)
