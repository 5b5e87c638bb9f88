"""/remember, /memory, /forget and /status through the whole app (terminal channel),
and the archival observer behind real turns."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from instincts.memory import parse_remember
from orchestrator.config import Settings
from tests.conftest import Driver, start_driver
from tests.fakes.model_server import ScriptedModelServer


@pytest.fixture
async def fetch_mem(
    model: ScriptedModelServer,
    make_settings: Callable[..., Settings],
) -> AsyncIterator[Driver]:
    settings = make_settings(
        FETCH_EMBEDDING_BASE_URL=model.url + "/v1", FETCH__MEMORY__ARCHIVE_TOKENS="500"
    )
    app, driver = await start_driver(settings)
    try:
        yield driver
    finally:
        await app.__aexit__(None, None, None)


def test_parse_remember() -> None:
    assert parse_remember("pref: I like tabs #style #Go") == (
        "preference",
        "I like tabs",
        ("style", "Go"),
    )
    assert parse_remember("learning:  pytest -x stops early") == (
        "learning",
        "pytest -x stops early",
        (),
    )
    assert parse_remember("the db is on 5433") == ("fact", "the db is on 5433", ())


async def test_remember_memory_forget(fetch_mem: Driver) -> None:
    said = await fetch_mem.ask(
        "/remember the staging db listens on port 5433 #infra", "Remembered #1"
    )
    assert "/forget 1" in said
    await fetch_mem.ask(
        "/remember pref: I review diffs on my phone, keep them small", "Remembered #2 (preference)"
    )
    again = await fetch_mem.ask("/remember The staging db listens on port 5433.", "Updated")
    assert "#1" in again
    overview = await fetch_mem.ask("/memory", "🧠")
    assert "2 memories (1 fact, 1 preference)" in overview
    assert "#2 preference: I review diffs" in overview and "/forget <id>" in overview
    assert "search: hybrid" in overview
    found = await fetch_mem.ask("/memory postgres port", "match")
    assert "#1 fact: The staging db listens on port 5433." in found
    assert "Forgot #1" in await fetch_mem.ask("/forget 1", "Forgot")
    assert "No memory #1" in await fetch_mem.ask("/forget #1", "No memory")
    assert "Which one?" in await fetch_mem.ask("/forget", "Which one?")
    assert "What should I remember?" in await fetch_mem.ask("/remember", "What should")
    status = await fetch_mem.ask("/status", "Fetch ·")
    assert "memory: hybrid (text-embedding-3-small/1536)" in status


async def test_status_says_keyword_only_without_endpoint(fetch: Driver) -> None:
    status = await fetch.ask("/status", "Fetch ·")
    assert "memory: keyword-only (no embedding endpoint configured)" in status
    await fetch.ask("/remember deploys go out on Fridays", "Remembered #1")
    assert "#1 fact: deploys go out on Fridays" in await fetch.ask(
        "/memory friday deploys", "match"
    )


async def test_turns_are_archived_behind_the_replies(fetch_mem: Driver) -> None:
    for i in range(12):  # each reply to /commands is long: the threshold passes quickly
        await fetch_mem.ask(f"/commands {i}", "Commands:")
    memory = fetch_mem.services.memory
    assert memory.archiver is not None
    for _ in range(100):
        await memory.archiver.idle()
        counts, _ = await memory.overview()
        if counts.get("archive"):
            break
        memory.observe(fetch_mem.terminal_key())
        await asyncio.sleep(0.05)
    assert counts.get("archive", 0) >= 1
    hits = await memory.search("commands", 5)
    assert any(h.item.kind == "archive" for h in hits)


async def test_memory_that_cannot_start_does_not_stop_fetch(
    make_settings: Callable[..., Settings],
) -> None:
    settings = make_settings()
    settings.home_dir.mkdir(parents=True)
    (settings.home_dir / "memory").write_text("a file where the folder should be")
    app, driver = await start_driver(settings)
    try:
        status = await driver.ask("/status", "Fetch ·")
        assert "memory: off, it failed to start" in status
        assert "memory is off" in await driver.ask("/remember x", "❌")
        assert "done" not in await driver.ask("/help", "I'm Fetch")
    finally:
        await app.__aexit__(None, None, None)
