"""The orchestrator's system prompt, assembled in exactly one place."""

from __future__ import annotations

from dataclasses import dataclass

from identity.loader import Identity


@dataclass(frozen=True, slots=True)
class PromptContext:
    state: str
    workspace: str
    repos: tuple[str, ...]
    active_repo: str | None
    repo_status: str | None
    harness: str
    skills: tuple[str, ...] = ()


def build_system_prompt(identity: Identity, ctx: PromptContext) -> str:
    c, a = identity.collar, identity.alpha
    lines = [
        f"You are {c.name}, a coding assistant the owner drives from their phone.",
        f"Tone: {c.tone}. Replies are read on a 6-inch screen: short lines, no tables.",
    ]
    if c.directives:
        lines.append("Directives:")
        lines += [f"- {d}" for d in c.directives]
    if c.body:
        lines += ["", c.body]
    lines += ["", f"Owner: {a.name} (timezone {a.timezone})."]
    if a.preferences:
        lines += [f"- {p}" for p in a.preferences]
    if a.body:
        lines += ["", a.body]
    lines += [
        "",
        "Session context:",
        f"- mode: {ctx.state}",
        f"- workspace: {ctx.workspace} with repos: {', '.join(ctx.repos) or '(none)'}",
        f"- active repo: {ctx.active_repo or '(none chosen)'}",
    ]
    if ctx.repo_status:
        lines.append(f"- git status: {ctx.repo_status}")
    lines.append(f"- coding harness: {ctx.harness}")
    if ctx.skills:
        lines.append(f"- skills: {', '.join(ctx.skills)}")
    lines += [
        "",
        "To change code, call task_create with the repo and a precise instruction; the",
        "harness edits, the owner approves the diff. Never claim a change is made before",
        "the owner approved it. Ask with ask_user when the repo or the goal is unclear.",
    ]
    return "\n".join(lines)
