"""The one message splitter (core/text.py): fences, measures, monster lines, limits."""

from __future__ import annotations

import random
import unicodedata

import pytest

from core.text import FENCE, Measure, split_message, utf16_units

FAMILY = "👩\u200d👩\u200d👧\u200d👦"  # one visible character, 11 code units
FLAG = "🇳🇱"


def fences_balanced(chunk: str) -> bool:
    return sum(1 for ln in chunk.split("\n") if ln.lstrip().startswith(FENCE)) % 2 == 0


def no_broken_grapheme(chunks: list[str]) -> bool:
    for chunk in chunks:
        first = chunk[0]
        if (
            unicodedata.combining(first)
            or first in "\u200d\ufe0f"
            or "\U0001f3fb" <= first <= "\U0001f3ff"
            or chunk[-1] == "\u200d"
        ):
            return False
        flags = len(chunk) - len(chunk.rstrip("".join(map(chr, range(0x1F1E6, 0x1F200)))))
        if flags % 2:
            return False
    return True


# -- limits ----------------------------------------------------------------------------


def test_a_text_that_fits_is_one_message_unchanged() -> None:
    text = "x" * 100
    assert split_message(text, 100) == [text]
    assert split_message("hi 👋\n```\nunclosed", 4000) == ["hi 👋\n```\nunclosed"]


def test_one_over_the_limit_is_cut() -> None:
    text = "word " * 20 + "end"  # 103 characters
    chunks = split_message(text, 102)
    assert len(chunks) == 2 and all(len(c) <= 102 for c in chunks)
    assert "".join(chunks) == text  # cut after a space: nothing lost, nothing added


def test_blank_is_no_message() -> None:
    assert split_message("", 10) == []
    assert split_message("  \n \n", 100) == []


def test_paragraphs_stay_whole_when_they_fit() -> None:
    paragraphs = [f"paragraph {i} " + "y" * 60 for i in range(10)]
    chunks = split_message("\n\n".join(paragraphs), 200)
    assert all(len(c) <= 200 for c in chunks)
    for paragraph in paragraphs:
        assert any(paragraph in chunk for chunk in chunks)  # never cut inside one


# -- fences ----------------------------------------------------------------------------


def test_a_block_that_fits_is_never_split_or_refenced() -> None:
    block = "```\n" + "\n".join(f"line {i}" for i in range(50)) + "\n```"
    chunks = split_message("intro " * 200 + "\n\n" + block + "\n\nafter", len(block) + 10)
    assert any(block in c for c in chunks)
    assert sum(c.count(FENCE) for c in chunks) == 2


def test_a_long_block_is_closed_and_reopened_with_its_language() -> None:
    body = [f"+ row {i:04d} " + "z" * 30 for i in range(200)]
    text = "Diff:\n\n```diff\n" + "\n".join(body) + "\n```\n\nApply? (yes/no)"
    chunks = split_message(text, 900)
    assert len(chunks) > 5
    for chunk in chunks:
        assert len(chunk) <= 900 and fences_balanced(chunk)
        assert chunk.count("```diff") == 1  # every part renders as a diff block
    assert chunks[0].startswith("Diff:\n\n```diff\n+ row 0000")  # short lead rides along
    assert chunks[-1].endswith("```\n\nApply? (yes/no)")
    shown = [ln for c in chunks for ln in c.split("\n") if ln.startswith("+ row")]
    assert shown == body


def test_an_unclosed_block_is_closed_in_every_part() -> None:
    text = "out:\n```\n" + "\n".join(f"log {i} " + "q" * 40 for i in range(100))
    chunks = split_message(text, 500)
    assert all(fences_balanced(c) and len(c) <= 500 for c in chunks)


def test_a_strange_language_tag_is_not_carried_into_the_parts() -> None:
    text = '```"><b>\n' + "\n".join("k" * 50 for _ in range(40)) + "\n```"
    chunks = split_message(text, 300)
    assert len(chunks) > 1 and all(c.startswith("```\nk") for c in chunks)


# -- measures --------------------------------------------------------------------------


def test_utf16_counts_emoji_twice() -> None:
    assert utf16_units("👍") == 2 and utf16_units("ab") == 2 and utf16_units(FAMILY) == 11


def test_emoji_are_cut_by_utf16_units_and_never_halved() -> None:
    text = "\n".join("👍" * 50 for _ in range(100))  # 5,000 code points, 10,000 units
    chunks = split_message(text, 4096, utf16_units)
    assert len(chunks) >= 3
    assert all(utf16_units(c) <= 4096 for c in chunks)
    assert all(len(c) <= 2048 for c in chunks)  # by characters these would have fit twice
    assert "".join(chunks).replace("\n", "") == text.replace("\n", "")
    for chunk in chunks:  # whole code points: each encodes to valid UTF-16 and back
        assert chunk.encode("utf-16-le").decode("utf-16-le") == chunk


def test_a_monster_emoji_line_keeps_every_visible_character_whole() -> None:
    line = "".join([FAMILY, "x", FLAG, "e\u0301", "👍🏽", " "][i % 6] for i in range(3000))
    for measure in (len, utf16_units):
        chunks = split_message(line, 97, measure)
        assert all(measure(c) <= 97 for c in chunks)
        assert no_broken_grapheme(chunks)
        assert "".join(chunks) == line


# -- monster lines ---------------------------------------------------------------------


def test_a_line_longer_than_a_message_is_cut_at_words() -> None:
    words = [f"w{i:03d}" for i in range(500)]
    line = " ".join(words)
    chunks = split_message(line, 120)
    assert all(len(c) <= 120 for c in chunks)
    assert "".join(chunks) == line
    assert all(c.endswith(" ") for c in chunks[:-1])  # cut after a space, not in a word


def test_a_line_without_spaces_is_hard_cut() -> None:
    chunks = split_message("x" * 10_000, 4096, utf16_units)
    assert "".join(chunks) == "x" * 10_000 and [len(c) for c in chunks] == [4096, 4096, 1808]


@pytest.mark.parametrize("measure", [len, utf16_units])
def test_random_texts_keep_every_character_and_fit(measure: Measure) -> None:
    rng = random.Random(9)
    pieces = [
        "word",
        FAMILY,
        "👍🏽",
        "e\u0301",
        FLAG,
        "**b**",
        "`c`",
        "\n",
        "\n\n",
        "\n```\n",
        "\n```sh\n",
        "x" * 300,
        " ",
    ]
    for _ in range(150):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 400)))
        limit = rng.randint(80, 900)
        chunks = split_message(text, limit, measure)
        assert all(0 < measure(c) <= limit for c in chunks)
        if len(chunks) > 1:  # a text that fits is sent as written, cut ones each balance
            assert all(fences_balanced(c) for c in chunks)
        assert no_broken_grapheme(chunks)
        kept = "".join(chunks).replace("```sh", "").replace(FENCE, "")
        original = text.replace("```sh", "").replace(FENCE, "")
        assert kept.replace("\n", "").replace(" ", "") == original.replace("\n", "").replace(
            " ", ""
        )
