"""Rendering and cutting (by the messenger's splitter, Telegram's measure), without the
network."""

from __future__ import annotations

from channels.telegram import TelegramChannel
from channels.telegram.format import approval_keyboard, to_html
from core.text import split_message
from core.text import utf16_units as units
from tests.fakes.telegram_api import parse_html


def split_text(text: str, limit: int) -> list[str]:
    """What the messenger does with a reply for Telegram: the one splitter, with the
    measure and rendering the channel declares."""
    caps = TelegramChannel.capabilities
    return split_message(caps.render(text), limit, caps.measure)


def test_every_special_character_is_escaped() -> None:
    nasty = "<script>&amp; \"q\" 'a' </b> ** &#x41; &lt inline"
    rendered = to_html(nasty)
    visible, problem = parse_html(rendered)
    assert problem is None and visible == nasty


def test_unclosed_fence_is_closed() -> None:
    assert to_html("see\n```\nx < 1") == "see\n<pre><code>x &lt; 1</code></pre>"


def test_language_tag_is_kept_only_when_plain() -> None:
    assert 'class="language-diff"' in to_html("```diff\n+a\n```")
    assert "class=" not in to_html('```"><b>\nx\n```')


def test_units_count_emoji_twice() -> None:
    assert units("👍") == 2 and units("ab") == 2


def test_emoji_heavy_text_is_cut_by_utf16_units() -> None:
    text = "\n".join("👍" * 50 for _ in range(100))  # 5,000 code points, 10,000 units
    chunks = split_text(text, 4096)
    assert all(units(c) <= 4096 for c in chunks) and len(chunks) >= 3
    assert "\n".join(chunks).replace("\n", "") == text.replace("\n", "")


def test_monster_line_is_hard_cut() -> None:
    chunks = split_text("x" * 10_000, 4096)
    assert "".join(chunks) == "x" * 10_000 and all(units(c) <= 4096 for c in chunks)


def test_cut_code_block_is_closed_and_reopened() -> None:
    body = [f"{i:04d}" for i in range(2000)]
    chunks = split_text("```sh\n" + "\n".join(body) + "\n```\nafter", 1000)
    assert all(units(c) <= 1000 for c in chunks)
    for chunk in chunks[:-1]:
        assert chunk.startswith("```sh\n") and chunk.endswith("\n```")
    rebuilt = [line for c in chunks for line in c.split("\n") if not line.startswith("```")]
    assert rebuilt == [*body, "after"]


def test_button_data_fits_telegrams_64_bytes() -> None:
    row = approval_keyboard("n" * 100)["inline_keyboard"][0]
    assert all(len(b["callback_data"].encode()) <= 64 for b in row)
