"""/remember, /memory, /forget."""

from __future__ import annotations

import re

from instincts.contract import InstinctContext
from instincts.router import InstinctRouter

router = InstinctRouter("memory")

_PREFIX = re.compile(r"^(fact|pref|preference|learning|learned)\s*:\s*", re.IGNORECASE)
_KIND = {
    "fact": "fact",
    "pref": "preference",
    "preference": "preference",
    "learning": "learning",
    "learned": "learning",
}
_TAG = re.compile(r"(?<!\S)#([\w-]{1,32})")


def parse_remember(args: str) -> tuple[str, str, tuple[str, ...]]:
    """``pref: I like tabs #style`` -> ("preference", "I like tabs", ("style",))."""
    text = args.strip()
    kind = "fact"
    found = _PREFIX.match(text)
    if found:
        kind = _KIND[found.group(1).lower()]
        text = text[found.end() :]
    tags = tuple(_TAG.findall(text))
    text = _TAG.sub("", text)
    return kind, " ".join(text.split()), tags


@router.command(
    "remember", aliases=("rem",), help="remember a fact: /remember [pref:|learning:] text #tag"
)
async def remember(ctx: InstinctContext, args: str) -> None:
    kind, text, tags = parse_remember(args)
    if not text:
        await ctx.reply(
            "What should I remember? e.g.\n"
            "/remember the staging DB is on port 5433\n"
            "/remember pref: I review diffs on my phone, keep them small"
        )
        return
    await ctx.reply(await ctx.memory.remember(kind, text, tags))


@router.command(
    "memory",
    aliases=("mem", "memories"),
    help="what I remember; /memory <words> searches",
    reads_only=True,
)
async def memory(ctx: InstinctContext, args: str) -> None:
    query = args.strip()
    await ctx.reply(await (ctx.memory.search(query) if query else ctx.memory.overview()))


@router.command("forget", help="forget one memory: /forget <id>")
async def forget(ctx: InstinctContext, args: str) -> None:
    word = args.strip().lstrip("#")
    if not word.isdigit():
        await ctx.reply("Which one? /forget <id> — /memory lists them with their ids.")
        return
    if len(word) > 18:  # past any id SQLite can hold: none is that memory
        await ctx.reply(f"There is no memory #{word[:24]}. /memory lists them with their ids.")
        return
    await ctx.reply(await ctx.memory.forget(int(word)))
