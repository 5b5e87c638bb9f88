"""Each adapter's MCP config for Fetch's memory carries the run's secret (the relay serves
/mcp only with it), in the form that CLI takes, and never on the command line: a command
line is readable by every user of the host. Measured with the real CLIs through the relay:
Claude Code and Gemini CLI expand ``${VAR}`` in the config, Codex reads the bearer from a
variable (``bearer_token_env_var``), Copilot CLI expands nothing and reads a file."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from harnesses.base import Harness, HarnessRequest, McpServer
from harnesses.claude_code import ClaudeCode
from harnesses.codex import KEY_ENV, Codex
from harnesses.copilot_cli import MCP_CONFIG, CopilotCli
from harnesses.gemini_cli import GeminiCli

SECRET = "run-secret-of-the-adapters-test"
MCP = McpServer("fetch-memory", "http://127.0.0.1:4100/mcp")


def run(
    harness: Harness, tmp_path: Path, mcp: McpServer | None = MCP
) -> tuple[list[str], dict[str, str]]:
    req = HarnessRequest(
        prompt="look",
        workdir=tmp_path / "ws",
        state_dir=tmp_path / "state",
        model_url="http://127.0.0.1:4100",
        placeholder_key=SECRET,
        mcp=mcp,
    )
    harness.prepare(req, req.state_dir)
    argv, env = harness.command(req)
    assert SECRET not in json.dumps(argv)
    return argv, env


def test_claude_code_sends_its_key_as_the_bearer(tmp_path: Path) -> None:
    argv, env = run(ClaudeCode(), tmp_path)
    config = json.loads(next(a for a in argv if a.startswith("--mcp-config=")).split("=", 1)[1])
    server = config["mcpServers"]["fetch-memory"]
    assert server["headers"] == {"Authorization": "Bearer ${ANTHROPIC_API_KEY}"}
    assert env["ANTHROPIC_API_KEY"] == SECRET


def test_gemini_cli_sends_its_key_as_the_bearer(tmp_path: Path) -> None:
    _argv, env = run(GeminiCli(), tmp_path)
    settings = json.loads((tmp_path / "state" / "gemini" / ".gemini" / "settings.json").read_text())
    server = settings["mcpServers"]["fetch-memory"]
    assert server["headers"] == {"Authorization": "Bearer ${GEMINI_API_KEY}"}
    assert env["GEMINI_API_KEY"] == SECRET


def test_codex_reads_the_bearer_from_its_key_variable(tmp_path: Path) -> None:
    _argv, env = run(Codex(), tmp_path)
    config = tomllib.loads((tmp_path / "state" / "codex" / "config.toml").read_text())
    assert config["mcp_servers"]["fetch-memory"]["bearer_token_env_var"] == KEY_ENV
    assert env[KEY_ENV] == SECRET


def test_copilot_reads_the_secret_from_a_file(tmp_path: Path) -> None:
    argv, env = run(CopilotCli(), tmp_path)
    path = tmp_path / "state" / MCP_CONFIG
    assert f"--additional-mcp-config=@{path}" in argv
    server = json.loads(path.read_text())["mcpServers"]["fetch-memory"]
    assert server["headers"] == {"Authorization": f"Bearer {SECRET}"}
    assert env["COPILOT_PROVIDER_API_KEY"] == SECRET
    run(CopilotCli(), tmp_path, mcp=None)  # a later run without memory: no stale file
    assert not path.exists()


def test_every_adapter_offers_the_owners_servers_too(tmp_path: Path) -> None:
    """The owner's MCP servers (orchestrator/mcphost/) beside memory, each at its own
    path on the relay, with the same bearer; allowed without a prompt in the CLI (the
    host decides every call)."""
    owners = (McpServer("files", "http://127.0.0.1:4100/mcp/files"),)

    def req(state: Path) -> HarnessRequest:
        return HarnessRequest(
            prompt="look",
            workdir=tmp_path / "ws",
            state_dir=state,
            model_url="http://127.0.0.1:4100",
            placeholder_key=SECRET,
            mcp=MCP,
            more_mcp=owners,
        )

    for harness in (ClaudeCode(), GeminiCli(), Codex(), CopilotCli()):
        r = req(tmp_path / harness.name)
        harness.prepare(r, r.state_dir)
        argv, _env = harness.command(r)
        assert SECRET not in json.dumps(argv)
        if isinstance(harness, ClaudeCode):
            arg = next(a for a in argv if a.startswith("--mcp-config="))
            servers = json.loads(arg.split("=", 1)[1])["mcpServers"]
            assert "--allowedTools=mcp__fetch-memory,mcp__files" in argv
        elif isinstance(harness, GeminiCli):
            path = r.state_dir / "gemini" / ".gemini" / "settings.json"
            servers = json.loads(path.read_text())["mcpServers"]
        elif isinstance(harness, Codex):
            path = r.state_dir / "codex" / "config.toml"
            servers = tomllib.loads(path.read_text())["mcp_servers"]
        else:
            servers = json.loads((r.state_dir / MCP_CONFIG).read_text())["mcpServers"]
            assert "--allow-tool=files" in argv
        assert servers["files"]["url"] == "http://127.0.0.1:4100/mcp/files", harness.name
        assert set(servers) == {"fetch-memory", "files"}, harness.name
