"""Gemini CLI (``@google/gemini-cli``), headless with ``--output-format stream-json``.

Facts this relies on (``shared/facts/harness-clis.md`` §3): the base URL env var alone
selects auth "gateway" and exits 41, so settings.json must pick ``gemini-api-key``; the
default model "auto" adds a router call, so a model is always named; a denied edit still
ends in ``result.status == "success"``, so denials are remembered and decide the end.

Signed in with Google (kennel/relay_signin_google.py), the CLI talks to Code Assist
instead: auth ``oauth-personal``, ``GOOGLE_GENAI_USE_GCA`` with the run's secret as
``GOOGLE_CLOUD_ACCESS_TOKEN`` (taken as is: no credentials file, no refresh in the
kennel) and ``CODE_ASSIST_ENDPOINT`` on the relay (measured with Gemini CLI 0.61.0).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnesses.base import Harness, HarnessEvent, HarnessRequest, usage_event
from harnesses.instructions import write_user_instructions
from harnesses.runstate import RunState

DEFAULT_MODEL = "gemini-2.5-flash"  # any named model: "auto" costs a router call per turn
EDIT_TOOLS = {"write_file", "replace"}
# Tool errors that mean "not allowed", as opposed to "tried and failed" (a missed
# old_string, say), which the model sees and can recover from.
DENIAL_TYPES = {
    "path_not_in_workspace",
    "permission_denied",
    "policy_violation",
    "sandbox_expansion_required",
}


@dataclass
class _Run:
    session_id: str = ""
    answer: str = ""  # assistant text since the last tool call: the final answer
    edits: dict[str, str] = field(default_factory=dict)  # tool_id -> path, until its result
    denials: list[str] = field(default_factory=list)


# See harnesses/runstate.py: a denial seen mid-stream must survive until the verdict.
_run = RunState("gemini_cli_run", _Run).get


class GeminiCli(Harness, name="gemini-cli"):
    provider = "gemini"
    binary = "gemini"
    summary = "Gemini CLI (Gemini API)"
    models = (DEFAULT_MODEL, "gemini-2.5-pro")

    def prepare(self, req: HarnessRequest, host_state_dir: Path) -> None:
        kind = "oauth-personal" if req.subscription else "gemini-api-key"
        settings = {
            "security": {"auth": {"selectedType": kind}},
            "privacy": {"usageStatisticsEnabled": False},  # the only startup lookup
            "telemetry": {"enabled": False},
            "general": {
                "enableAutoUpdate": False,
                "enableAutoUpdateNotification": False,
                "maxAttempts": min(req.max_retries + 1, 10),  # the CLI refuses more than 10
            },
        }
        if req.mcp_servers:
            # Fetch's memory and the owner's servers over the relay's socket (what `gemini
            # mcp add -t http --trust` writes); trusted, so calls need no confirmation in
            # headless mode (the host decides each). The relay serves /mcp only with the
            # run's secret, the CLI's key: Gemini CLI expands ${VAR} in settings.json
            # (measured), so the file holds no secret.
            auth = {"Authorization": "Bearer ${GEMINI_API_KEY}"}
            settings["mcpServers"] = {
                m.name: {"type": "http", "url": m.url, "trust": True, "headers": auth}
                for m in req.mcp_servers
            }
        config = host_state_dir / "gemini" / ".gemini"
        config.mkdir(parents=True, exist_ok=True)
        (config / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
        write_user_instructions(req, host_state_dir, "gemini")  # .gemini/GEMINI.md
        for sub in ("home", "tmp"):
            (host_state_dir / sub).mkdir(parents=True, exist_ok=True)

    def command(self, req: HarnessRequest) -> tuple[list[str], dict[str, str]]:
        argv = [
            self.binary,
            f"--prompt={req.prompt}",  # "=": a prompt starting with "-" stays one
            "--output-format",
            "stream-json",
            # Write tools inside the workspace only (no shell); --skip-trust or it exits 55.
            "--approval-mode",
            "auto_edit",
            "--skip-trust",
            "--model",
            req.model or DEFAULT_MODEL,
        ]
        if req.resume:
            argv += ["--resume", req.resume]
        # The owner's attachments sit outside the workspace: its read tools may open them
        # (the kennel shows them read-only).
        for folder in sorted({str(path.parent) for path in req.attachments}):
            argv.append(f"--include-directories={folder}")
        env = {
            "PATH": req.path_env,
            "HOME": str(req.state_dir / "home"),
            "GEMINI_CLI_HOME": str(req.state_dir / "gemini"),
            "TMPDIR": str(req.state_dir / "tmp"),  # error reports land in os.tmpdir()
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "GEMINI_API_KEY": req.placeholder_key,
            # One process instead of wrapper + relaunched child, so a signal reaches it.
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }
        if req.model_url and req.subscription:
            # A Google sign-in: Code Assist on the relay, the run's secret as the token.
            env["GOOGLE_GENAI_USE_GCA"] = "true"
            env["GOOGLE_CLOUD_ACCESS_TOKEN"] = req.placeholder_key
            env["CODE_ASSIST_ENDPOINT"] = req.model_url
        elif req.model_url:
            env["GOOGLE_GEMINI_BASE_URL"] = req.model_url
        return argv, env

    def event(self, obj: dict[str, Any]) -> list[HarnessEvent]:
        kind = obj.get("type")
        if kind == "init":
            run = _run(fresh=True)
            run.session_id = str(obj.get("session_id", ""))
            return [
                HarnessEvent(
                    "session", data={"session_id": run.session_id, "model": obj.get("model", "")}
                )
            ]
        run = _run()
        if kind == "message" and obj.get("role") == "assistant":
            text = str(obj.get("content") or "")
            run.answer += text
            return [HarnessEvent("text", text)] if text else []
        if kind == "tool_use":
            name = str(obj.get("tool_name", ""))
            params = obj.get("parameters") or {}
            run.answer = ""
            if name in EDIT_TOOLS and isinstance(params, dict):
                run.edits[str(obj.get("tool_id", ""))] = str(params.get("file_path", ""))
            return [HarnessEvent("tool_use", name, {"input": params})]
        if kind == "tool_result":
            return self._tool_result(obj, run)
        if kind == "result":
            return self._result(obj, run)
        return []

    @staticmethod
    def _tool_result(obj: dict[str, Any], run: _Run) -> list[HarnessEvent]:
        path = run.edits.pop(str(obj.get("tool_id", "")), None)
        if obj.get("status") == "success":
            return [HarnessEvent("file_change", path)] if path else []
        error = obj.get("error") or {}
        message = str(error.get("message") or obj.get("output") or "")
        # 0.61 reports a path outside the workspace as invalid_tool_params.
        if error.get("type") in DENIAL_TYPES or message.startswith("Path not in workspace"):
            run.denials.append(message)
        return []

    @staticmethod
    def _result(obj: dict[str, Any], run: _Run) -> list[HarnessEvent]:
        events = [usage_event(obj.get("stats"))]
        session = {"session_id": run.session_id}
        if obj.get("status") != "success":
            error = obj.get("error") or {}
            message = _api_error(str(error.get("message") or "")) or "Gemini CLI failed"
            events.append(HarnessEvent("error", message, session))
        elif run.denials:
            events.append(
                HarnessEvent(
                    "error", "Gemini CLI was denied: " + "; ".join(run.denials)[:400], session
                )
            )
        else:
            events.append(HarnessEvent("done", run.answer.strip(), session))
        return events


def _api_error(message: str) -> str:
    """``[API Error: {"error":{"code":401,"message":"…","status":"…"}}]`` → one plain line."""
    inner = message.removeprefix("[API Error: ").removesuffix("]")
    try:
        error = json.loads(inner)["error"]
        head = " ".join(str(p) for p in ("API error", error["code"], error.get("status")) if p)
        return f"{head}: {error['message']}"
    except (ValueError, KeyError, TypeError):
        return message
