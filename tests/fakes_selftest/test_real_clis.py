"""The real coding CLIs against ScriptedModelServer: they must write and edit real files.

These are what keep the fake honest (a fake only proves the code agrees with itself). Each
test skips when its CLI is not installed, and fails instead under CI=true.
Install: ``npm install -g @anthropic-ai/claude-code@2.1.197 @google/gemini-cli@0.61.0
@openai/codex@0.169.0 @github/copilot@1.0.102``.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fakes import clis
from tests.fakes.model_server import (
    EditFile,
    Error,
    Hang,
    ScriptedModelServer,
    Text,
    ToolCall,
    Turn,
    WriteFile,
)

pytestmark = pytest.mark.real

Recipe = Callable[[str, Path, str], tuple[clis.Argv, clis.Env]]


@dataclass(frozen=True)
class Variant:
    cli: clis.Cli
    recipe: Recipe
    dialect: str


VARIANTS = {
    "claude": Variant("claude", clis.claude, "anthropic"),
    "gemini": Variant("gemini", clis.gemini, "gemini"),
    "codex": Variant("codex", clis.codex, "openai_responses"),
    "copilot-chat": Variant("copilot", clis.copilot, "openai_chat"),
    "copilot-responses": Variant(
        "copilot", lambda u, h, p: clis.copilot(u, h, p, wire="responses"), "openai_responses"
    ),
    "copilot-anthropic": Variant(
        "copilot", lambda u, h, p: clis.copilot(u, h, p, wire="anthropic"), "anthropic"
    ),
}

README = "# Demo\nfix teh typo\nthe end\n"


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    """(home, workspace): an empty HOME for all CLI state, and a git-less work dir."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    return home, work


async def run(
    name: str, srv: ScriptedModelServer, dirs: tuple[Path, Path], prompt: str
) -> clis.CliRun:
    home, work = dirs
    argv, env = VARIANTS[name].recipe(srv.url, home, prompt)
    return await clis.run_cli(argv, cwd=work, env=env, timeout=120)


def assert_clean(srv: ScriptedModelServer, name: str, turns: int) -> None:
    assert not srv.pending, f"script not consumed: {srv.pending}"
    assert not srv.failures and not srv.mismatches, (srv.failures, srv.mismatches)
    assert [r.dialect for r in srv.model_requests] == [VARIANTS[name].dialect] * turns


@pytest.mark.parametrize("name", VARIANTS)
async def test_cli_writes_a_new_file(name: str, dirs: tuple[Path, Path]) -> None:
    async with ScriptedModelServer() as srv:
        srv.script(WriteFile("hello.txt", "hello from fake\n"), Text("Done: wrote hello.txt"))
        result = await run(name, srv, dirs, "write hello.txt")
    cli = VARIANTS[name].cli
    assert result.returncode == 0, result.stderr
    assert clis.succeeded(cli, result), result.stdout
    assert (dirs[1] / "hello.txt").read_text() == "hello from fake\n"
    assert clis.final_text(cli, result) == "Done: wrote hello.txt"
    assert_clean(srv, name, turns=2)


@pytest.mark.parametrize("name", VARIANTS)
async def test_cli_edits_an_existing_file(name: str, dirs: tuple[Path, Path]) -> None:
    (dirs[1] / "README.md").write_text(README)
    async with ScriptedModelServer() as srv:
        srv.script(EditFile("README.md", "fix teh typo", "fix the typo"), Text("Fixed"))
        result = await run(name, srv, dirs, "fix the typo in README.md")
    assert clis.succeeded(VARIANTS[name].cli, result), result.stdout
    assert (dirs[1] / "README.md").read_text() == "# Demo\nfix the typo\nthe end\n"
    # Claude Code needs a Read turn before its Edit: one request more.
    assert_clean(srv, name, turns=3 if name == "claude" else 2)


@pytest.mark.parametrize("name", [n for n in VARIANTS if n != "copilot-anthropic"])
async def test_cli_overwrites_an_existing_file(name: str, dirs: tuple[Path, Path]) -> None:
    (dirs[1] / "README.md").write_text(README)
    async with ScriptedModelServer() as srv:
        srv.script(WriteFile("README.md", "all new\n", overwrite=True), Text("Replaced"))
        result = await run(name, srv, dirs, "rewrite README.md")
    assert clis.succeeded(VARIANTS[name].cli, result), result.stdout
    assert (dirs[1] / "README.md").read_text() == "all new\n"
    assert_clean(srv, name, turns=3 if name == "claude" else 2)


