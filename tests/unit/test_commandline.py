"""The command word is parsed once, by the gateway, onto the event."""

from __future__ import annotations

from core.events import Inbound
from orchestrator.commandline import parse_command, with_command


def _inbound(text: str) -> Inbound:
    return Inbound(channel="terminal", chat="me", sender="me", message_id="1", text=text)


def test_parse_command() -> None:
    assert parse_command("/Remind call mom in 20m") == ("remind", "call mom in 20m")
    assert parse_command("/status@fetch_bot") == ("status", "")
    assert parse_command("  Undo! ") == ("undo", "")  # a bare word alone is a command
    assert parse_command("undo the last change") is None
    assert parse_command("/") is None
    assert parse_command("fix the typo") is None
    assert parse_command("/cron 0 9 * * 1-5\ncheck it") == ("cron", "0 9 * * 1-5\ncheck it")


def test_with_command_sets_the_fields() -> None:
    event = with_command(_inbound("@fetch /Jobs"), "/Jobs")
    assert (event.command, event.args) == ("jobs", "")
    event = with_command(_inbound("/remind x in 5m"), "/remind x in 5m")
    assert (event.command, event.args) == ("remind", "x in 5m")


def test_with_command_leaves_plain_text_alone() -> None:
    plain = _inbound("fix the typo")
    assert with_command(plain, plain.text) is plain
    stale = with_command(_inbound("/help"), "/help")
    cleared = with_command(stale, "fix the typo")
    assert (cleared.command, cleared.args) == (None, "")
