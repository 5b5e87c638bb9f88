"""/blocks's port (instincts ``Blocks``): the memory blocks in phone words, and the
"Memory blocks" section of /identity.

Bound to one subject (``of``): the author every change records. Who may use /blocks at
all is the permission model's call (``instinct:blocks``, the owner's by default)."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from orchestrator.blocks.service import Block, BlockError, Blocks
from orchestrator.store.blocks import BlockVersion
from orchestrator.workspace import Workspace

HINT = (
    "/blocks <kind> [repo] · set | append | clear | history <kind> [repo] … · "
    "revert <kind> [repo] <version>"
)
PREVIEW = 60


def _preview(text: str, limit: int = PREVIEW) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def zone_of(name: str) -> dt.tzinfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return dt.UTC


class BlocksFacade:
    def __init__(
        self, blocks: Blocks, workspace: Workspace, zone: dt.tzinfo, author: str = "owner"
    ) -> None:
        self._blocks = blocks
        self._workspace = workspace
        self._zone = zone  # the owner's: history times as the owner reads a clock
        self._author = author

    def of(self, subject: str) -> BlocksFacade:
        return BlocksFacade(self._blocks, self._workspace, self._zone, subject)

    def _when(self, at: float) -> str:
        return dt.datetime.fromtimestamp(at, self._zone).strftime("%d %b %H:%M")

    def _size(self, block: Block) -> str:
        return f"{len(block.text):,}/{block.limit:,} chars"

    async def known_repo(self, word: str) -> bool:
        """A repository of the workspace, or one a project block was written for."""
        if word in self._workspace.repos():
            return True
        return any(b.scope == word for b in await self._blocks.all())

    async def listing(self, active: str | None) -> str:
        blocks = await self._blocks.all()
        if active and not any(b.scope == active for b in blocks):
            blocks.append(await self._blocks.get("project", active))
        lines = ["🧠 Memory blocks (always in my prompt; empty ones are left out):"]
        for b in blocks:
            mark = " ▶" if b.kind == "project" and b.scope == active else ""
            state = f"v{b.version}, {self._size(b)}" if b.text else f"empty, limit {b.limit:,}"
            lines.append(f"• {b.name}{mark}: {state}")
        lines.append(HINT)
        return "\n".join(lines)

    async def show(self, kind: str, repo: str | None) -> str:
        try:
            block = await self._blocks.get(kind, repo)
        except BlockError as err:
            return f"❌ {err}"
        if not block.text:
            return (
                f"🧠 The {block.name} block is empty (limit {block.limit:,} chars).\n"
                f"/blocks set {block.name} <text> writes it."
            )
        return (
            f"🧠 {block.name} · v{block.version} · {self._size(block)} · "
            f"{block.author}, {self._when(block.at)}\n{block.text}"
        )

    async def edit(self, kind: str, repo: str | None, mode: str, text: str) -> str:
        try:
            done = await self._blocks.edit(kind, repo, mode, text, self._author)
        except BlockError as err:
            return f"❌ {err}"
        return self._changed(done, "emptied" if mode == "clear" else "saved")

    async def revert(self, kind: str, repo: str | None, version: int) -> str:
        try:
            done = await self._blocks.revert(kind, repo, version, self._author)
        except BlockError as err:
            return f"❌ {err}"
        return self._changed(done, f"back to v{version}'s text")

    def _changed(self, done: BlockVersion, what: str) -> str:
        name = f"{done.kind} {done.scope}" if done.scope else done.kind
        limit = self._blocks.limit(done.kind)
        undo = f"/blocks revert {name} {done.number - 1}" if done.number > 1 else ""
        return (
            f"✅ {name} block {what}: v{done.number}, {len(done.text):,}/{limit:,} chars. "
            "The model sees it from its next turn." + (f"\n{undo} undoes it." if undo else "")
        )

    async def history(self, kind: str, repo: str | None) -> str:
        try:
            versions = await self._blocks.history(kind, repo)
        except BlockError as err:
            return f"❌ {err}"
        if not versions:
            name = f"{kind} {repo}" if repo and kind == "project" else kind
            return f"🕘 The {name} block was never written."
        first = versions[0]
        name = f"{first.kind} {first.scope}" if first.scope else first.kind
        lines = [f"🕘 {name} block, newest first:"]
        for v in versions:
            change = f"revert to v{v.restored}" if v.restored else v.change
            body = f'"{_preview(v.text)}"' if v.text else "(empty)"
            lines.append(f"v{v.number} · {self._when(v.at)} · {v.author} · {change} · {body}")
        lines.append(f"/blocks revert {name} <version> brings one back.")
        return "\n".join(lines)

    def section(self, active: str | None) -> str:
        """For /identity: what the model is shown of the blocks right now."""
        shown = self._blocks.shown(active)
        if not shown:
            return "Memory blocks: none written yet (/blocks)."
        lines = ["Memory blocks (in the prompt):"]
        lines += [f"• {b.name} v{b.version} ({self._size(b)}): {_preview(b.text)}" for b in shown]
        return "\n".join(lines)
