"""The seed's orchestrator tools: the workspace, tasks, and talking to the owner.

Classed for the executor: reads (``workspace_list``, ``workspace_status``,
``task_status``) run in parallel; everything else is a write, in order. The
auto-approve table: creating or deleting a repository asks the owner first; a task
needs no ask (the owner approves its diff before anything lands), nor does stopping one.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from core.errors import GitError
from core.state import State
from orchestrator.agent.access import repo_of
from orchestrator.store.db import key_str
from orchestrator.task.runner import TASK_QUESTION
from orchestrator.tools import ToolRegistry, ToolResult

if TYPE_CHECKING:
    from orchestrator.context import Context

REPO = {"repo": {"type": "string"}}
STATUS_LINES = 40


def register_tools(registry: ToolRegistry) -> None:
    @registry.tool("workspace_list", "List the workspace's repos.", {}, [], kind="read")
    async def workspace_list(ctx: Context, args: dict[str, Any]) -> ToolResult:
        ws = ctx.services.workspace
        lines = await asyncio.to_thread(lambda: [ws.describe(n) for n in ws.repos()])
        return ToolResult("\n".join(lines) or "(no repositories)")

    @registry.tool("workspace_select", "Make a repo the active one.", REPO, ["repo"])
    async def workspace_select(ctx: Context, args: dict[str, Any]) -> ToolResult:
        name = args["repo"]
        if name not in ctx.services.workspace.repos():
            return ToolResult(f"error: no repository named {name!r}")
        ctx.session.data.repo = name
        await ctx.session.persist()
        return ToolResult(f"active repo is now {name}")

    @registry.tool(
        "workspace_status", "A repo's branch, HEAD, changes.", REPO, [], kind="read", cached=True
    )
    async def workspace_status(ctx: Context, args: dict[str, Any]) -> ToolResult:
        name = repo_of(ctx, args)
        repo = ctx.services.workspace.repo(name)

        def read() -> str:
            head = repo.head()[:12] if repo.has_commits() else "(no commits)"
            lines = repo.status_lines()
            shown = lines[:STATUS_LINES] + (
                [f"… {len(lines) - STATUS_LINES} more"] if len(lines) > STATUS_LINES else []
            )
            return "\n".join(
                [f"{name}: branch {repo.branch()}, HEAD {head}", *(shown or ["clean"])]
            )

        return ToolResult(await asyncio.to_thread(read))

    @registry.tool(
        "workspace_create",
        "Create an empty repo.",
        {"name": {"type": "string"}},
        ["name"],
        ask=True,
    )
    async def workspace_create(ctx: Context, args: dict[str, Any]) -> ToolResult:
        name = args["name"].strip()
        await asyncio.to_thread(ctx.services.workspace.create, name)
        return ToolResult(f"created repository {name} (branch main, no commits)")

    @registry.tool("workspace_delete", "Delete a repo and its files.", REPO, ["repo"], ask=True)
    async def workspace_delete(ctx: Context, args: dict[str, Any]) -> ToolResult:
        name = args["repo"]
        running = ctx.services.runner.running(ctx.session.key)
        if running is not None and running.repo == name:
            raise GitError(f"task #{running.task_id} is working in {name}; stop it first")
        await asyncio.to_thread(ctx.services.workspace.delete, name)
        if ctx.session.data.repo == name:
            ctx.session.data.repo = None
            await ctx.session.persist()
        return ToolResult(f"deleted repository {name}")

    @registry.tool(
        "task_create",
        "Hand a coding task to the harness; the owner approves its diff.",
        {**REPO, "instruction": {"type": "string"}, "agent": {"type": "string"}},
        ["repo", "instruction"],
    )
    async def task_create(ctx: Context, args: dict[str, Any]) -> ToolResult:
        repo, instruction = args["repo"], args["instruction"].strip()
        agent = args.get("agent") or None  # a pack member; none: ROUTING.md picks
        pack = ctx.services.runner.pack
        if repo not in ctx.services.workspace.repos():
            return ToolResult(f"error: no repository named {repo!r}; call workspace_list")
        if not instruction:
            return ToolResult("error: the instruction is empty")
        if agent is not None and (not isinstance(agent, str) or pack.get(agent) is None):
            return ToolResult(
                f"error: no pack member named {agent!r}; one of: {', '.join(pack.names())}"
            )
        if not await ctx.permit(f"repo:{repo}", f"tasks in {repo}"):
            return ToolResult(f"refused: the sender may not work in {repo}", final=True)
        await ctx.services.runner.start(
            ctx.session,
            repo,
            instruction,
            ctx.subject.id,
            agent,
            attachments=ctx.inbound.attachments,  # the screenshot the owner sent with it
        )
        return ToolResult("task handed to the harness", final=True)

    @registry.tool(
        "task_status",
        "A task's state (default: the latest).",
        {"task_id": {"type": "integer"}},
        [],
        kind="read",
    )
    async def task_status(ctx: Context, args: dict[str, Any]) -> ToolResult:
        handle = ctx.services.runner.running(ctx.session.key)
        wanted = (
            args.get("task_id") or ctx.session.data.task_id or (handle.task_id if handle else None)
        )
        if wanted is None:
            return ToolResult("no task in this chat yet")
        row = await ctx.services.store.work.get_task(int(wanted))
        if row is None or row.session != key_str(ctx.session.key):
            return ToolResult(f"error: no task #{wanted} in this chat")
        running = " (running now)" if handle and handle.task_id == row.id else ""
        return ToolResult(
            f"task #{row.id} in {row.repo} with {row.harness}: {row.status}"
            f"{running}\n{row.prompt[:300]}"
        )

    @registry.tool("task_cancel", "Stop the running task.", {}, [])
    async def task_cancel(ctx: Context, args: dict[str, Any]) -> ToolResult:
        stopped = await ctx.services.runner.stop(ctx.session.key)
        if stopped is None:
            return ToolResult("no task is running in this chat")
        return ToolResult(f"stopped task #{stopped.task_id} ({stopped.harness})")

    @registry.tool(
        "task_respond",
        "Answer the running task's question.",
        {"answer": {"type": "string"}},
        ["answer"],
    )
    async def task_respond(ctx: Context, args: dict[str, Any]) -> ToolResult:
        # A CLI's question mid-task leaves the session WAITING with the task's context;
        # the answer resumes the same CLI session (runner.answer), as the owner's reply would.
        answer = str(args["answer"]).strip()
        session = ctx.session
        context = dict(session.data.question_context or {})
        if session.state is not State.WAITING or context.get("kind") != TASK_QUESTION or not answer:
            return ToolResult("error: no running task is waiting for an answer in this chat")
        if str(context.get("requester") or ctx.subject.id) != ctx.subject.id:
            return ToolResult("error: the task's question is for whoever started it")
        session.data.question, session.data.question_context = None, {}
        await session.answered()
        await ctx.services.runner.answer(session, context, answer)
        return ToolResult("answered: the task goes on with your answer", final=True)

    @registry.tool(
        "ask_user",
        "Ask the owner; wait for the answer.",
        {"question": {"type": "string"}},
        ["question"],
    )
    async def ask_user(ctx: Context, args: dict[str, Any]) -> ToolResult:
        question = args["question"].strip() or "Could you say a bit more?"
        ctx.session.data.question = question
        # Asked for whoever this turn serves: only their answer counts (conversation.py).
        ctx.session.data.question_context = {
            "kind": "model",
            "original": ctx.text,
            "subject": ctx.subject.id,
        }
        await ctx.session.ask()
        await ctx.reply(f"❓ {question}")
        return ToolResult("asked", final=True)

    @registry.tool(
        "report_progress",
        "Tell the owner how it goes; go on.",
        {"message": {"type": "string"}},
        ["message"],
    )
    async def report_progress(ctx: Context, args: dict[str, Any]) -> ToolResult:
        message = args["message"].strip()
        if not message:
            return ToolResult("error: the message is empty")
        await ctx.reply(f"⏳ {message}")
        return ToolResult("reported")
