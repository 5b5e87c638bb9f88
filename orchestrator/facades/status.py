"""/status's port: the report, built here because it reads every part of the app
(instincts ``Status``)."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from instincts.contract import SessionPort
from orchestrator.facades.link import named

if TYPE_CHECKING:
    from orchestrator.services import Services


class StatusFacade:
    def __init__(self, services: Services) -> None:
        self._s = services

    def _model(self, session: SessionPort) -> str:
        """The orchestrator's model for this chat: the chain entry it chose (/model) or
        the chain's first."""
        chain = self._s.planner.chain
        if not chain.configured:
            return "none (tasks go straight to the harness)"
        first = chain.ordered(session.data.model)[0]
        picked = " (/model)" if session.data.model == first.name else ""
        return f"{chain.model_of(first)} on {first.name}{picked}"

    async def report(self, session: SessionPort) -> str:
        s = self._s
        harness_name = session.data.harness or s.runner.default_harness()
        lines = [f"🐕 Fetch · {session.state}"]
        lines.append(f"repo: {session.data.repo or '(none chosen)'}")
        if others := s.links.linked(session.key):  # /link: one conversation, two chats
            lines.append("🔗 one conversation: " + " + ".join(map(named, [session.key, *others])))
        try:
            avail = s.runner.availability(s.harnesses.get(harness_name))
            lines.append(f"harness: {harness_name} ({avail.detail})")
        except Exception as err:  # an unknown harness name must not break /status
            lines.append(f"harness: {harness_name} ({err})")
        if cli_model := session.data.cli_models.get(harness_name):
            # Its own line: on the harness's it wrapped on a phone mid-name.
            lines.append(f"  · model {cli_model} (/model)")
        lines.append(f"sandbox: {s.kennel.isolation()}")
        lines.append("model: " + self._model(session))
        handle = s.runner.running(session.key)
        if handle is not None:
            lines.append(
                f"⏳ task #{handle.task_id}: {handle.prompt[:50]} "
                f"({time.monotonic() - handle.started:.0f} s)"
            )
            if handle.agent is not None:  # the pack member that took it (identity/pack.py)
                lines.append(f"  by {handle.agent.name} on {handle.harness}")
        if session.data.approval_id is not None:
            lines.append("⏸ a diff waits for your yes/no")
        if session.data.offered_approval is not None:  # a member's own, with the owner
            lines.append("📬 your diff waits for the owner (say withdraw to take it back)")
        if session.data.question:
            lines.append(f"❓ waiting for: {session.data.question}")
        lines.append(s.memory.status_line())
        if s.scheduler is not None:
            lines.append(s.scheduler.status_line())
        for channel in s.messenger.channels():
            lines.append(f"channel {channel.health()}")
        lines += s.alerts.lines()
        lines += s.permissions.reach.lines()  # a diff or question the owner never got
        # Skipped skill files, one line each (the chat's repository's committed ones too).
        chosen = session.data.repo
        repo = chosen if chosen and chosen in s.workspace.repos() else None
        # Only a repository's skills need git (a thread); the base catalog is in memory.
        skills = await asyncio.to_thread(s.skills.for_repo, repo) if repo else s.skills.base
        lines += [p.line() for p in skills.problems]
        tin, tout = await s.store.messages.token_totals(session.key)
        lines.append(f"tokens (orchestrator): {tin} in / {tout} out")
        # Keys a 401 parked (masked), and today's spend against the budget (/cost: more).
        lines += [f"🔑 {line}" for line in s.planner.chain.status_lines()]
        if s.costs is not None:
            lines.append(s.costs.status_line())
        up = time.time() - s.started_at
        lines.append(f"up {up / 60:.0f} min")
        return "\n".join(lines)