async def test_claude_refuses_edit_without_read(dirs: tuple[Path, Path]) -> None:
    """Documents the gotcha EditFile works around: an Edit the session has not Read first is
    refused as a tool error, and the run still "succeeds"."""
    (dirs[1] / "README.md").write_text(README)
    edit = {"file_path": "README.md", "old_string": "teh", "new_string": "the"}
    async with ScriptedModelServer() as srv:
        srv.script(ToolCall("Edit", edit), Text("Fixed?"))
        result = await run("claude", srv, dirs, "fix the typo")
    assert clis.succeeded("claude", result)
    assert (dirs[1] / "README.md").read_text() == README
    assert "File has not been read yet" in result.stdout


async def test_claude_edit_with_read_in_the_same_turn(dirs: tuple[Path, Path]) -> None:
    """Read and Edit in one assistant message also works: Claude runs them in order."""
    (dirs[1] / "README.md").write_text(README)
    edit = {"file_path": "README.md", "old_string": "teh", "new_string": "the"}
    async with ScriptedModelServer() as srv:
        srv.script(
            Turn(ToolCall("Read", {"file_path": "README.md"}), ToolCall("Edit", edit)),
            Text("Fixed"),
        )
        result = await run("claude", srv, dirs, "fix the typo")
    assert clis.succeeded("claude", result)
    assert (dirs[1] / "README.md").read_text() == "# Demo\nfix the typo\nthe end\n"
    assert_clean(srv, "claude", turns=2)


# The error each CLI gives up on at once with these recipes: claude, gemini and codex have
# their retries turned off; copilot has no retry knob but does not retry a 400 (500: 6 tries).
FAST_ERRORS = {"claude": 500, "gemini": 500, "codex": 500, "copilot-chat": 400}


@pytest.mark.parametrize(("name", "status"), FAST_ERRORS.items())
async def test_cli_reports_a_model_error(name: str, status: int, dirs: tuple[Path, Path]) -> None:
    async with ScriptedModelServer() as srv:
        srv.script(Error(status, f"fake failure {status}"))
        result = await run(name, srv, dirs, "hi")
    assert result.returncode != 0
    assert not clis.succeeded(VARIANTS[name].cli, result)
    assert len(srv.model_requests) == 1


@pytest.mark.parametrize("name", ["claude", "gemini", "codex", "copilot-chat"])
async def test_cli_cancelled_mid_request(name: str, dirs: tuple[Path, Path]) -> None:
    """SIGINT to the process group while the model request hangs: the CLI drops the request
    and exits at once, without a success event. Exit codes seen: claude 0, gemini 0, codex 1,
    copilot -2 (its node wrapper dies of the signal)."""
    home, work = dirs
    async with ScriptedModelServer() as srv:
        srv.script(Hang())
        argv, env = VARIANTS[name].recipe(srv.url, home, "hi")
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=work,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # so the signal reaches wrapper and native child alike
        )
        try:
            async with asyncio.timeout(60):
                while not srv.model_requests:
                    await srv.wait_for_requests(len(srv.requests) + 1, timeout=60)
            os.killpg(proc.pid, signal.SIGINT)
            async with asyncio.timeout(10):
                out, err = await proc.communicate()
            await srv.wait_for_disconnects(1, timeout=5)
        finally:
            if proc.returncode is None:
                os.killpg(proc.pid, signal.SIGKILL)
                await proc.communicate()
    result = clis.CliRun(proc.returncode or 0, out.decode(), err.decode())
    assert not clis.succeeded(VARIANTS[name].cli, result)


async def test_gemini_auto_model_router_call_consumes_no_step(dirs: tuple[Path, Path]) -> None:
    async with ScriptedModelServer() as srv:
        srv.script(WriteFile("hello.txt", "routed\n"), Text("Done"))
        home, work = dirs
        argv, env = clis.gemini(srv.url, home, "write hello.txt", model=None)
        result = await clis.run_cli(argv, cwd=work, env=env)
    assert clis.succeeded("gemini", result), result.stdout
    assert (work / "hello.txt").read_text() == "routed\n"
    assert srv.model_requests[0].path.endswith(":generateContent")  # the classifier
    assert "ZodError" not in result.stderr  # its answer fitted the schema
    assert all(r.path.endswith(":streamGenerateContent") for r in srv.model_requests[1:])
    assert not srv.pending
