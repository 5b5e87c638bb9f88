"""/stop /pause /resume /autonomy /project's port: a chat's running task, how its diffs
are committed, and the project it works in (instincts ``Tasks``)."""

from __future__ import annotations

import asyncio
import time

from core.errors import GitError
from core.events import SessionKey
from instincts.contract import PausedTask, SessionPort, StoppedTask
from orchestrator.permissions.service import Permissions
from orchestrator.task import testrun
from orchestrator.task.autonomy import LEVELS
from orchestrator.task.runner import PauseResult, TaskRunner
from orchestrator.workspace import Workspace

LEVEL_WORDS = {
    "supervised": "every diff is asked",
    "semi": "committed unasked when the tests pass and no risky path is touched",
    "autonomous": "committed on a branch fetch/task-<id>; you merge or drop it",
}


class TasksFacade:
    def __init__(self, runner: TaskRunner, permissions: Permissions, workspace: Workspace) -> None:
        self._runner = runner
        self._permissions = permissions
        self._workspace = workspace

    def requester(self, key: SessionKey) -> str | None:
        handle = self._runner.running(key)
        return handle.requester if handle is not None else None

    async def stop(self, key: SessionKey) -> StoppedTask | None:
        result = await self._runner.stop(key)
        if result is None:
            return None
        return StoppedTask(
            result.task_id,
            result.harness,
            result.kill_seconds,
            len(result.leftover_pids),
            result.finished,
        )

    async def pause(self, key: SessionKey) -> PausedTask | None:
        return _plain(await self._runner.pause(key))

    async def resume(self, key: SessionKey) -> PausedTask | None:
        return _plain(await self._runner.resume(key))

    async def drop_question(self, session: SessionPort) -> int | None:
        return await self._runner.drop_question(session.data)

    async def autonomy(self, session: SessionPort, level: str) -> str:
        """Show (``level`` empty) or set this chat's autonomy; the repository's committed
        ``.fetch.yaml`` can still lower what the chat says."""
        key, repo = session.key, session.data.repo
        chat = f"{key.channel}:{key.chat}"
        level = level.strip().lower()
        if level and level not in LEVELS:
            return f"Usage: /autonomy [{', '.join(LEVELS)}]"
        if level:
            self._permissions.chat_overrides.set(chat, "approvals.autonomy", level)
        resolved = await self._permissions.explain_value("approvals.autonomy", key, repo)
        now = str(resolved.value)
        lines = [
            f"🎚 Autonomy{' set' if level else ''} for this chat"
            f"{f' in {repo}' if repo else ''}: {now} ({LEVEL_WORDS[now]})."
        ]
        if level and now != level:
            lines.append(f"⚠️ {resolved.source} caps it at {now}.")
        lines.append(
            "Risky changes (many files, deletions, CI/build/dependency files) are "
            "never committed unasked."
        )
        if not level:
            lines.append(f"/autonomy {' or '.join(LEVELS)} to change it.")
        return "\n".join(lines)

    async def project(self, session: SessionPort) -> str:
        repo_name = session.data.repo
        if repo_name is None:
            return "No project chosen here yet. /workspace lists them; name one in a task."
        try:
            git = self._workspace.repo(repo_name)
            branch, head, dirty = await asyncio.to_thread(
                lambda: (git.branch(), git.head(), git.status_lines())
            )
        except (GitError, KeyError, ValueError) as err:
            return f"📁 {repo_name}: {err}"
        kind = await asyncio.to_thread(testrun.project_type, git.path)
        policy = await self._permissions.policy(session.key, repo_name)
        plan = await asyncio.to_thread(testrun.detect, git.path, policy.test_command or None)
        status = "clean" if not dirty else f"dirty ({len(dirty)} file(s))"
        lines = [
            f"📁 {repo_name} · {kind}",
            f"branch: {branch} @ {head[:7]}",
            f"status: {status}",
            f"tests: {plan.tool if plan else 'none found'}",
            f"autonomy: {policy.autonomy}",
        ]
        handle = self._runner.running(session.key)
        if handle is not None and handle.repo == repo_name:
            paused = " (paused)" if handle.paused else ""
            lines.append(
                f"task: #{handle.task_id} {handle.harness}{paused}, "
                f"{time.monotonic() - handle.started:.0f} s: {handle.prompt[:50]}"
            )
        elif session.data.approval_id is not None:
            lines.append("task: a diff waits for your answer")
        else:
            lines.append("task: none")
        return "\n".join(lines)


def _plain(result: PauseResult | None) -> PausedTask | None:
    return None if result is None else PausedTask(result.task_id, result.harness, result.processes)
