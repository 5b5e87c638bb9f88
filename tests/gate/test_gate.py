"""The security gate, with figures: strangers reach nothing, names never escape,
approvals are accepted only from the owner, for the diff on screen, in time."""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from channels.terminal import TerminalChannel
from core.events import Inbound
from core.validate import UnsafeName, safe_relative_path
from orchestrator.app import App, build_app
from orchestrator.config import Settings
from tests.conftest import Driver, git
from tests.fakes.model_server import ScriptedModelServer, Text, ToolCall
from tests.fakes.recording_channel import RecordingChannel


@pytest.fixture
async def gated(
    make_settings: Callable[..., Settings],
) -> AsyncIterator[tuple[App, Driver, RecordingChannel, ScriptedModelServer]]:
    async with ScriptedModelServer() as model:
        model.default = ToolCall("task_create", {"repo": "demo", "instruction": "x"})
        settings = make_settings(
            FETCH_MODEL_BASE_URL=model.url + "/v1", FETCH__ALLOWLIST='["whatsapp:4915100000001"]'
        )
        terminal = TerminalChannel(settings.terminal.chat)
        phone = RecordingChannel("whatsapp")
        app = build_app(settings, channels=[terminal, phone])
        await app.__aenter__()
        try:
            yield app, Driver(app, terminal), phone, model
        finally:
            await app.__aexit__(None, None, None)


def stranger_events(n: int, senders: int) -> list[Inbound]:
    """Plain, group, replayed, reactions and approval words from non-allowed numbers."""
    kinds = itertools.cycle(["plain", "group", "replay", "reaction", "yes", "command", "task"])
    events: list[Inbound] = []
    for i in range(n):
        kind = next(kinds)
        sender = f"49170{(i % senders):07d}"
        msg_id = f"STRANGER-{i // 2 if kind == 'replay' else i}"
        text = {
            "plain": "hello there",
            "group": "@fetch fix the login test in demo",
            "replay": "fix the typo in README.md of demo",
            "reaction": "",
            "yes": "yes",
            "command": "/status",
            "task": "fix everything in demo",
        }[kind]
        events.append(
            Inbound(
                channel="whatsapp",
                chat=sender if kind != "group" else "group-123@g.us",
                sender=sender,
                message_id=msg_id,
                text=text,
                is_group=kind == "group",
                reaction="👍" if kind == "reaction" else None,
                reply_to="whatsapp-out-1" if kind == "reaction" else None,
            )
        )
    return events


async def test_strangers_reach_nothing(
    gated: tuple[App, Driver, RecordingChannel, ScriptedModelServer],
) -> None:
    app, owner, phone, model = gated
    assert app.gateway is not None and app.services is not None
    # The owner has a diff waiting: strangers' "yes" and 👍 must not touch it.
    await owner.push("/harness demo")
    model.script(
        ToolCall("task_create", {"repo": "demo", "instruction": "fix the typo in README.md"})
    )
    await owner.ask("fix the typo in README.md of demo", "Apply?")
    requests_before = len(model.requests)
    events = stranger_events(10_000, 200)
    started = time.perf_counter()
    for event in events:
        await app.gateway.receive(event)
    elapsed = time.perf_counter() - started
    await asyncio.sleep(0.5)
    store = app.services.store
    tasks = await store.db.conn.execute_fetchall("SELECT COUNT(*) FROM tasks")
    seen = await store.db.conn.execute_fetchall(
        "SELECT COUNT(*) FROM inbound WHERE channel='whatsapp'"
    )
    figures = {
        "events": len(events),
        "senders": 200,
        "replies": len(phone.sent),
        "model_calls": len(model.requests) - requests_before,
        "tasks": next(iter(tasks))[0] - 1,
        "stored": next(iter(seen))[0],
        "events_per_s": round(len(events) / elapsed),
    }
    print(f"\ngate figures: {figures}")
    assert figures["replies"] == 0 and figures["model_calls"] == 0
    assert figures["tasks"] == 0 and figures["stored"] == 0
    session = await app.services.sessions.get(owner.terminal_key())
    assert session.state == "GUARDING"
    await owner.ask("no", "Discarded")


async def test_allowlisted_sender_is_served_but_cannot_approve(
    gated: tuple[App, Driver, RecordingChannel, ScriptedModelServer],
) -> None:
    app, owner, phone, model = gated
    assert app.services is not None
    gateway = app.gateway
    assert gateway is not None
    friend = "4915100000001"

    async def say(text: str, *, reaction: str | None = None, reply_to: str | None = None) -> None:
        await gateway.receive(
            Inbound(
                channel="whatsapp",
                chat=friend,
                sender=friend,
                message_id=uuid.uuid4().hex,
                text=text,
                reaction=reaction,
                reply_to=reply_to,
            )
        )
        await asyncio.sleep(0.3)

    await say("/status")
    assert phone.sent and "Fetch ·" in phone.sent[-1].text
    await say("/harness demo")
    await say("fix the typo in README.md of demo")
    # Its diff is the owner's to answer (issue 22): it waits in the owner's chat.
    card = await owner.expect("Apply?")
    assert "whatsapp:4915100000001 asked for this" in card
    # The member is told after the owner's card is out (and its own session saved):
    # waited for, not assumed to have arrived with the card.
    for _ in range(100):
        if any("went to the owner" in m.text for m in phone.sent):
            break
        await asyncio.sleep(0.05)
    assert any("went to the owner" in m.text for m in phone.sent)
    notice = next(f"whatsapp-out-{i + 1}" for i, m in enumerate(phone.sent) if "went to" in m.text)
    model.script(Text("that was not a question"))
    await say("yes")
    await say("", reaction="👍", reply_to=notice)
    assert not any("Committed" in m.text for m in phone.sent)
    session = await app.services.sessions.get(owner.terminal_key())
    assert session.state == "GUARDING"
    await owner.ask("no", "Discarded")


