"""Outbound formatting goldens: Markdown in, the WhatsApp messages that would be sent out.
``FETCH_UPDATE_GOLDENS=1`` rewrites the ``.expected.json`` files."""

from __future__ import annotations

import json
import os
import random
import unicodedata
from pathlib import Path

import pytest

from channels.whatsapp.format import SAFE_CHARS, to_whatsapp
from core.text import FENCE, split_message

FIXTURES = Path(__file__).parent / "fixtures" / "outbound"
CASES = sorted(p.name.removesuffix(".input.md") for p in FIXTURES.glob("*.input.md"))
LIMITS = {"emoji_long_line": 200}  # small enough to force cuts inside one line


def split_for_whatsapp(text: str, limit: int = SAFE_CHARS) -> list[str]:
    """What the messenger does with a reply already in WhatsApp markup: the one splitter,
    with the channel's measure (characters)."""
    return split_message(text, limit)


def render(text: str, limit: int) -> list[str]:
    """Markdown in, the messages WhatsApp sends: ``Messenger.send`` applies the channel's
    ``render`` (``to_whatsapp``), then cuts; ``WhatsAppChannel.send`` sends each as is."""
    return split_message(to_whatsapp(text), limit)


def assert_well_formed(chunks: list[str], limit: int) -> None:
    for chunk in chunks:
        assert 0 < len(chunk) <= limit
        # every message renders on its own: its ``` fences are balanced
        fences = [ln for ln in chunk.split("\n") if ln.lstrip().startswith(FENCE)]
        assert len(fences) % 2 == 0, chunk


@pytest.mark.parametrize("case", CASES)
def test_outbound_golden(case: str) -> None:
    limit = LIMITS.get(case, SAFE_CHARS)
    chunks = render((FIXTURES / f"{case}.input.md").read_text(encoding="utf-8"), limit)
    assert_well_formed(chunks, limit)
    golden = FIXTURES / f"{case}.expected.json"
    got = {"limit": limit, "chunks": chunks}
    if os.environ.get("FETCH_UPDATE_GOLDENS") == "1":
        golden.write_text(json.dumps(got, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    assert got == json.loads(golden.read_text(encoding="utf-8"))


def test_markdown_becomes_whatsapp_markup() -> None:
    assert to_whatsapp("**done** and *maybe*") == "*done* and _maybe_"
    assert to_whatsapp("__done__ ~~gone~~") == "*done* ~gone~"
    assert to_whatsapp("## Status") == "*Status*"
    assert to_whatsapp("[docs](https://x.io/a)") == "docs (https://x.io/a)"
    assert to_whatsapp("`**kept**` **bold**") == "`**kept**` *bold*"
    assert to_whatsapp("* item\n- item\n2 * 3 * 4") == "* item\n- item\n2 * 3 * 4"


def test_code_blocks_are_left_alone_and_lose_their_language_tag() -> None:
    text = "```python\nx = a**2  # *not* italic\n```"
    assert to_whatsapp(text) == "```\nx = a**2  # *not* italic\n```"


def test_a_short_message_is_one_chunk_unchanged() -> None:
    assert split_for_whatsapp("hi 👋") == ["hi 👋"]
    assert split_for_whatsapp("  \n ") == []


def test_a_code_block_that_fits_is_never_split() -> None:
    block = "```\n" + "\n".join(f"line {i}" for i in range(100)) + "\n```"
    text = "x" * 2500 + "\n\n" + block  # together too long, the block alone fits
    chunks = split_for_whatsapp(text, 1000 + len(block))
    assert any(block in chunk for chunk in chunks)
    assert sum(chunk.count(FENCE) for chunk in chunks) == 2  # not re-fenced anywhere


def _graphemes_intact(chunks: list[str]) -> bool:
    for chunk in chunks:
        first = chunk[0]
        if (
            unicodedata.combining(first)
            or first in "\u200d\ufe0f"
            or "\U0001f3fb" <= first <= "\U0001f3ff"
        ):
            return False
        if chunk[-1] == "\u200d":
            return False
        flags = len(chunk) - len(chunk.rstrip("".join(map(chr, range(0x1F1E6, 0x1F200)))))
        if flags % 2:  # half a flag at the end
            return False
    return True


def test_random_texts_keep_every_character_and_stay_well_formed() -> None:
    rng = random.Random(2024)
    pieces = [
        "word",
        "👩\u200d👩\u200d👧",
        "👍🏽",
        "e\u0301",
        "🇳🇱",
        "**b**",
        "`c`",
        "\n",
        "\n\n",
        "\n```\n",
        "x" * 300,
        " ",
    ]
    for _ in range(200):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 400)))
        limit = rng.randint(60, 900)
        converted = to_whatsapp(text)
        chunks = split_for_whatsapp(converted, limit)
        assert_well_formed(chunks, limit)
        assert _graphemes_intact(chunks)
        kept = "".join(chunks).replace(FENCE, "").replace("\n", "").replace(" ", "")
        original = converted.replace(FENCE, "").replace("\n", "").replace(" ", "")
        assert kept == original
