"""Which repository a tool call means, and whether the sender may read it: the one named,
else the chat's active one; it must be in the workspace, and a member must be allowed
to work in it (``repo:<name>``, as for a task)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orchestrator.tools import ToolArgumentError

if TYPE_CHECKING:
    from orchestrator.context import Context


def repo_of(ctx: Context, args: dict[str, Any]) -> str:
    name = args.get("repo") or ctx.session.data.repo
    if not name:
        raise ToolArgumentError(
            "no repository given and none is active; name one (workspace_list shows them)"
        )
    if name not in ctx.services.workspace.repos():
        raise ToolArgumentError(f"no repository named {name!r}; call workspace_list")
    if not ctx.services.permissions.decide(ctx.subject, f"repo:{name}", ctx.session.key).allowed:
        raise ToolArgumentError(f"the sender may not work in {name}")
    return str(name)
