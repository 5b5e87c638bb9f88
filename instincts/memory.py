"""/remember, /memory, /forget."""

from __future__ import annotations

import datetime as dt
import re

from core.errors import FetchError
from instincts.router import InstinctRouter
from orchestrator.context import Context

router = InstinctRouter("memory")

_PREFIX = re.compile(r"^(fact|pref|preference|learning|learned)\s*:\s*", re.IGNORECASE)
_KIND = {"fact": "fact", "pref": "preference", "preference": "preference",
         "learning": "learning", "learned": "learning"}
_TAG = re.compile(r"(?<!\S)#([\w-]{1,32})")


def parse_remember(args: str) -> tuple[str, str, tuple[str, ...]]:
    """``pref: I like tabs #style`` -> ("preference", "I like tabs", ("style",))."""
    text = args.strip()
    kind = "fact"
    found = _PREFIX.match(text)
    if found:
        kind = _KIND[found.group(1).lower()]
        text = text[found.end():]
    tags = tuple(_TAG.findall(text))
    text = _TAG.sub("", text)
    return kind, " ".join(text.split()), tags


def _short(text: str, limit: int = 90) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _day(ts: float | None) -> str:
    return dt.datetime.fromtimestamp(ts or 0, dt.UTC).strftime("%d %b")


@router.command("remember", aliases=("rem",),
                help="remember a fact: /remember [pref:|learning:] text #tag")
async def remember(ctx: Context, args: str) -> None:
    kind, text, tags = parse_remember(args)
    if not text:
        await ctx.reply("What should I remember? e.g.\n"
                        "/remember the staging DB is on port 5433\n"
                        "/remember pref: I review diffs on my phone, keep them small")
        return
    try:
        result = await ctx.services.memory.write(text, kind, tags, source="owner")
    except FetchError as err:
        await ctx.reply(f"❌ {err}")
        return
    item = result.item
    if result.merged:
        await ctx.reply(f"🧠 Updated memory #{item.id} (it said nearly the same):\n"
                        f"{_short(item.content, 200)}")
    else:
        await ctx.reply(f"🧠 Remembered #{item.id} ({item.kind}). /forget {item.id} undoes it.")


@router.command("memory", aliases=("mem", "memories"),
                help="what I remember; /memory <words> searches")
async def memory(ctx: Context, args: str) -> None:
    mem = ctx.services.memory
    try:
        if args.strip():
            await _search(ctx, args.strip())
            return
        counts, newest = await mem.overview(5)
    except FetchError as err:
        await ctx.reply(f"❌ {err}")
        return
    archives = counts.pop("archive", 0)
    total = sum(counts.values())
    by_kind = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "none yet"
    lines = [f"🧠 {total} memories ({by_kind}) · {archives} archived conversation chunks",
             f"search: {mem.mode()}"]
    if newest:
        lines.append("Newest:")
        lines += [f"  #{i.id} {i.kind}: {_short(i.content)}" for i in newest]
        lines.append(f"/forget <id> removes one (e.g. /forget {newest[0].id}) · "
                     "/memory <words> searches")
    else:
        lines.append("Teach me with /remember <fact>.")
    await ctx.reply("\n".join(lines))


async def _search(ctx: Context, query: str) -> None:
    hits = await ctx.services.memory.search(query, 5)
    if not hits:
        await ctx.reply(f"🧠 Nothing remembered about “{_short(query, 40)}”.")
        return
    lines = [f"🧠 {len(hits)} match(es):"]
    for hit in hits:
        item = hit.item
        if item.kind == "archive":
            lines.append(f"  #{item.id} chat of {_day(item.started)}–{_day(item.ended)}: "
                         f"{_short(item.content)} ({hit.score:.2f})")
        else:
            lines.append(f"  #{item.id} {item.kind}: {_short(item.content)} ({hit.score:.2f})")
    await ctx.reply("\n".join(lines))


@router.command("forget", help="forget one memory: /forget <id>")
async def forget(ctx: Context, args: str) -> None:
    word = args.strip().lstrip("#")
    if not word.isdigit():
        await ctx.reply("Which one? /forget <id> — /memory lists them with their ids.")
        return
    try:
        item = await ctx.services.memory.forget(int(word))
    except FetchError as err:
        await ctx.reply(f"❌ {err}")
        return
    if item is None:
        await ctx.reply(f"No memory #{word} (archived conversations are kept). "
                        "/memory lists what I remember.")
        return
    await ctx.reply(f"🗑 Forgot #{item.id}: {_short(item.content)}")
