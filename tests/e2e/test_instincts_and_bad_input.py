"""Commands answer without a model; bad input gets a clear answer and Fetch keeps serving."""

from __future__ import annotations

from tests.conftest import Driver


async def test_help_commands_status(fetch: Driver) -> None:
    assert "I'm Fetch" in await fetch.ask("/help", "Fetch")
    listing = await fetch.ask("/commands", "Commands:")
    for word in ("/help", "/commands", "/status", "/clear", "/stop", "/undo"):
        assert word in listing
    status = await fetch.ask("/status", "Fetch ·")
    assert "ALERT" in status and "sandbox: bwrap" in status and "harness: demo" in status


async def test_trigger_prefix_is_stripped(fetch: Driver) -> None:
    assert "Commands:" in await fetch.ask("@fetch /commands", "Commands:")
    assert "Commands:" in await fetch.ask("@Fetch, /commands", "Commands:")


async def test_unknown_command_gets_help_not_model(fetch: Driver) -> None:
    reply = await fetch.ask("/stauts", "don't know /stauts")
    assert "/status" in reply  # a suggestion
    assert "/help" in await fetch.ask("/zzzqqq", "don't know")
    rows = await fetch.services.store.db.conn.execute_fetchall("SELECT COUNT(*) FROM tasks")
    assert next(iter(rows))[0] == 0


async def test_empty_and_whitespace_messages(fetch: Driver) -> None:
    assert "empty message" in await fetch.ask("   ", "empty")
    assert "empty message" in await fetch.ask("@fetch", "empty")
    assert "Fetch ·" in await fetch.ask("/status", "Fetch ·")


async def test_one_megabyte_message(fetch: Driver) -> None:
    reply = await fetch.ask("x" * 1_000_000, "limit")
    assert "1,000,000 characters" in reply
    assert "Fetch ·" in await fetch.ask("/status", "Fetch ·")


async def test_control_characters_are_removed(fetch: Driver) -> None:
    reply = await fetch.ask("/sta\x00tus\x1b[31m", "Fetch ·")
    assert "ALERT" in reply
    garbage = await fetch.ask("\x07\x08\u202e\x7f", "empty")
    assert "empty" in garbage


async def test_unclear_text_asks_for_clarity(fetch: Driver) -> None:
    reply = await fetch.ask("banana", "not sure")
    assert "fix the typo" in reply
    assert "Hi" in await fetch.ask("hello", "Hi")


async def test_workspace_listing_and_pick(fetch: Driver) -> None:
    assert "demo" in await fetch.ask("/workspace", "📂")
    assert "Now working in demo" in await fetch.ask("use demo", "Now working")
    assert "No repo named" in await fetch.ask("/workspace ../../etc", "No repo")
    assert "No repo named" in await fetch.ask("use nothere", "No repo")


async def test_clear_and_stop_when_idle(fetch: Driver) -> None:
    await fetch.ask("use demo", "Now working")
    assert "Cleared" in await fetch.ask("/clear", "Cleared")
    assert "(none chosen)" in await fetch.ask("/status", "Fetch ·")
    assert "Nothing is running" in await fetch.ask("/stop", "Nothing")


async def test_harness_list_and_pick(fetch: Driver) -> None:
    listing = await fetch.ask("/harness", "Harnesses")
    assert "claude-code" in listing and "demo" in listing
    assert "unknown harness" in await fetch.ask("/harness nope", "unknown")
    assert "now uses demo" in await fetch.ask("/harness demo", "now uses")


async def test_pause_resume(fetch: Driver) -> None:
    await fetch.ask("/pause", "Paused")
    assert "paused" in await fetch.ask("fix the typo in README.md", "paused")
    await fetch.ask("/resume", "Back")


async def test_messages_are_journaled_and_stored(fetch: Driver) -> None:
    await fetch.ask("/help", "Fetch")
    await fetch.ask("/commands", "Commands:")  # queued after /help: it is fully recorded
    journal = fetch.services.journal.path(fetch.terminal_key())
    lines = journal.read_text().splitlines()
    assert any('"role": "owner"' in line and "/help" in line for line in lines)
    assert any('"role": "fetch"' in line for line in lines)
    assert journal.parent.name == "terminal_owner"
    await fetch.services.store.messages.flush()
    rows = await fetch.services.store.db.conn.execute_fetchall(
        "SELECT direction FROM messages ORDER BY id"
    )
    assert [r[0] for r in rows][:2] == ["in", "out"]
