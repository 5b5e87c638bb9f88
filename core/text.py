"""The one message splitter: a reply cut into messages a channel accepts.

Every channel has a size limit, counted its own way (``measure``): WhatsApp counts
characters, Telegram UTF-16 code units (an emoji is two). Cuts fall between code blocks
and paragraphs, then between lines, then (one monster line) between words, and never
inside a visible character (a ZWJ family, a flag, a skin tone, an accent). A ``` block is
split only when it alone is longer than a message; it is then closed at each cut and
reopened (same language tag) in the next message, so every message renders on its own.

``measure`` must be additive over concatenation (``len``, UTF-16 units and bytes are):
sizes are kept as running sums instead of re-measuring whole chunks.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

FENCE = "```"
Measure = Callable[[str], int]

_LANG = re.compile(r"^[\w+-]{1,32}$")


def utf16_units(text: str) -> int:
    """Length in UTF-16 code units (Telegram's count): a character outside the BMP is two."""
    return len(text.encode("utf-16-le")) // 2


def is_fence(line: str) -> bool:
    return line.lstrip().startswith(FENCE)


def fence_opener(line: str) -> str:
    """The fence that reopens a cut block: same language tag, nothing else (bounded)."""
    tag = line.strip()[len(FENCE) :].strip()
    return FENCE + tag if _LANG.match(tag) else FENCE


# -- graphemes -------------------------------------------------------------------------


def _regional(char: str) -> bool:
    return "\U0001f1e6" <= char <= "\U0001f1ff"  # flags are pairs of these


def _joined(text: str, cut: int) -> bool:
    """Would cutting ``text`` before index ``cut`` split one visible character?"""
    char, before = text[cut], text[cut - 1]
    if unicodedata.combining(char) or char in "\u200d\ufe0f\ufe0e" or before == "\u200d":
        return True
    if "\U0001f3fb" <= char <= "\U0001f3ff":  # skin tone modifier
        return True
    if _regional(char) and _regional(before):
        run = 0
        while cut - run - 1 >= 0 and _regional(text[cut - run - 1]):
            run += 1
        return run % 2 == 1  # inside a flag, not between two flags
    return False


def _fitting(text: str, limit: int, measure: Measure) -> int:
    """How many characters of ``text`` fit in ``limit``. Python strings hold whole code
    points, so no cut can fall inside a surrogate pair whatever the measure counts."""
    if measure is len:
        return min(limit, len(text))
    used = 0
    for index, char in enumerate(text):
        used += measure(char)
        if used > limit:
            return index
    return len(text)


def _cut_at(text: str, fit: int) -> int:
    """An index <= ``fit`` to cut ``text`` at without splitting a visible character."""
    cut = fit
    while 0 < cut < len(text) and _joined(text, cut):
        cut -= 1
    return cut or fit  # one "character" longer than a message: cut it after all


def _hard_split(line: str, limit: int, measure: Measure) -> list[str]:
    pieces: list[str] = []
    while measure(line) > limit:
        fit = max(_fitting(line, limit, measure), 1)  # always progress
        cut = _cut_at(line, fit)
        space = line.rfind(" ", _fitting(line, limit // 2, measure), cut)  # a word boundary
        cut = space + 1 if space > 0 else cut
        pieces.append(line[:cut])
        line = line[cut:]
    pieces.append(line)
    return pieces


# -- blocks ----------------------------------------------------------------------------


def _blocks(text: str) -> list[tuple[bool, list[str]]]:
    """Split into (is_code, lines) runs: each ``` block (fences included) and each
    paragraph (with the blank lines after it) is one run."""
    blocks: list[tuple[bool, list[str]]] = []
    current: list[str] = []
    in_code = False
    for line in text.split("\n"):
        if is_fence(line):
            if in_code:
                current.append(line)
                blocks.append((True, current))
                current, in_code = [], False
                continue
            if current:
                blocks.append((False, current))
            current, in_code = [line], True
        elif not in_code and current and not current[-1].strip() and line.strip():
            blocks.append((False, current))  # a new paragraph starts
            current = [line]
        else:
            current.append(line)
    if current:
        if in_code:  # an unclosed block: close it so each message renders
            current.append(FENCE)
        blocks.append((in_code, current))
    return blocks


class _Lines:
    """Lines to be joined with newlines, with their measured size kept as they grow."""

    def __init__(self, measure: Measure) -> None:
        self.lines: list[str] = []
        self.size = 0
        self._measure = measure
        self._newline = measure("\n")

    def add(self, line: str) -> None:
        self.size += self.grows_by(line)
        self.lines.append(line)

    def grows_by(self, line: str) -> int:
        return self._measure(line) + (self._newline if self.lines else 0)

    def take(self) -> list[str]:
        lines, self.lines, self.size = self.lines, [], 0
        return lines

    def __bool__(self) -> bool:
        return bool(self.lines)


def split_message(text: str, limit: int, measure: Measure = len) -> list[str]:
    """Messages of at most ``limit`` (as ``measure`` counts). A text that fits is one
    message, unchanged; a blank one is none."""
    if measure(text) <= limit:
        return [text] if text.strip() else []
    chunks: list[str] = []
    current = _Lines(measure)
    lead = _Lines(measure)  # short text before a long code block, sent with its first part
    opener = FENCE

    def fits(piece: str, room: int) -> bool:
        return not current or current.size + current.grows_by(piece) <= room

    def flush(fenced: bool = False) -> None:
        body = current.take()
        lines = [*lead.take(), *([opener, *body, FENCE] if fenced else body)]
        chunk = "\n".join(lines).strip("\n")
        if chunk.strip():
            chunks.append(chunk)

    for is_code, lines in _blocks(text):
        block = "\n".join(lines)
        if measure(block) <= limit:
            if not fits(block, limit):
                flush()
            current.add(block)
            continue
        # A block longer than one message goes line by line.
        if is_code and current and current.size <= limit // 4:
            for line in current.take():
                lead.add(line)
        else:
            flush()
        opener = fence_opener(lines[0]) if is_code else FENCE
        body = lines[1:-1] if is_code else lines
        newline = measure("\n")
        room = limit - (measure(opener) + measure(FENCE) + 2 * newline if is_code else 0)
        for line in body:
            # While the lead waits for the first part, it takes room in that part.
            room_now = room - (lead.size + newline if lead else 0)
            for piece in _hard_split(line, room_now, measure):
                if not fits(piece, room_now if lead else room):
                    flush(fenced=is_code)
                current.add(piece)
        if is_code and current:  # the block's tail may share a message with what follows
            tail = "\n".join([*lead.take(), opener, *current.take(), FENCE])
            current.add(tail)
    flush()
    return chunks
