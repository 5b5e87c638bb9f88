"""/blocks: the memory blocks always in the model's prompt (the owner's, by default).

/blocks                                    list them with sizes and limits
/blocks <kind> [repo]                      show one
/blocks set|append <kind> [repo] <text>    replace it, or add a line
/blocks clear <kind> [repo]                empty it
/blocks history <kind> [repo]              its versions, with author and time
/blocks revert <kind> [repo] <version>     bring a version's text back (a new version)

``kind`` is persona, owner or project; a project block's repo defaults to this chat's
active one. Text keeps its line breaks.
"""

from __future__ import annotations

from instincts.contract import InstinctContext
from instincts.router import InstinctRouter

router = InstinctRouter("blocks")
KINDS = ("persona", "owner", "project")
EDITS = ("set", "append", "clear")
USAGE = (
    "/blocks · /blocks <kind> [repo] · /blocks set|append <kind> [repo] <text> · "
    "/blocks clear <kind> [repo] · /blocks history <kind> [repo] · "
    "/blocks revert <kind> [repo] <version>  (kinds: persona, owner, project)"
)


def _word(text: str) -> tuple[str, str]:
    """The first word and the rest (the rest keeps its own line breaks)."""
    parts = text.strip().split(None, 1)
    if not parts:
        return "", ""
    return parts[0], parts[1] if len(parts) > 1 else ""


async def _target(ctx: InstinctContext, kind: str, rest: str) -> tuple[str | None, str]:
    """The block's repo and what follows it. A project block takes the next word when
    it names a repository, else the chat's active repo (None: there is none)."""
    if kind != "project":
        return None, rest
    word, after = _word(rest)
    if word and await ctx.blocks.known_repo(word):
        return word, after
    return ctx.session.data.repo, rest


@router.command(
    "blocks",
    aliases=("block",),
    help="memory blocks in my prompt (owner): show, set, append, history, revert",
)
async def blocks(ctx: InstinctContext, args: str) -> None:
    port = ctx.blocks
    verb, rest = _word(args)
    verb = verb.lower()
    active = ctx.session.data.repo
    if verb in ("", "list"):
        await ctx.reply(await port.listing(active))
        return
    if verb in KINDS:  # /blocks <kind> [repo]
        repo, extra = await _target(ctx, verb, rest)
        if extra.strip() and verb == "project":
            await ctx.reply(f"❌ No repo or project block named {_word(extra)[0][:40]!r}.")
            return
        if extra.strip():
            await ctx.reply(USAGE)
            return
        await ctx.reply(await port.show(verb, repo))
        return
    if verb not in (*EDITS, "history", "revert", "show"):
        await ctx.reply(USAGE)
        return
    kind, rest = _word(rest)
    kind = kind.lower()
    if kind not in KINDS:
        await ctx.reply(f"Which block? persona, owner or project.\n{USAGE}")
        return
    repo, rest = await _target(ctx, kind, rest)
    if kind == "project" and repo is None:
        await ctx.reply(f"Which repo? No repo is active here: /blocks {verb} project <repo> …")
        return
    if verb in ("set", "append"):
        if not rest.strip():
            await ctx.reply(f"What should it say? /blocks {verb} {kind} … <text>")
            return
        await ctx.reply(await port.edit(kind, repo, verb, rest))
    elif verb == "clear" and not rest.strip():
        await ctx.reply(await port.edit(kind, repo, "clear", ""))
    elif verb == "history" and not rest.strip():
        await ctx.reply(await port.history(kind, repo))
    elif verb == "show" and not rest.strip():
        await ctx.reply(await port.show(kind, repo))
    elif verb == "revert" and rest.strip().lstrip("v").isdigit():
        await ctx.reply(await port.revert(kind, repo, int(rest.strip().lstrip("v"))))
    else:
        await ctx.reply(USAGE)
