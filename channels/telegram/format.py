"""Text for Telegram: the core's Markdown-ish replies rendered as Telegram HTML, cut into
messages Telegram accepts, and the 👍/👎 keyboard under a diff that awaits approval.

HTML rather than MarkdownV2: it needs three characters escaped (``& < >``) instead of
eighteen, so a diff or a stack trace can never break the parse. Telegram's limit (4096)
counts UTF-16 code units of the text after entity parsing; cutting the *source* at that
count is conservative, since fences and escapes only ever shrink when parsed.
"""

from __future__ import annotations

import html
import re
from typing import Any

LIMIT = 4096
CALLBACK_YES = "fetch:yes"
CALLBACK_NO = "fetch:no"
FENCE = "```"

_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_BOLD = re.compile(r"\*\*([^*\n]+)\*\*")
_LANG = re.compile(r"^[\w+-]{1,32}$")


def units(text: str) -> int:
    """Length as Telegram counts it: UTF-16 code units (an emoji is two)."""
    return len(text.encode("utf-16-le")) // 2


def _hard_cut(line: str, limit: int) -> list[str]:
    """A line longer than ``limit`` units, cut into pieces that fit (never mid-character)."""
    if units(line) <= limit:
        return [line]
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for ch in line:
        width = units(ch)
        if size + width > limit:
            pieces.append("".join(current))
            current = []
            size = 0
        current.append(ch)
        size += width
    pieces.append("".join(current))
    return pieces


def _opener(fence_line: str) -> str:
    """The fence that reopens a cut block: same language, nothing else (bounded length)."""
    tag = fence_line.strip()[len(FENCE):].strip()
    return FENCE + tag if _LANG.match(tag) else FENCE


def split_text(text: str, limit: int = LIMIT) -> list[str]:
    """Chunks of at most ``limit`` units, cut at line ends. A code block that has to be cut
    is closed at the end of one chunk and reopened (same language) at the start of the next,
    so every chunk renders as balanced HTML."""
    if units(text) <= limit:
        return [text]
    closer = units(FENCE) + 1
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    opener = ""  # the fence line that opened the block we are in; "" outside code
    for line in text.split("\n"):
        is_fence = line.strip().startswith(FENCE)
        closes = is_fence and bool(opener)
        for piece in _hard_cut(line, limit - 2 * closer - units(opener or FENCE)):
            # Inside a block every line keeps room for the fence that may have to close it.
            reserve = closer if opener and not closes else 0
            if current and size + units(piece) + 1 + reserve > limit:
                if opener:
                    current.append(FENCE)
                chunks.append("\n".join(current))
                current, size = ([opener], units(opener) + 1) if opener else ([], 0)
            current.append(piece)
            size += units(piece) + 1
        if is_fence:
            opener = "" if closes else _opener(line)
    if current:
        chunks.append("\n".join(current))
    return [c for c in chunks if c.strip()]


def _inline(text: str) -> str:
    escaped = html.escape(text, quote=False)
    escaped = _INLINE_CODE.sub(r"<code>\1</code>", escaped)
    return _BOLD.sub(r"<b>\1</b>", escaped)


def to_html(text: str) -> str:
    """Fenced blocks become ``<pre><code>``; outside them `code` and **bold**; everything
    else is escaped. An unclosed fence is closed at the end rather than dropped."""
    out: list[str] = []
    prose: list[str] = []
    code: list[str] | None = None
    lang = ""

    def flush_prose() -> None:
        if prose:
            out.append(_inline("\n".join(prose)))
            prose.clear()

    def flush_code() -> None:
        assert code is not None
        body = html.escape("\n".join(code), quote=False)
        attr = f' class="language-{lang}"' if lang else ""
        out.append(f"<pre><code{attr}>{body}</code></pre>")

    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.startswith(FENCE):
            if code is None:
                flush_prose()
                lang = _opener(stripped)[len(FENCE):]
                code = []
            else:
                flush_code()
                code = None
            continue
        if code is not None:
            code.append(line)
        else:
            prose.append(line)
    if code is not None:
        flush_code()
    flush_prose()
    return "\n".join(out)


def approval_keyboard(nonce: str) -> dict[str, Any]:
    """👍/👎 under a diff. The data carries the approval's nonce, so a tap can only ever
    answer the diff it was shown under (callback data is at most 64 bytes)."""
    return {"inline_keyboard": [[
        {"text": "👍 Apply", "callback_data": f"{CALLBACK_YES}:{nonce}"[:64]},
        {"text": "👎 Discard", "callback_data": f"{CALLBACK_NO}:{nonce}"[:64]},
    ]]}