def traversal_corpus() -> list[str]:
    dots = ["..", "%2e%2e", "%252e%252e", "．．", "\u2024\u2024", ".%2e", "%2e.", "..."]
    seps = ["/", "\\", "%2f", "%5c", "／", "%252f", "\\\\", "//"]
    targets = ["etc/passwd", ".git/config", ".git/hooks/pre-commit", "root/.ssh/id_rsa", "", "x"]
    corpus: list[str] = []
    for d, s, t in itertools.product(dots, seps, targets):
        corpus.append(f"{d}{s}{d}{s}{t}")
        corpus.append(f"README.md{s}{d}{s}{d}{s}{t}")
    corpus += [
        "/etc/passwd",
        "~/.ssh/id_rsa",
        "C:\\Windows\\win.ini",
        "c:/x",
        "a\x00b",
        ".git",
        ".git/",
        "./.git/config",
        "a/./../../b",
        "\x1b[2J",
        "\u202e/etc",
        "%00",
        "..%00/x",
        "x" * 5000,
        "a/" * 40 + "b",
    ]
    return corpus[:520]


def test_path_traversal_corpus_never_escapes(tmp_path: Path) -> None:
    root = (tmp_path / "repo").resolve()
    root.mkdir()
    corpus = traversal_corpus()
    assert len(corpus) >= 500
    escapes, refused = [], 0
    for raw in corpus:
        try:
            rel = safe_relative_path(raw)
        except UnsafeName:
            refused += 1
            continue
        target = (root / rel).resolve()
        if root not in target.parents or ".git" in target.relative_to(root).parts:
            escapes.append(raw)
    print(f"\ntraversal figures: cases={len(corpus)} refused={refused} escapes={len(escapes)}")
    assert escapes == []
    for fine in ("README.md", "src/app.py", "docs/a b.md", "./src/x.py", "ünïcode.txt"):
        assert safe_relative_path(fine)


async def test_traversal_through_the_phone_path(fetch: Driver) -> None:
    await fetch.ask("fix the typo in README.md of demo", "Apply?")
    for name in ("../../../etc/passwd", "%2e%2e/%2e%2e/etc/passwd", ".git/config", "/etc/shadow"):
        reply = await fetch.ask(f"show {name}", "⚠️")
        assert "not allowed" in reply or "not shown" in reply
    for name in ("../../etc", "%2e%2e", "demo/../.."):
        assert "No repo named" in await fetch.ask(f"/workspace {name}", "No repo")
    await fetch.ask("no", "Discarded")


async def test_forged_stale_and_foreign_approvals_are_refused(fetch: Driver) -> None:
    """Every variant is refused with its reason; only the owner's own yes commits."""
    app_gateway = fetch.app.gateway
    assert app_gateway is not None
    repo = fetch.services.workspace.path("demo")
    head = git(repo, "rev-parse", "HEAD")
    await fetch.ask("fix the typo in README.md of demo", "Apply?")
    session = await fetch.services.sessions.get(fetch.terminal_key())

    def forged(**kw: object) -> Inbound:
        base: dict[str, object] = {
            "channel": "terminal",
            "chat": "owner",
            "sender": "owner",
            "message_id": uuid.uuid4().hex,
            "text": "yes",
            "from_owner": True,
        }
        base.update(kw)
        return Inbound(**base)  # type: ignore[arg-type]

    variants = {
        "not the owner": forged(from_owner=False, sender="intruder"),
        "reply to an older diff": forged(reply_to="out-1"),
        "reaction without the diff": forged(text="", reaction="👍"),
        "button of another diff": forged(approval_nonce="0000000000000000"),
        "other chat": forged(chat="someone-else"),
    }
    accepted = 0
    for name, inbound in variants.items():
        before = git(repo, "rev-parse", "HEAD")
        await app_gateway.receive(inbound)
        await asyncio.sleep(0.3)
        accepted += git(repo, "rev-parse", "HEAD") != before
        assert session.state == "GUARDING", name
    # Expired: the approval's clock ran out while the owner was away.
    await fetch.services.store.db.write(
        "UPDATE approvals SET expires_at=? WHERE id=?", (time.time() - 1, session.data.approval_id)
    )
    expired = await fetch.ask("yes", "expired")
    assert "discarded" in expired
    accepted += git(repo, "rev-parse", "HEAD") != head
    print(
        f"\napproval figures: forged/stale/foreign variants={len(variants) + 1} accepted={accepted}"
    )
    assert accepted == 0
    # And the real thing still works.
    await fetch.ask("fix the typo in README.md of demo", "Apply?")
    await fetch.ask("yes", "Committed")
    assert git(repo, "rev-parse", "HEAD^") == head
