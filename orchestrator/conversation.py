"""Free text (not a command), by session state: the FSM group of the dispatch pipeline."""

from __future__ import annotations

import asyncio
import re
import time

from core.state import State
from orchestrator.agent import confirm
from orchestrator.context import Context
from orchestrator.intent import Classification, Intent, classify
from orchestrator.permissions.model import OWNER
from orchestrator.planner import PlannerUnavailable
from orchestrator.task.approvals import WITHDRAW
from orchestrator.task.attachments import usable

EXAMPLE = "fix the typo in README.md of demo"
# What a channel says for a file sent with no words: "[image]", "[document crash.log]".
PLACEHOLDER = re.compile(r"\[[^\]\n]*\]")


async def handle_text(ctx: Context) -> None:
    if ctx.inbound.attachments:
        # Kept for the sender's next task too: a screenshot, then "fix this".
        await asyncio.to_thread(
            ctx.services.runner.recent.note,
            ctx.session.key,
            ctx.subject.id,
            ctx.inbound.attachments,
        )
    state = ctx.session.state
    if state is State.GUARDING:
        await ctx.services.approvals.answer(ctx.session, ctx.inbound, ctx.text)
    elif state is State.WORKING:
        await _while_working(ctx)
    elif state is State.RESTING:
        await ctx.reply("😴 I'm paused. /resume to wake me; /status and /help still work.")
    elif state is State.WAITING:
        await _answer_question(ctx)
    elif ctx.text.strip().lower().rstrip(".!") in WITHDRAW and (
        withdrawn := await ctx.services.approvals.withdraw(ctx.session, ctx.subject.id)
    ):
        await ctx.reply(withdrawn)  # a member's own diff, waiting in the owner's chat
    else:
        await _fresh(ctx, classify(ctx.text))


async def _while_working(ctx: Context) -> None:
    handle = ctx.services.runner.running(ctx.session.key)
    if handle is None:
        ctx.deferred = True  # taken up once the chat is idle
        await ctx.reply("⏳ Still finishing the last task; I'll take this up right after.")
        return
    elapsed = time.monotonic() - handle.started
    files = usable(ctx.inbound.attachments)
    # The files go to the sender's next task (orchestrator/task/recent.py), not this one.
    later = "\n📎 The file goes with your next task." if files else ""
    if files and PLACEHOLDER.fullmatch(ctx.text.strip()):
        # A file with no words ("[image]"): nothing to pass on or answer later.
        await ctx.reply(f"📎 Got it: it goes with your next task (#{handle.task_id} works on).")
        return
    if handle.paused:
        ctx.deferred = True
        await ctx.reply(
            f"⏸ Task #{handle.task_id} ({handle.harness}) is paused: "
            f"{handle.prompt[:60]}\nI'll take this up once it is done: /resume continues "
            "it, /stop cancels it."
        )
        return
    # Steering: the task's subject (or the owner) talks to a CLI that reads its input
    # while it runs (orchestrator/task/steer.py); anyone else's words never reach it.
    if ctx.subject.id in (handle.requester, OWNER) and (
        harness := await ctx.services.runner.steer(ctx.session.key, ctx.text)
    ):
        await ctx.reply(f"📨 passed to {harness} (task #{handle.task_id}).{later}")
        return
    # Not dropped: the gateway keeps the message and runs it, in order, once the chat
    # is idle again (never as the answer to the task's diff or question).
    ctx.deferred = True
    if ctx.subject.id in (handle.requester, OWNER) and (
        why := ctx.services.runner.cannot_steer(handle)
    ):
        await ctx.reply(
            f"📥 queued: {why}; I'll pass it on after the task (task #{handle.task_id}, "
            f"{elapsed:.0f} s: {handle.prompt[:60]}). /stop cancels it.{later}"
        )
        return
    await ctx.reply(
        f"📥 kept for after the task: task #{handle.task_id} ({handle.harness}, "
        f"{elapsed:.0f} s) is busy with {handle.prompt[:60]}\n"
        f"I'll take this up as soon as it is done. /stop cancels it.{later}"
    )


def asked_for(context: dict[str, object]) -> str | None:
    """Whom the waiting question was asked for (a subject id); None for a question saved
    before questions kept it (anyone may answer those, as then)."""
    who = context.get("subject") or context.get("requester")
    return str(who) if who else None


def whose(subject_id: str) -> str:
    return "the owner" if subject_id == OWNER else subject_id


