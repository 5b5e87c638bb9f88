"""/identity /whoami /tools's port (instincts ``Identity``), bound to one sender in one
chat: it reads the identity files, the pack, the permission model and the tool registry,
and answers in short lines for a phone.

``identity()`` is built from sections, one method each, so another part (memory blocks)
adds its own section without touching the others.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING

from core.events import SessionKey
from instincts.router import Instinct
from orchestrator.permissions.model import Subject
from orchestrator.permissions.visible import VisibleCommands
from orchestrator.tools import Tool

if TYPE_CHECKING:
    from orchestrator.services import Services

WIDTH = 60  # a line on a 6-inch screen


def _cut(text: str, width: int = WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _whole(text: str) -> str:
    """Rules and descriptions are read whole (the messenger wraps them for the phone):
    a directive cut at 60 characters could say the opposite of the rule."""
    return " ".join(text.split())


class IdentityFacade:
    def __init__(self, services: Services, subject: Subject, key: SessionKey) -> None:
        self._s = services
        self._subject = subject
        self._key = key

    # -- /identity -----------------------------------------------------------------------
    def identity(self) -> str:
        sections = [self._who(), self._owner(), self._blocks(), self._pack()]
        return "\n\n".join(s for s in sections if s)

    def _who(self) -> str:
        c = self._s.identity.collar
        lines = [f"🐕 {c.name} (COLLAR.md v{c.version})", f"tone: {_cut(c.tone)}"]
        if c.directives:
            lines.append("directives:")
            lines += [f"• {_whole(d)}" for d in c.directives]
        return "\n".join(lines)

    def _owner(self) -> str:
        a = self._s.identity.alpha
        lines = [f"👤 owner: {a.name} · {a.timezone}"]
        if a.languages:
            lines.append(f"languages: {', '.join(a.languages)}")
        lines += [f"• {_whole(p)}" for p in a.preferences]
        return "\n".join(lines)

    def _blocks(self) -> str:
        """The memory blocks the model is shown in this chat (orchestrator/blocks/)."""
        live = (s for s in self._s.sessions.live() if s.key == self._key)
        session = next(live, None)
        return "🧠 " + self._s.facades.blocks.section(session.data.repo if session else None)

    def _pack(self) -> str:
        runner = self._s.runner
        pack = runner.pack
        default = runner.default_harness()
        lines = [f"🧑‍🤝‍🧑 pack (default: {pack.routing.default}; rules: agents/ROUTING.md)"]
        for agent in pack.agents.values():
            harness = f"{default} (default)" if agent.harness == "auto" else agent.harness
            mine = " · yours" if pack.source.get(agent.name) == "yours" else ""
            lines.append(f"• {agent.name}: {_cut(agent.role, 40)}")
            lines.append(f"  on {harness}{mine}")
            if agent.when:
                lines.append(f"  when: {_whole(agent.when)}")
        lines += [f"⚠️ {p}" for p in pack.problems]
        return "\n".join(lines)

    # -- /whoami -------------------------------------------------------------------------
    def whoami(self) -> str:
        subject, s = self._subject, self._s
        lines = [
            f"👤 {subject.id} · profile: {subject.profile}",
            f"chat: {self._key.channel}:{_cut(self._key.chat, 40)}",
        ]
        if subject.is_owner:
            lines.append("may: every command and tool, every repo")
        else:
            commands = " ".join(f"/{i.name}" for i in self._commands()) or "none"
            lines += textwrap.wrap(f"commands: {commands}", WIDTH, subsequent_indent="  ")
            tools = self._tools()
            lines.append(f"tools: {len(tools)} of {len(s.planner.tools.names())} (/tools)")
            repos = [
                r for r in s.workspace.repos() if s.permissions.may(subject, f"repo:{r}", self._key)
            ]
            lines.append("repos: " + (", ".join(repos) or "none"))
            talk = s.permissions.may(subject, "talk", self._key)
            lines.append("free text: " + ("yes" if talk else "no (commands only)"))
        grants = [g for g in s.permissions.grants.active() if g.subject == subject.id]
        if grants:
            lines.append("grants:")
            lines += [f"• {_cut(g.describe())}" for g in grants]
        elif not subject.is_owner:
            lines.append("grants: none")
        return "\n".join(lines)

    def _commands(self) -> Sequence[Instinct]:
        visible = VisibleCommands(self._s.instincts, self._s.permissions, self._subject, self._key)
        return visible.all()

    # -- /tools --------------------------------------------------------------------------
    def _tools(self) -> list[Tool]:
        # The very filter that decides which tools the model is shown for this sender.
        return self._s.planner.tools.visible(self._s.permissions, self._subject, self._key)

    def tools(self) -> str:
        tools = self._tools()
        if not tools:
            return "🧰 No model tools for you here."
        lines = [f"🧰 Tools you may use ({len(tools)}):"]
        lines += [f"• {t.name}: {_whole(t.description)}" for t in tools]
        if not self._s.planner.configured:
            lines.append("(no model is configured: tasks go straight to the harness)")
        host = self._s.runner.mcphost
        if host is not None:
            # The owner's MCP servers, offered to the coding CLIs; each call is decided
            # on the host (mcp:<server>:<tool>: allow, ask or deny).
            lines.append("🔌 Your MCP servers (for the coding CLIs; each call checked):")
            lines += [f"• {line}" for line in host.listing()]
        return "\n".join(lines)
