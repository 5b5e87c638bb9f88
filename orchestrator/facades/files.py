"""/send: a file of the chat's active repository (or of the one named first) back to the
phone, checked and read as the model's ``send_file`` tool does (``agent/send_file.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator.agent.access import repo_of
from orchestrator.agent.send_file import NotSendable, send_repo_file
from orchestrator.tools import ToolArgumentError

if TYPE_CHECKING:
    from orchestrator.context import Context


class FilesFacade:
    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    async def send(self, args: str) -> str:
        words = args.split(maxsplit=1)
        if not words:
            raise NotSendable(
                "name a file: /send <path> (of the active repo), e.g. /send README.md"
            )
        named: dict[str, str] = {}
        path = args.strip()
        if len(words) == 2 and words[0] in self._ctx.services.workspace.repos():
            named, path = {"repo": words[0]}, words[1].strip()
        try:
            repo = repo_of(self._ctx, named)
        except ToolArgumentError as err:
            raise NotSendable(str(err)) from None
        return await send_repo_file(self._ctx, repo, path)
