"""Messenger.send: the one place a reply is rendered for its channel and cut to size."""

from __future__ import annotations

import ast
from pathlib import Path

from channels.base import Capabilities
from core.events import Outbound, SendResult, SessionKey
from core.text import utf16_units
from orchestrator.messenger import Messenger
from orchestrator.store import Journal, Store

ROOT = Path(__file__).resolve().parents[2]
KEY = SessionKey("small", "c")


class SmallChannel:
    """50 UTF-16 units a message, its markup is upper case."""

    name = "small"
    capabilities = Capabilities(
        message_limit=50, measure=utf16_units, render=str.upper, can_edit=True
    )

    def __init__(self) -> None:
        self.sent: list[Outbound] = []

    async def send(self, message: Outbound) -> SendResult:
        self.sent.append(message)
        return SendResult(message.edit_of or f"m{len(self.sent)}")


async def test_replies_are_rendered_then_cut_by_the_channels_measure(tmp_path: Path) -> None:
    async with Store(tmp_path / "f.db") as store:
        journal = Journal(tmp_path)
        try:
            await _send_and_check(Messenger(store, journal))
        finally:
            journal.close()


async def _send_and_check(messenger: Messenger) -> None:
    channel = SmallChannel()
    messenger.add_channel(channel)  # type: ignore[arg-type]
    text = " ".join(["go 👍"] * 40)  # 200 characters, 240 units
    result = await messenger.send(KEY, text, reply_to="q1", approval_nonce="n1")
    parts = [m.text for m in channel.sent]
    assert len(parts) >= 5 and all(utf16_units(p) <= 50 for p in parts)
    # rendered before the cut (phone-wrapped before that), nothing lost
    assert "\n".join(parts).split() == text.upper().split()
    assert [m.reply_to for m in channel.sent] == ["q1"] + [None] * (len(parts) - 1)
    assert [m.approval_nonce for m in channel.sent] == [None] * (len(parts) - 1) + ["n1"]
    assert result.message_id == f"m{len(parts)}"

    channel.sent.clear()
    edited = await messenger.send(KEY, "50%", edit_of="m1")  # one part: edited in place
    assert edited.message_id == "m1" and channel.sent[0].edit_of == "m1"
    channel.sent.clear()
    await messenger.send(KEY, text, edit_of="m1")  # several parts: sent anew
    assert all(m.edit_of is None for m in channel.sent)
    channel.sent.clear()
    assert (await messenger.send(KEY, " \n ")).message_id == ""  # blank: nothing sent
    assert channel.sent == []


def test_only_the_messenger_splits() -> None:
    """Channels render and send; cutting happens in one place."""
    callers = []
    # Fetch's own packages (the folders at the root with an __init__.py), never what an
    # install leaves beside them: build/lib/ of `pip install .`, a venv's site-packages.
    packages = [p.parent for p in ROOT.glob("*/__init__.py")]
    for path in sorted(
        p for pkg in packages if pkg.name not in {"tests", "bench"} for p in pkg.rglob("*.py")
    ):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module == "core.text"
                and any(alias.name == "split_message" for alias in node.names)
            ):
                callers.append(str(path.relative_to(ROOT)))
    assert callers == ["orchestrator/messenger.py"]
