"""Claude Code (``@anthropic-ai/claude-code``), headless with ``--output-format stream-json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harnesses.base import Harness, HarnessEvent, HarnessRequest, usage_event
from harnesses.instructions import write_user_instructions

EDIT_TOOLS = {"Write", "Edit", "MultiEdit", "NotebookEdit"}
BEARER = "Bearer ${ANTHROPIC_API_KEY}"  # the run's secret, as Claude Code expands it
# With a subscription the secret is in the token's variable (kennel/credentials.py).
BEARER_SUBSCRIPTION = "Bearer ${CLAUDE_CODE_OAUTH_TOKEN}"
TOKEN_ENV = "CLAUDE_CODE_OAUTH_TOKEN"


class ClaudeCode(Harness, name="claude-code"):
    provider = "anthropic"
    binary = "claude"
    summary = "Claude Code CLI (Anthropic Messages)"
    # Streaming JSON input (measured with 2.1.197): a message written while a turn runs
    # reaches the model's next request ("The user sent a new message while you were
    # working: ..."), or starts a turn of its own when it comes after the last one (a
    # second ``result``); --replay-user-messages echoes each one as it is taken, so the
    # runner knows when stdin may be closed (the CLI then ends).
    steerable = True
    # Its own default first (2.1.197 sends claude-opus-4-8), then the aliases --model takes.
    models = ("claude-opus-4-8", "opus", "sonnet", "haiku")

    def input_line(self, text: str) -> bytes:
        message = {"role": "user", "content": [{"type": "text", "text": text}]}
        return (json.dumps({"type": "user", "message": message}) + "\n").encode()

    def prepare(self, req: HarnessRequest, host_state_dir: Path) -> None:
        # User memory: $CLAUDE_CONFIG_DIR/CLAUDE.md (the pack member's instructions).
        write_user_instructions(req, host_state_dir, "claude")

    def command(self, req: HarnessRequest) -> tuple[list[str], dict[str, str]]:
        # Steered: the prompt is the first line on stdin, not an argument.
        prompt = (
            ["--input-format", "stream-json", "--replay-user-messages"]
            if req.steer
            else [req.prompt]
        )
        argv = [
            self.binary,
            "-p",
            *prompt,
            "--output-format",
            "stream-json",
            "--verbose",
            # Edits inside the working folder only; no blanket bypass.
            "--permission-mode",
            "acceptEdits",
        ]
        if req.model:
            argv += ["--model", req.model]
        # The owner's attachments sit outside the workdir: Read may open them (an image
        # is read as an image), nothing may edit them (the kennel shows them read-only).
        for folder in sorted({str(path.parent) for path in req.attachments}):
            argv += ["--add-dir", folder]
        if req.resume:
            argv += ["--resume", req.resume]
        if req.mcp_servers:
            # Fetch's memory and the owner's servers over the relay's socket; their tools
            # need no prompt (the host decides each call), and no MCP server from the
            # repository's own config is started (--strict-mcp-config). The relay serves
            # /mcp only with the run's secret, the CLI's key: Claude Code expands ${VAR}
            # here (measured), so the secret stays out of the command line.
            auth = {"Authorization": BEARER_SUBSCRIPTION if req.subscription else BEARER}
            servers = {
                m.name: {"type": "http", "url": m.url, "headers": auth} for m in req.mcp_servers
            }
            argv += [
                f"--mcp-config={json.dumps({'mcpServers': servers})}",
                "--strict-mcp-config",
                "--allowedTools=" + ",".join(f"mcp__{m.name}" for m in req.mcp_servers),
            ]
        env = {
            "PATH": req.path_env,
            "HOME": str(req.state_dir / "home"),
            "CLAUDE_CONFIG_DIR": str(req.state_dir / "claude"),
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_MAX_RETRIES": str(req.max_retries),
        }
        # The run's secret where the owner's credential would be: with a subscription,
        # Claude Code sends it as a bearer with its OAuth flag (measured), which the relay
        # swaps for the real token; else as x-api-key. Never both: a key would win.
        env[TOKEN_ENV if req.subscription else "ANTHROPIC_API_KEY"] = req.placeholder_key
        if req.model_url:
            env["ANTHROPIC_BASE_URL"] = req.model_url
        return argv, env

    def event(self, obj: dict[str, Any]) -> list[HarnessEvent]:
        kind = obj.get("type")
        if kind == "system" and obj.get("subtype") == "init":
            return [HarnessEvent("session", data={"session_id": obj.get("session_id", "")})]
        if kind == "assistant":
            return list(self._assistant(obj))
        if kind == "result":
            return self._result(obj)
        if kind == "user" and obj.get("isReplay"):
            return [HarnessEvent("input", _text_of(obj.get("message")))]
        return []

    @staticmethod
    def _assistant(obj: dict[str, Any]) -> list[HarnessEvent]:
        events: list[HarnessEvent] = []
        message = obj.get("message") or {}
        for block in message.get("content") or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and block.get("text"):
                events.append(HarnessEvent("text", str(block["text"])))
            elif block.get("type") == "tool_use":
                name = str(block.get("name", ""))
                tool_input = block.get("input") or {}
                events.append(HarnessEvent("tool_use", name, {"input": tool_input}))
                if name in EDIT_TOOLS and isinstance(tool_input, dict):
                    path = tool_input.get("file_path") or tool_input.get("notebook_path") or ""
                    events.append(HarnessEvent("file_change", str(path)))
        return events

    @staticmethod
    def _result(obj: dict[str, Any]) -> list[HarnessEvent]:
        events = [usage_event(obj.get("usage"), cost_usd=float(obj.get("total_cost_usd") or 0.0))]
        text = str(obj.get("result") or "")
        denials = obj.get("permission_denials") or []
        session = {"session_id": obj.get("session_id", "")}
        if obj.get("is_error"):
            events.append(HarnessEvent("error", text or "Claude Code reported an error", session))
        elif denials:
            tools = ", ".join(
                sorted({str(d.get("tool_name", "?")) for d in denials if isinstance(d, dict)})
            )
            events.append(
                HarnessEvent("error", f"Claude Code was denied permission for: {tools}", session)
            )
        else:
            events.append(HarnessEvent("done", text, session))
        return events


def _text_of(message: Any) -> str:
    """The text of a user message as Claude Code echoes it (a string or text blocks)."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    parts = [b.get("text", "") for b in content or [] if isinstance(b, dict)]
    return "".join(str(p) for p in parts)