async def _answer_question(ctx: Context) -> None:
    data = ctx.session.data
    context = data.question_context or {}
    asked = asked_for(context)
    if asked is not None and asked != ctx.subject.id:
        # Someone else's words never answer it (a member's "yes" is not the owner's), and
        # the question stays open for whom it was asked.
        await ctx.reply(
            f"❓ This question is for {whose(asked)}: {data.question or 'it waits'}\n"
            "It stays open until they answer (/stop drops it)."
        )
        return
    data.question = None
    data.question_context = {}
    await ctx.session.answered()
    if await ctx.services.runner.answer(ctx.session, context, ctx.text):
        return  # a CLI's question mid-task: the answer goes back to it
    if context.get("kind") == confirm.KIND:  # the owner's yes/no to a tool that asks
        if not await confirm.answer(ctx, context):
            await _fresh(ctx, classify(ctx.text))  # not an answer: a new request
        return
    if context.get("kind") == "repo":
        names = ctx.services.workspace.repos()
        chosen = next((n for n in names if n.lower() == ctx.text.strip().lower()), None)
        chosen = chosen or ctx.services.workspace.find_in_text(ctx.text)
        if chosen is None:
            await ctx.reply(
                f"I don't know a repo called {ctx.text.strip()[:40]!r}. "
                f"Repos: {', '.join(names)}. Send the task again with one."
            )
            return
        data.repo = chosen
        await ctx.session.persist()
        if await ctx.permit(f"repo:{chosen}", f"tasks in {chosen}"):
            await ctx.services.runner.start(
                ctx.session, chosen, str(context.get("prompt", "")), ctx.subject.id
            )
        return
    original = str(context.get("original", ""))
    combined = f"{original}\n(Answer to your question: {ctx.text})" if original else ctx.text
    await _fresh(ctx, classify(ctx.text), text=combined)


async def _fresh(ctx: Context, found: Classification, *, text: str | None = None) -> None:
    text = text or ctx.text
    planner = ctx.services.planner
    if found.intent is Intent.CONVERSATION and found.sure:
        await ctx.reply(_small_talk(ctx.text))
        return
    if found.intent is Intent.WORKSPACE and found.sure:
        await _workspace(ctx)
        return
    if planner.configured and (found.intent is Intent.TASK or not found.sure):
        try:
            await planner.run(ctx, text)
            return
        except PlannerUnavailable as err:
            if found.intent is not Intent.TASK:
                await ctx.reply(
                    f"⚠️ I couldn't think about that: {err}.\nFor code changes say e.g. '{EXAMPLE}'."
                )
                return
            await ctx.reply(f"⚠️ {err}; handing the task straight to the harness.")
    if found.intent is Intent.TASK:
        await start_task(ctx, text)
        return
    await ctx.reply(
        "🤔 I'm not sure what you'd like. For a code change, say what to do and where,\n"
        f"e.g. '{EXAMPLE}'. /help lists commands."
    )


async def start_task(ctx: Context, prompt: str) -> None:
    ws = ctx.services.workspace
    repo = ws.find_in_text(prompt) or ctx.session.data.repo
    names = ws.repos()
    if repo is None and len(names) == 1:
        repo = names[0]
    if repo is None or repo not in names:
        if not names:
            await ctx.reply(f"📂 The workspace {ws.root} has no git repos yet. Clone one there.")
            return
        ctx.session.data.question = "Which repo?"
        ctx.session.data.question_context = {
            "kind": "repo",
            "prompt": prompt,
            "subject": ctx.subject.id,
        }
        await ctx.session.ask()
        await ctx.reply("❓ Which repo should I work in?\n" + "\n".join(f"• {n}" for n in names))
        return
    if await ctx.permit(f"repo:{repo}", f"tasks in {repo}"):
        await ctx.services.runner.start(
            ctx.session, repo, prompt, ctx.subject.id, attachments=ctx.inbound.attachments
        )


async def _workspace(ctx: Context) -> None:
    m = re.match(
        r"^(?:use|switch to|work on|open|select)\s+(?:the\s+)?(?:repo\s+|project\s+)?"
        r"([\w.-]+)$",
        ctx.text.strip(),
        re.IGNORECASE,
    )
    if m:
        await ctx.reply(await ctx.workspace.use(ctx.session, m.group(1)))
    else:
        await ctx.reply(ctx.workspace.listing(ctx.session.data.repo))


def _small_talk(text: str) -> str:
    t = text.strip().lower()
    if t.startswith(("thank", "thx", "ty", "cheers")):
        return "🐕 Any time."
    if t.startswith(("bye", "see you", "good night")):
        return "🐕 Bye! I'll be here."
    if t.startswith(("who are you", "what are you", "what can you do")):
        return (
            "🐕 I'm Fetch. Tell me a code change ('fix the flaky login test in myapp');\n"
            "I run a coding CLI, show you the diff, and commit only what you approve."
        )
    return "🐕 Hi! Tell me what to change, or /help."
