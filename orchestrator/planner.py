"""The orchestrator loop: ReAct over the openai SDK against any OpenAI-compatible endpoint.

decide → tool → reflect, at most ``model.max_iterations`` (25) steps. Model mistakes
(unknown tools, arguments that are not JSON or not valid) go back to the model as tool
errors; endpoint failures surface as ``PlannerUnavailable`` so the caller can fall back.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from core.errors import FetchError
from identity import PromptContext, build_system_prompt
from orchestrator.config import ModelSettings
from orchestrator.tools import ToolArgumentError, ToolRegistry, check_args

if TYPE_CHECKING:
    import openai
    from openai import AsyncOpenAI

    from orchestrator.context import Context

log = logging.getLogger(__name__)


class PlannerUnavailable(FetchError):
    pass


class Planner:
    def __init__(self, settings: ModelSettings, tools: ToolRegistry) -> None:
        self._settings = settings
        self._tools = tools
        self._client: AsyncOpenAI | None = None
        if settings.base_url:
            # Imported only when a model is configured: the SDK is most of Fetch's start-up
            # time and memory, and a no-model install never needs it.
            from openai import AsyncOpenAI

            self._client = AsyncOpenAI(
                base_url=settings.base_url,
                api_key=settings.api_key or "not-needed",  # Ollama/vLLM accept anything
                timeout=settings.timeout_seconds,
                max_retries=settings.max_retries,
            )

    @property
    def configured(self) -> bool:
        return self._client is not None

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()

    def _system_prompt(self, ctx: Context) -> str:
        s = ctx.services
        repo = ctx.session.data.repo
        status = s.workspace.describe(repo) if repo and repo in s.workspace.repos() else None
        return build_system_prompt(s.identity, PromptContext(
            state=ctx.session.state,
            workspace=str(s.workspace.root),
            repos=tuple(s.workspace.repos()),
            active_repo=repo,
            repo_status=status,
            harness=ctx.session.data.harness or s.runner.default_harness(),
            skills=tuple(f"{k.name}: {k.description}" for k in s.skills),
        ))

    async def run(self, ctx: Context, text: str) -> None:
        if self._client is None:
            raise PlannerUnavailable("no orchestrator model is configured")
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self._system_prompt(ctx)},
            {"role": "user", "content": text},
        ]
        tokens_in = tokens_out = 0
        for _step in range(self._settings.max_iterations):
            try:
                response = await self._client.chat.completions.create(
                    model=self._settings.name,
                    messages=messages,  # type: ignore[arg-type]
                    tools=self._tools.schemas_for(ctx),  # type: ignore[arg-type]
                )
            except Exception as err:
                import openai

                if isinstance(err, openai.APIError):
                    raise PlannerUnavailable(_describe(err)) from err
                raise
            if response.usage is not None:
                tokens_in += response.usage.prompt_tokens or 0
                tokens_out += response.usage.completion_tokens or 0
            if not response.choices:
                raise PlannerUnavailable("the model answered with no choices")
            message = response.choices[0].message
            calls = message.tool_calls or []
            if not calls:
                await ctx.reply(message.content or "(the model said nothing)",
                                tokens=(tokens_in, tokens_out), model=self._settings.name)
                return
            messages.append({
                "role": "assistant",
                "content": message.content or "",
                "tool_calls": [c.model_dump(exclude_none=True) for c in calls],
            })
            final = False
            for call in calls:
                content, ended = await self._call_tool(ctx, call)
                final = final or ended
                messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
            if final:
                ctx.services.store.messages.log(
                    ctx.session.key, "model", "(planned: tool call ended the turn)",
                    model=self._settings.name, tokens_in=tokens_in, tokens_out=tokens_out)
                return
        await ctx.reply(
            f"I stopped planning after {self._settings.max_iterations} steps without an "
            "answer. Try a more specific request.",
            tokens=(tokens_in, tokens_out), model=self._settings.name)

    async def _call_tool(self, ctx: Context, call: Any) -> tuple[str, bool]:
        function = getattr(call, "function", None)
        if function is None:
            return "error: only function tools are available", False
        tool = self._tools.get(function.name)
        permissions = ctx.services.permissions
        if tool is None or not permissions.may(ctx.subject, f"tool:{tool.name}",
                                               ctx.session.key):
            shown = [n for n in self._tools.names()
                     if permissions.may(ctx.subject, f"tool:{n}", ctx.session.key)]
            return (f"error: unknown tool {function.name!r}; available: "
                    f"{', '.join(shown)}"), False
        if not permissions.decide(ctx.subject, f"tool:{tool.name}",
                                  ctx.session.key).allowed:
            # An "ask" rule: the owner is asked; this turn ends here.
            await ctx.permit(f"tool:{tool.name}", tool.name)
            return "the owner was asked; this tool waits for their answer", True
        try:
            args = json.loads(function.arguments or "{}")
        except ValueError as err:
            return f"error: arguments were not valid JSON ({err}); send a JSON object", False
        try:
            result = await tool.handler(ctx, check_args(tool, args))
        except ToolArgumentError as err:
            return f"error: {err}", False
        except FetchError as err:
            return f"error: {err}", False
        return result.content, result.final


def _describe(err: openai.APIError) -> str:
    import openai

    if isinstance(err, openai.APIConnectionError):
        return "the orchestrator model endpoint could not be reached"
    if isinstance(err, openai.APIStatusError):
        return f"the orchestrator model endpoint answered HTTP {err.status_code}"
    return f"the orchestrator model failed ({type(err).__name__})"
