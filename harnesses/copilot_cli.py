"""GitHub Copilot CLI (``@github/copilot``) in BYOK mode, headless with
``--output-format json``.

Facts this relies on (``shared/facts/harness-clis.md`` §5, ``tests/fakes/cli_recipes.md``):
BYOK needs no GitHub login and ``COPILOT_OFFLINE`` stops every other connection; the
node wrapper does not pass signals on (the kennel signals the whole group); and the final
``result`` says ``exitCode: 0`` even after a denied edit or a cancellation, so both are
remembered and decide the end.

Signed in with GitHub (kennel/credentials.py), it runs online instead: the run's secret as
``COPILOT_GITHUB_TOKEN`` and the relay as ``COPILOT_API_URL``, where it sends that token
as the bearer of its Copilot API calls (measured with 1.0.102); client telemetry off.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnesses.base import Harness, HarnessEvent, HarnessRequest
from harnesses.instructions import write_user_instructions
from harnesses.runstate import RunState

DEFAULT_MODEL = "gpt-5.4"  # BYOK has no model picker: one must be named
# Where an unpacked copy of copilot's ~235 MB package may already be (the kennel image
# sets it); passed on so a run does not unpack its own.
PKG_CACHE_ENV = "COPILOT_PKG_CACHE_HOME"
MCP_CONFIG = "copilot/fetch-mcp.json"  # under state_dir: Fetch's memory as an MCP server


@dataclass
class _Run:
    answer: str = ""
    denials: list[str] = field(default_factory=list)
    failure: str = ""  # session.error or abort: the run did not finish its work
    tokens_in: int = 0
    tokens_out: int = 0


# See harnesses/runstate.py: a denial seen mid-stream must survive until the verdict.
_run = RunState("copilot_run", _Run).get


class CopilotCli(Harness, name="copilot"):
    provider = "openai"
    binary = "copilot"
    summary = "GitHub Copilot CLI (BYOK, OpenAI Chat Completions)"
    models = (DEFAULT_MODEL, "claude-sonnet-4.5")

    def prepare(self, req: HarnessRequest, host_state_dir: Path) -> None:
        for sub in ("home", "copilot", "tmp"):
            (host_state_dir / sub).mkdir(parents=True, exist_ok=True)
        # $COPILOT_HOME/copilot-instructions.md: user-level instructions for every session.
        write_user_instructions(req, host_state_dir, "copilot")
        config = host_state_dir / MCP_CONFIG
        if not req.mcp_servers:
            config.unlink(missing_ok=True)
            return
        # The relay serves /mcp only with the run's secret. Copilot expands no variable in
        # an MCP header (measured: $VAR, ${VAR}, ${env:VAR} are sent as written), so the
        # secret itself is written; it dies with the run.
        servers = {
            m.name: {
                "type": "http",
                "url": m.url,
                "tools": ["*"],
                "headers": {"Authorization": f"Bearer {req.placeholder_key}"},
            }
            for m in req.mcp_servers
        }
        config.write_text(json.dumps({"mcpServers": servers}))

    def command(self, req: HarnessRequest) -> tuple[list[str], dict[str, str]]:
        argv = [
            self.binary,
            f"--prompt={req.prompt}",
            "--output-format=json",
            # Edit tools (apply_patch, create, edit) only; the shell stays denied, and so do
            # paths outside the workspace. /tmp is allowed by default: writing to it did
            # succeed without --disallow-temp-dir.
            "--allow-tool=write",
            "--disallow-temp-dir",
            "--no-ask-user",
            "--no-auto-update",
        ]
        if req.resume:
            argv.append(f"--resume={req.resume}")
        else:  # the owner's screenshots go with the first prompt as attachments
            argv += [f"--attachment={p}" for p in req.attached_images]
        # ... and every attachment may be read where the kennel shows it (read-only).
        for folder in sorted({str(path.parent) for path in req.attachments}):
            argv.append(f"--add-dir={folder}")
        if req.mcp_servers:
            # Fetch's memory and the owner's servers over the relay's socket; their tools
            # are allowed without a prompt (the host decides each call). From a file
            # (prepare): the config holds the run's secret, and a command line is
            # readable by every user of the host.
            argv.append(f"--additional-mcp-config=@{req.state_dir / MCP_CONFIG}")
            argv += [f"--allow-tool={m.name}" for m in req.mcp_servers]
        env = {
            "PATH": req.path_env,
            "HOME": str(req.state_dir / "home"),
            "COPILOT_HOME": str(req.state_dir / "copilot"),
            "TMPDIR": str(req.state_dir / "tmp"),
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "NO_COLOR": "1",
            "COPILOT_AUTO_UPDATE": "false",
            "COPILOT_MODEL": req.model or DEFAULT_MODEL,
            # Shared by the harnesses of this repo: a first run unpacks ~235 MB (6 s) here.
            "XDG_CACHE_HOME": str(req.state_dir.parent / ".cache"),
        }
        if os.environ.get(PKG_CACHE_ENV):
            env[PKG_CACHE_ENV] = os.environ[PKG_CACHE_ENV]
        if req.subscription:
            # A GitHub sign-in: the Copilot API on the relay, the run's secret as the token.
            env["COPILOT_GITHUB_TOKEN"] = req.placeholder_key
            if req.model_url:
                env["COPILOT_API_URL"] = req.model_url
            argv.append("--disable-client-telemetry")
            return argv, env
        env["COPILOT_OFFLINE"] = "true"  # no GitHub auth, telemetry or update check
        env["COPILOT_PROVIDER_TYPE"] = "openai"
        env["COPILOT_PROVIDER_API_KEY"] = req.placeholder_key
        if req.model_url:
            # The relay appends the path to the vendor base (…/v1): ask for /chat/completions.
            env["COPILOT_PROVIDER_BASE_URL"] = req.model_url
        return argv, env

    def event(self, obj: dict[str, Any]) -> list[HarnessEvent]:
        kind = obj.get("type")
        data = obj.get("data") or {}
        if kind == "user.message":
            _run(fresh=True)
            return []
        run = _run()
        if kind == "assistant.message":
            text = str(data.get("content") or "")
            if text:
                run.answer = text
            return [HarnessEvent("text", text)] if text else []
        if kind == "tool.execution_start":
            run.answer = ""
            return [
                HarnessEvent(
                    "tool_use", str(data.get("toolName", "")), {"input": data.get("arguments")}
                )
            ]
        if kind == "tool.execution_complete":
            return self._tool_done(data, run)
        if kind == "assistant.usage":
            run.tokens_in += int(data.get("inputTokens") or 0)
            run.tokens_out += int(data.get("outputTokens") or 0)
            return []
        if kind == "session.error":
            # Line one says what failed; the rest advises COPILOT_PROVIDER_* variables the
            # owner never set (Fetch's relay holds the key).
            message = str(data.get("message") or "").strip()
            run.failure = message.splitlines()[0] if message else "Copilot reported an error"
            return [HarnessEvent("error", run.failure, {"detail": message})]
        if kind == "abort":
            run.failure = f"Copilot was interrupted ({data.get('reason', 'abort')})"
            return [HarnessEvent("error", run.failure)]
        if kind == "result":
            return self._result(obj, run)
        return []

    @staticmethod
    def _tool_done(data: dict[str, Any], run: _Run) -> list[HarnessEvent]:
        if data.get("success"):
            edits = [e for e in data.get("fileEdits") or [] if isinstance(e, dict)]
            return [HarnessEvent("file_change", str(e.get("path", ""))) for e in edits]
        error = data.get("error") or {}
        if error.get("code") == "denied":
            run.denials.append(str(error.get("message", "denied")))
        return []

    @staticmethod
    def _result(obj: dict[str, Any], run: _Run) -> list[HarnessEvent]:
        session = {"session_id": str(obj.get("sessionId", ""))}
        # BYOK runs print no token counts (assistant.usage stays silent); the relay logs them.
        events = [HarnessEvent("session", data=session)]
        if run.tokens_in or run.tokens_out:
            events.append(
                HarnessEvent(
                    "usage", data={"tokens_in": run.tokens_in, "tokens_out": run.tokens_out}
                )
            )
        code = obj.get("exitCode")
        if code != 0 or run.failure:
            text = run.failure or f"Copilot exited with code {code}"
            events.append(HarnessEvent("error", text, session))
        elif run.denials:
            text = "Copilot was denied: " + "; ".join(run.denials)[:400]
            events.append(HarnessEvent("error", text, session))
        else:
            events.append(HarnessEvent("done", run.answer, session))
        return events
