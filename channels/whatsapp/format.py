"""Fetch's replies in WhatsApp's markup.

WhatsApp's markup is not Markdown: ``*bold*``, ``_italic_``, ``~strike~``, ```` ```mono``` ````
and ```` `code` ````. Replies are written in Markdown (the models write it; so do the
instincts), so this converts what differs and leaves code alone: inside ``` blocks and
`inline code` nothing is touched, and a block's language tag is dropped (WhatsApp would
print it). The result still marks code with ``` fences, so the messenger renders a reply
with this first and then cuts it (``core.text.split_message``) into ``SAFE_CHARS`` messages.
"""

from __future__ import annotations

import re

from core.text import FENCE

SAFE_CHARS = 3500  # well under WhatsApp's limit; longer messages read badly on a phone

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
        text = _LINK.sub(
            lambda m: m.group(1) if m.group(1) == m.group(2) else f"{m.group(1)} ({m.group(2)})",
            text,
        )
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
