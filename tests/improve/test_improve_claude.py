"""/improve with the real Claude Code CLI, headless in the bwrap kennel, reaching the
scripted Anthropic fake only through Fetch's relay: the change it makes lands on the
pushed branch and in the pull request; the GitHub token is in none of the CLI's model
requests (the harness's own traffic), the model key only in the relay's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.config import Settings
from tests.fakes.model_server import EditFile, ScriptedModelServer, Text
from tests.fakes.require import require_binary
from tests.improve.conftest import TOKEN, open_world

pytestmark = pytest.mark.real
MODEL_KEY = "sk-ant-improve-canary-key-42"


async def test_claude_code_proposes_through_a_pull_request(
    tmp_path: Path,
    make_settings: Callable[..., Settings],
    improve_env: Callable[..., dict[str, str]],
) -> None:
    require_binary("claude")
    async with ScriptedModelServer() as model:
        async for world in open_world(
            tmp_path,
            make_settings,
            improve_env,
            FETCH_HARNESS="claude-code",
            ANTHROPIC_BASE_URL=model.url,
            ANTHROPIC_API_KEY=MODEL_KEY,
        ):
            readme = world.home / "improve" / "1" / "README.md"
            model.script(
                EditFile(str(readme), "Teh assistant", "The assistant"),
                Text("Fixed the typo in README.md."),
            )
            done = await world.fetch.ask(
                "/improve fix the typo in README.md", "Pull request #1", 180
            )
            assert "1 file changed, +1 −1" in " ".join(done.split())
            branch = "fetch/improve-1-fix-the-typo-in-readme-md"
            assert "The assistant" in world.show(branch, "README.md")
            assert "Teh assistant" in world.show("main", "README.md")
            pr = next(r for r in world.github.requests if r.method == "POST").body
            assert "`README.md` | +1 −1" in pr["body"] and "✅ passed" in pr["body"]
            calls = model.model_requests
            assert calls, "the CLI never reached the model"
            for call in calls:
                assert TOKEN.encode() not in call.raw
                assert all(TOKEN not in v for v in call.headers.values())
                # The relay swapped the placeholder for the real key on the host.
                assert MODEL_KEY in call.headers.get("x-api-key", "")
