"""Fetch's replies in WhatsApp's markup, cut into phone-sized messages.

WhatsApp's markup is not Markdown: ``*bold*``, ``_italic_``, ``~strike~``, ```` ```mono``` ````
and ```` `code` ````. Replies are written in Markdown (the models write it; so do the
instincts), so this converts what differs and leaves code alone: inside ``` blocks and
`inline code` nothing is touched, and a block's language tag is dropped (WhatsApp would
print it). Chunking keeps every ``` block whole when it fits in one message; a block
longer than a message is closed at the cut and reopened in the next, so each message
still renders as monospace.
"""

from __future__ import annotations

import re
import unicodedata

SAFE_CHARS = 3500  # well under WhatsApp's limit; longer messages read badly on a phone
FENCE = "```"

_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_ITALIC = re.compile(r"(?<![*\w])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![*\w])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
_INLINE_CODE = re.compile(r"(`[^`\n]+`)")
_BOLD_CODE = re.compile(r"\*\*(`[^`\n]+`)\*\*")


def _inline(line: str) -> str:
    """Markdown emphasis, links and headings -> WhatsApp, outside `inline code`."""
    heading = _HEADING.match(line)
    if heading:
        line = f"**{heading.group(1)}**"
    line = _BOLD_CODE.sub(r"*\1*", line)  # **`x`**: the bold marks sit outside the code
    parts = _INLINE_CODE.split(line)
    for i in range(0, len(parts), 2):  # even indexes are outside inline code
        text = parts[i]
        text = _LINK.sub(lambda m: m.group(1) if m.group(1) == m.group(2)
                         else f"{m.group(1)} ({m.group(2)})", text)
        text = _ITALIC.sub(r"_\1_", text)  # before bold: **x** must not look like *x*
        text = _BOLD.sub(lambda m: f"*{m.group(1) or m.group(2)}*", text)
        text = _STRIKE.sub(r"~\1~", text)
        parts[i] = text
    return "".join(parts)


def to_whatsapp(text: str) -> str:
    out: list[str] = []
    in_code = False
    for line in text.split("\n"):
        if line.lstrip().startswith(FENCE):
            # ```python -> ``` (WhatsApp shows the tag as text); a closing fence stays.
            out.append(FENCE if not in_code else line.strip())
            in_code = not in_code
        elif in_code:
            out.append(line)
        else:
            out.append(_inline(line))
    if in_code:  # an unclosed block would turn the rest of the chat monospace
        while out and not out[-1].strip():
            out.pop()
        out.append(FENCE)
    return "\n".join(out)


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


def _cut_at(text: str, limit: int) -> int:
    """An index <= limit to cut ``text`` at without splitting a visible character (emoji
    with skin tones, ZWJ families, flags, letters with combining accents)."""
    cut = limit
    while 0 < cut < len(text) and _joined(text, cut):
        cut -= 1
    return cut or limit


def _hard_split(line: str, limit: int) -> list[str]:
    pieces: list[str] = []
    while len(line) > limit:
        cut = _cut_at(line, limit)
        space = line.rfind(" ", limit // 2, cut)  # prefer a word boundary
        cut = space + 1 if space > 0 else cut
        pieces.append(line[:cut])
        line = line[cut:]
    pieces.append(line)
    return pieces


def _blocks(text: str) -> list[tuple[bool, list[str]]]:
    """Split into (is_code, lines) runs: each ``` block (fences included) and each
    paragraph (with the blank lines after it) is one run."""
    blocks: list[tuple[bool, list[str]]] = []
    current: list[str] = []
    in_code = False
    for line in text.split("\n"):
        if line.lstrip().startswith(FENCE):
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
        if in_code:  # an unclosed block: close it so the phone renders it
            current.append(FENCE)
        blocks.append((in_code, current))
    return blocks


def split_for_whatsapp(text: str, limit: int = SAFE_CHARS) -> list[str]:
    """Messages of at most ``limit`` characters. Cuts fall between code blocks and
    paragraphs, then between lines, then (one monster line) between words; a code block
    is split only when it alone exceeds ``limit``, and is then re-fenced at each cut."""
    if len(text) <= limit:
        return [text] if text.strip() else []
    chunks: list[str] = []
    current: list[str] = []

    def fits(piece: str, room: int) -> bool:
        return not current or len("\n".join(current)) + 1 + len(piece) <= room

    lead: list[str] = []  # short text before a long code block, sent with its first part

    def flush(fenced: bool = False) -> None:
        lines = [*lead, FENCE, *current, FENCE] if fenced else current
        chunk = "\n".join(lines).strip("\n")
        if chunk.strip():
            chunks.append(chunk)
        current.clear()
        lead.clear()

    for is_code, lines in _blocks(text):
        block = "\n".join(lines)
        if len(block) <= limit:
            if not fits(block, limit):
                flush()
            current.append(block)
            continue
        # A block longer than one message goes line by line.
        if is_code and current and len("\n".join(current)) <= limit // 4:
            lead.extend(current)
            current.clear()
        else:
            flush()
        body = lines[1:-1] if is_code else lines
        room = limit - (2 * len(FENCE) + 2 if is_code else 0)
        room_now = room - (len("\n".join(lead)) + 1 if lead else 0)
        for line in body:
            for piece in _hard_split(line, room_now if lead else room):
                if not fits(piece, room_now if lead else room):
                    flush(fenced=is_code)
                current.append(piece)
        if is_code and current:  # the block's tail may share a message with what follows
            tail = "\n".join([*lead, FENCE, *current, FENCE])
            current.clear()
            lead.clear()
            current.append(tail)
    flush()
    return chunks
