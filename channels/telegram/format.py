"""Text for Telegram: the core's Markdown-ish replies rendered as Telegram HTML, and the
👍/👎 keyboard under a diff that awaits approval.

HTML rather than MarkdownV2: it needs three characters escaped (``& < >``) instead of
eighteen, so a diff or a stack trace can never break the parse. Telegram's limit (4096)
counts UTF-16 code units of the text after entity parsing; the messenger cuts the
*Markdown* at that count (``Capabilities.measure``) before it is rendered here, which is
conservative, since fences and escapes only ever shrink when parsed.
"""

from __future__ import annotations

import html
import re
from typing import Any

from core.text import FENCE, fence_opener

LIMIT = 4096  # UTF-16 code units
CALLBACK_YES = "fetch:yes"
CALLBACK_NO = "fetch:no"

_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_BOLD = re.compile(r"\*\*([^*\n]+)\*\*")


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
                lang = fence_opener(stripped)[len(FENCE) :]
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
    return {
        "inline_keyboard": [
            [
                {"text": "👍 Apply", "callback_data": f"{CALLBACK_YES}:{nonce}"[:64]},
                {"text": "👎 Discard", "callback_data": f"{CALLBACK_NO}:{nonce}"[:64]},
            ]
        ]
    }
