"""The orchestrator loop: ReAct against any OpenAI-compatible endpoint (providers/).

decide → tool → reflect, at most ``model.max_iterations`` (25) steps. Each turn starts
from the conversation (orchestrator/agent/history.py: the frozen system prompt, older
turns as summaries, the recent messages, compacted to the budget); the tool calls of
each step go through the executor (orchestrator/agent/executor.py: reads in parallel,
writes in order, cached reads). Model mistakes (unknown tools, arguments that are not
JSON or not valid) go back to the model as tool errors; endpoint failures surface as
``PlannerUnavailable`` so the caller can fall back.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from core.errors import FetchError
from orchestrator import completion
from orchestrator.agent.compaction import Message
from orchestrator.agent.executor import ToolExecutor
from orchestrator.agent.history import build_messages
from orchestrator.config import ModelSettings
from orchestrator.costs.ledger import BudgetReached, CostLedger
from orchestrator.providers.chain import Attempt, ChainFailed, ProviderChain
from orchestrator.store.db import key_str
from orchestrator.tools import ToolRegistry

if TYPE_CHECKING:
    from orchestrator.context import Context

log = logging.getLogger(__name__)
# The chain entry the chat chose with /model (None: the chain's order), for this turn.
CHOSEN: ContextVar[str | None] = ContextVar("fetch_chosen_model", default=None)
SUMMARY_PROMPT = (
    "Summarise these earlier messages of a chat between a developer (the owner) and Fetch, "
    "their coding assistant, in at most 120 words: what was asked, decided and done, and "
    "what is still open. Keep repository names, file paths and commands exact. A line "
    "marked [name · profile] is that person's, not the owner's: keep who asked what."
)


class PlannerUnavailable(FetchError):
    pass


class Planner:
    def __init__(
        self,
        settings: ModelSettings,
        tools: ToolRegistry,
        now: Callable[[], float] = time.time,
        *,
        chain: ProviderChain | None = None,
        costs: CostLedger | None = None,
    ) -> None:
        self._settings = settings
        self._tools = tools
        self.executor = ToolExecutor(tools)
        self.now = now  # the owner's day decides when the frozen prompt is rebuilt
        # The same oldest messages folded again next turn get the same summary, unasked.
        self._summaries: OrderedDict[str, str] = OrderedDict()
        # The endpoints, tried in order with one retry policy (orchestrator/providers/).
        self.chain = chain or ProviderChain(settings)
        self.costs = costs  # prices and records each call, keeps the budgets
        self._spend: Callable[[Attempt], None] | None = None  # this turn's recorder

    @property
    def configured(self) -> bool:
        return self.chain.configured

    @property
    def tools(self) -> ToolRegistry:
        """The model's tools (/tools lists those the sender may use)."""
        return self._tools

    async def warm(self) -> None:
        """The model's first connection opened ahead of the first message (nothing sent)."""
        if self.configured:
            await self.chain.warm()

    async def close(self) -> None:
        await self.chain.close()

    async def _complete(
        self, messages: list[Message], tools: list[dict[str, Any]] | None = None
    ) -> Any:
        if self.costs is not None:
            self.costs.check()  # a spent budget: no call (BudgetReached)
        try:
            response, _ = await self.chain.complete(
                messages, tools, on_attempt=self._spend, prefer=CHOSEN.get()
            )
        except ChainFailed as err:
            raise PlannerUnavailable(str(err)) from err
        return response

    async def summarise(self, folded: list[Message]) -> str:
        """Compaction's summary of the oldest messages, by this model."""
        transcript = "\n".join(_transcript_line(m) for m in folded)
        key = hashlib.sha256(transcript.encode()).hexdigest()
        known = self._summaries.get(key)
        if known is not None:
            return known
        response = await self._complete(
            [{"role": "system", "content": SUMMARY_PROMPT}, {"role": "user", "content": transcript}]
        )
        content = response.choices[0].message.content if response.choices else None
        if not content or not content.strip():
            raise PlannerUnavailable("the model summarised nothing")
        self._summaries[key] = str(content)
        while len(self._summaries) > 64:
            self._summaries.popitem(last=False)
        return str(content)

    async def run(self, ctx: Context, text: str) -> None:
        if not self.chain.configured:
            raise PlannerUnavailable("no orchestrator model is configured")
        # The chat's /model choice, for every call of this turn (summaries included).
        chosen = CHOSEN.set(ctx.session.data.model)
        try:
            await self._run(ctx, text)
        except BudgetReached as err:
            await ctx.reply(f"🛑 {err}")
        finally:
            self._spend = None
            CHOSEN.reset(chosen)

    async def _run(self, ctx: Context, text: str) -> None:
        costs = self.costs
        on_inbound: Callable[[int | None], None] | None = None
        if costs is not None:
            costs.check()
            session = key_str(ctx.session.key)

            def ledger_for(message: int | None) -> None:
                # The ledger links each call to the message this turn answers: its id comes
                # from the history's own read (no second read of the store per message),
                # before any summary call of this turn.
                self._spend = costs.recorder("orchestrator", session=session, message=message)

            ledger_for(None)
            on_inbound = ledger_for
        tools = self._tools.schemas_for(ctx)
        messages = await build_messages(
            ctx, text, self.now(), tools, self.summarise, on_inbound=on_inbound
        )
        tokens_in = tokens_out = 0
        for _step in range(self._settings.max_iterations):
            response = await self._complete(messages, tools)
            if response.usage is not None:
                tokens_in += response.usage.prompt_tokens or 0
                tokens_out += response.usage.completion_tokens or 0
            if not response.choices:
                raise PlannerUnavailable("the model answered with no choices")
            message = response.choices[0].message
            calls = message.tool_calls or []
            completion.normalise_arguments(calls)
            if not calls:
                await ctx.reply(
                    message.content or "(the model said nothing)",
                    tokens=(tokens_in, tokens_out),
                    model=self._settings.name,
                )
                return
            messages.append(
                {
                    "role": "assistant",
                    "content": message.content or "",
                    "tool_calls": [c.model_dump(exclude_none=True) for c in calls],
                }
            )
            results, final = await self.executor.run(ctx, list(calls))
            messages += [
                {"role": "tool", "tool_call_id": call_id, "content": content}
                for call_id, content in results
            ]
            if final:
                ctx.services.store.messages.log(
                    ctx.session.key,
                    "model",
                    "(planned: tool call ended the turn)",
                    model=self._settings.name,
                    tokens_in=tokens_in,
                    tokens_out=tokens_out,
                )
                return
        await ctx.reply(
            f"I stopped planning after {self._settings.max_iterations} steps without an "
            "answer. Try a more specific request.",
            tokens=(tokens_in, tokens_out),
            model=self._settings.name,
        )


def _transcript_line(message: Message) -> str:
    """One line for the summariser: a line that names its speaker ([alice · collaborator],
    agent/history.py) keeps that name; an unmarked person's line is the owner's."""
    content = str(message.get("content") or "")
    if message["role"] != "user":
        return f"fetch: {content}"
    return content if content.startswith("[") else f"owner: {content}"
