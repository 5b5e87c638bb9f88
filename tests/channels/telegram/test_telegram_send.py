"""Outbound through the fake Bot API: HTML, buttons, flood waits, edits, chunks, typing."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from channels.telegram import TelegramChannel
from channels.telegram.channel import Backoff
from core.errors import SendFailed
from core.events import Outbound, SessionKey
from core.gate import AllowlistGate
from orchestrator.supervisor import TaskSupervisor
from tests.channels.outbound import messenger_for
from tests.channels.telegram.support import OWNER, RecordingSink, settings_for
from tests.fakes.telegram_api import FakeTelegramApi

DIFF = (
    "📝 demo: 1 file, +1 −1\n• README.md +1 −1\n\n```\n▸ README.md\n-Teh <quick> & fox\n"
    "+The <quick> & fox\n```\n\nApply? (yes/no) · more · show <file>"
)
NONCE = "9f86d081884c7d65"


def out(text: str, **kw: Any) -> Outbound:
    return Outbound("telegram", str(OWNER), text, **kw)


async def test_html_is_escaped_and_code_is_monospace(
    tg: FakeTelegramApi,
    make_channel: Callable[..., Any],
) -> None:
    channel = await make_channel()
    result = await channel.send(out("a < b && `x<y>` **bold**\n```python\nif a<b: pass\n```"))
    [m] = tg.sent(OWNER)
    assert result.message_id == f"{OWNER}:{m.message_id}"
    assert m.parse_mode == "HTML"
    assert m.raw == (
        "a &lt; b &amp;&amp; <code>x&lt;y&gt;</code> <b>bold</b>\n"
        '<pre><code class="language-python">if a&lt;b: pass</code></pre>'
    )
    assert m.text == "a < b && x<y> bold\nif a<b: pass"  # what the phone shows


async def test_a_diff_gets_buttons_bound_to_its_nonce_and_a_tap_answers_yes(
    tg: FakeTelegramApi,
    sink: RecordingSink,
    make_channel: Callable[..., Any],
) -> None:
    channel = await make_channel()
    page = await channel.send(out("```\n+more\n```\n\nApply? (yes/no)"))  # a "more" page
    result = await channel.send(out(DIFF, approval_nonce=NONCE))
    assert tg.messages[(str(OWNER), int(page.message_id.split(":")[1]))].reply_markup is None
    chat, mid = result.message_id.split(":")
    diff = tg.messages[(chat, int(mid))]
    buttons = diff.reply_markup["inline_keyboard"][0]  # type: ignore[index]
    assert [b["callback_data"] for b in buttons] == [f"fetch:yes:{NONCE}", f"fetch:no:{NONCE}"]
    assert "<pre><code>" in diff.raw and "-Teh &lt;quick&gt; &amp; fox" in diff.raw

    tg.push_callback(buttons[0]["callback_data"], chat_id=chat, message_id=int(mid), from_id=OWNER)
    answer = await sink.next()
    assert (answer.text, answer.reaction, answer.reply_to) == ("yes", "👍", result.message_id)
    assert answer.approval_nonce == NONCE
    assert answer.from_owner and answer.message_id.startswith("cb:")
    [ack] = await tg.wait_for("answerCallbackQuery")
    assert ack.params["text"] == "Got it: yes"
    await tg.wait_for("editMessageReplyMarkup")
    assert diff.reply_markup is None, "answered once: the buttons are gone"


async def test_a_strangers_tap_gets_no_answer_and_an_allowed_members_keeps_the_buttons(
    tg: FakeTelegramApi,
    sink: RecordingSink,
    make_channel: Callable[..., Any],
) -> None:
    channel = await make_channel(gate=AllowlistGate(["telegram:555"]))
    chat, mid = (await channel.send(out(DIFF, approval_nonce=NONCE))).message_id.split(":")
    # A stranger's tap: no toast (the gate is asked first), nothing handed over.
    stranger = tg.push_callback(
        f"fetch:yes:{NONCE}", chat_id=chat, message_id=int(mid), from_id=999
    )
    await tg.wait_for(
        "getUpdates", where=lambda c: c.params.get("offset") == stranger["update_id"] + 1
    )
    assert tg.calls_to("answerCallbackQuery") == []
    # An allowed member's tap is answered and handed over (the gateway decides what it
    # may do), but only the owner's answer takes the buttons away.
    tg.push_callback(f"fetch:no:{NONCE}", chat_id=chat, message_id=int(mid), from_id=555)
    answer = await sink.next()
    assert (answer.text, answer.sender, answer.from_owner) == ("no", "555", False)
    [ack] = await tg.wait_for("answerCallbackQuery")
    assert ack.params["text"] == "Got it: no"
    assert tg.messages[(chat, int(mid))].reply_markup is not None
    tg.push_callback("something-else", chat_id=chat, message_id=int(mid))
    [_, inactive] = await tg.wait_for("answerCallbackQuery", count=2)
    assert inactive.params["text"] == "That button is not active"
    tg.push_callback("something-else", chat_id=chat, message_id=int(mid), from_id=999)
    last = tg.push_message("after", chat_id=OWNER, from_id=OWNER)
    await tg.wait_for("getUpdates", where=lambda c: c.params.get("offset") == last["update_id"] + 1)
    assert len(tg.calls_to("answerCallbackQuery")) == 2  # not even "not active"
    assert (await sink.next()).text == "after"
    await sink.nothing()
    assert {i.sender for i in sink.got} == {"555", str(OWNER)}


async def test_flood_limit_waits_retry_after_then_sends(
    tg: FakeTelegramApi,
    make_channel: Callable[..., Any],
) -> None:
    channel = await make_channel()
    tg.fail_next("sendMessage", retry_after=1)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await channel.send(out("after the flood"))
    elapsed = loop.time() - started
    refused, accepted = tg.calls_to("sendMessage")
    assert (refused.status, accepted.status) == (429, 200)
    assert accepted.at - refused.at >= 1.0 and 1.0 <= elapsed < 3.0
    assert [m.text for m in tg.sent(OWNER)] == ["after the flood"]


async def test_endless_flood_fails_the_send_not_the_process(
    tg: FakeTelegramApi,
    make_channel: Callable[..., Any],
) -> None:
    channel = await make_channel()
    tg.fail_next("sendMessage", retry_after=120)  # longer than we agree to wait
    with pytest.raises(SendFailed, match="429"):
        await channel.send(out("x"))
    for _ in range(4):
        tg.fail_next("sendMessage", retry_after=0)
    with pytest.raises(SendFailed, match="Too Many Requests"):
        await channel.send(out("x"))  # three retries, then it says so
    assert len(tg.calls_to("sendMessage")) == 1 + 4
    await channel.send(out("and then it works"))
    assert tg.sent(OWNER)[-1].text == "and then it works"


async def test_edit_in_place(tg: FakeTelegramApi, make_channel: Callable[..., Any]) -> None:
    channel = await make_channel()
    first = await channel.send(out("⏳ working… 10%"))
    again = await channel.send(out("⏳ working… 90%", edit_of=first.message_id))
    assert again.message_id == first.message_id
    [m] = tg.sent(OWNER)
    assert (m.text, m.edits, m.history) == ("⏳ working… 90%", 1, ["⏳ working… 10%"])
    # The same text again is "not modified" to Telegram and success to us.
    same = await channel.send(out("⏳ working… 90%", edit_of=first.message_id))
    assert same.message_id == first.message_id and len(tg.sent(OWNER)) == 1
    # A message that cannot be edited: the words arrive as a new message.
    gone = await channel.send(out("done", edit_of=f"{OWNER}:9999"))
    assert gone.message_id != first.message_id and tg.sent(OWNER)[-1].text == "done"


async def test_long_message_is_chunked_without_breaking_the_code_block(
    tg: FakeTelegramApi,
    make_channel: Callable[..., Any],
    tmp_path: Path,
) -> None:
    channel = await make_channel()
    code = [f"line {i:03d} <{'x' * 40}> & more" for i in range(300)]
    text = "Here is the file:\n```python\n" + "\n".join(code) + "\n```\nApply? (yes/no)"
    async with messenger_for(channel, tmp_path) as messenger:  # the one place that cuts
        result = await messenger.send(
            SessionKey("telegram", str(OWNER)), text, approval_nonce=NONCE
        )
    sent = tg.sent(OWNER)
    assert len(sent) >= 3  # ~20k characters; the fake refuses anything over 4096
    for m in sent:
        assert m.raw.count("<pre>") == m.raw.count("</pre>") == 1
        assert m.raw.count('class="language-python"') == 1  # reopened with its language
    shown = "\n".join(m.text for m in sent)
    assert re.findall(r"line \d{3} <x+> & more", shown) == code
    assert "```" not in shown
    assert [m.reply_markup is not None for m in sent] == [False] * (len(sent) - 1) + [True]
    assert result.message_id == f"{OWNER}:{sent[-1].message_id}"


async def test_reply_to_is_threaded(tg: FakeTelegramApi, make_channel: Callable[..., Any]) -> None:
    channel = await make_channel()
    await channel.send(out("answer", reply_to=f"{OWNER}:17"))
    await channel.send(out("elsewhere", reply_to="other-chat:17"))
    first, second = tg.sent(OWNER)
    assert first.reply_to == 17 and second.reply_to is None


async def test_typing_repeats_until_cleared(
    tg: FakeTelegramApi,
    make_channel: Callable[..., Any],
) -> None:
    channel = await make_channel(typing_every=0.05)
    await channel.set_typing(str(OWNER), True)
    await tg.wait_for("sendChatAction", count=3)
    await channel.set_typing(str(OWNER), False)
    count = len(tg.calls_to("sendChatAction"))
    await asyncio.sleep(0.2)
    assert len(tg.calls_to("sendChatAction")) == count
    assert {c.params["action"] for c in tg.calls_to("sendChatAction")} == {"typing"}
    await channel.set_typing(str(OWNER), True)  # left on: stop() ends it
    await tg.wait_for("sendChatAction", count=count + 1)


async def test_send_before_start_is_a_clear_error(make_channel: Callable[..., Any]) -> None:
    channel = await make_channel(start=False)
    with pytest.raises(SendFailed, match="not started"):
        await channel.send(out("x"))


async def test_stop_ends_every_task_the_channel_spawned(
    tg: FakeTelegramApi,
    sink: RecordingSink,
) -> None:
    supervisor = TaskSupervisor()  # the application's, in a real Fetch
    channel = TelegramChannel(
        settings_for(tg), poll_timeout=1, backoff=Backoff(0.05, 0.2), typing_every=0.05
    )
    await channel.start(sink, supervisor)
    await channel.set_typing(str(OWNER), True)
    tasks = supervisor.running()
    assert {t.get_name() for t in tasks} == {
        "channel:telegram:polling",
        f"channel:telegram:typing:{OWNER}",
    }
    await channel.stop()
    assert supervisor.running() == [] and all(t.done() for t in tasks)
