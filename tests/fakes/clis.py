"""Command lines that drive each real coding CLI headless against a ScriptedModelServer.

The recipes (flags, env, config files, and why each is there) are written up in
``tests/fakes/cli_recipes.md``; this module is the same thing as code, so tests and the
harness adapters' tests cannot drift from what was verified. Every recipe isolates all CLI
state under ``home`` and turns off startup traffic and retries, so a run touches nothing but
the fake on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tests.fakes.require import require_binary

Argv = list[str]
Env = dict[str, str]


@dataclass(frozen=True)
class CliRun:
    returncode: int
    stdout: str
    stderr: str

    @property
    def events(self) -> list[dict[str, Any]]:
        """The JSON objects among stdout's lines (all four CLIs emit JSONL in these recipes)."""
        found = []
        for line in self.stdout.splitlines():
            with contextlib.suppress(ValueError):
                value = json.loads(line)
                if isinstance(value, dict):
                    found.append(value)
        return found


def base_env(home: Path) -> Env:
    """A minimal environment: nothing from the developer's shell leaks into the CLI."""
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
    }


# The timeout is ours, not the caller's asyncio.timeout: on expiry the whole process group must
# be killed and reaped, which a cancellation from outside would skip.
async def run_cli(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Env,
    timeout: float = 120,
) -> CliRun:
    """Run to completion with stdin=/dev/null in its own process group; kill the group on
    timeout (signalling only the wrapper PID leaves gemini and copilot children running)."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        async with asyncio.timeout(timeout):
            out, err = await proc.communicate()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.communicate()
        raise
    return CliRun(proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace"))


def claude(url: str, home: Path, prompt: str) -> tuple[Argv, Env]:
    env = base_env(home) | {
        "CLAUDE_CONFIG_DIR": str(home / "claude-config"),
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-fake",
        # Zero DNS lookups and no extra title-generation request (see harness-clis.md).
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        # An Error step would otherwise be retried 10 times over ~3 minutes.
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }
    argv = [require_binary("claude"), "-p", prompt, "--output-format", "stream-json", "--verbose"]
    return [*argv, "--permission-mode", "acceptEdits"], env


def gemini(
    url: str, home: Path, prompt: str, model: str | None = "gemini-2.5-flash"
) -> tuple[Argv, Env]:
    """``model=None`` leaves the CLI on "auto": it then first makes a router classifier call
    (non-stream, JSON schema), which the fake answers without consuming a step."""
    gemini_home = home / "gemini-home"
    settings = {
        # Without this, GOOGLE_GEMINI_BASE_URL alone selects auth "gateway": exit 41.
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "general": {
            "enableAutoUpdate": False,
            "enableAutoUpdateNotification": False,
            "maxAttempts": 1,  # with -m: an Error step fails at once instead of ~5 min
        },
    }
    (gemini_home / ".gemini").mkdir(parents=True, exist_ok=True)
    (gemini_home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    env = base_env(home) | {
        "GEMINI_CLI_HOME": str(gemini_home),
        "GOOGLE_GEMINI_BASE_URL": url,
        "GEMINI_API_KEY": "fake",
        # One process instead of wrapper + relaunched child, so signals reach the CLI.
        "GEMINI_CLI_NO_RELAUNCH": "true",
        "TMPDIR": str(_dir(home / "tmp")),  # error reports are written to os.tmpdir()
    }
    argv = [require_binary("gemini"), "-p", prompt, "--output-format", "stream-json"]
    argv += ["--approval-mode", "auto_edit", "--skip-trust"]
    return ([*argv, "-m", model] if model else argv), env


def codex(url: str, home: Path, prompt: str, model: str = "gpt-5.5") -> tuple[Argv, Env]:
    codex_home = _dir(home / "codex-home")
    (codex_home / "config.toml").write_text(
        f"""model = "{model}"
model_provider = "fake"
check_for_update_on_startup = false

[analytics]
enabled = false

[features]
plugins = false

[model_providers.fake]
name = "Fake"
base_url = "{url}/v1"
env_key = "FAKE_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
"""
    )
    env = base_env(home) | {
        "CODEX_HOME": str(codex_home),
        "FAKE_API_KEY": "sk-fake",
        "TMPDIR": str(_dir(home / "tmp")),
    }
    argv = [require_binary("codex"), "exec", "--json", "--skip-git-repo-check"]
    return [*argv, "--sandbox", "workspace-write", prompt], env


CopilotWire = Literal["chat", "responses", "anthropic"]


def copilot(
    url: str, home: Path, prompt: str, wire: CopilotWire = "chat", model: str | None = None
) -> tuple[Argv, Env]:
    env = base_env(home) | {
        "COPILOT_HOME": str(home / "copilot-home"),
        "COPILOT_OFFLINE": "true",  # BYOK, no GitHub auth, zero lookups
        "COPILOT_PROVIDER_API_KEY": "sk-fake",
        # The native binary unpacks ~235 MB on first run; share the unpacked copy.
        "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache")),
    }
    if wire == "anthropic":
        env |= {
            "COPILOT_PROVIDER_TYPE": "anthropic",
            "COPILOT_PROVIDER_BASE_URL": url,
            "COPILOT_MODEL": model or "claude-sonnet-4.5",
        }
    else:
        env |= {"COPILOT_PROVIDER_BASE_URL": f"{url}/v1", "COPILOT_MODEL": model or "gpt-5.4"}
        if wire == "responses":
            env["COPILOT_PROVIDER_WIRE_API"] = "responses"
    argv = [require_binary("copilot"), "-p", prompt, "--output-format", "json"]
    return [*argv, "--allow-all-tools"], env


def _dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


Cli = Literal["claude", "gemini", "codex", "copilot"]


def succeeded(cli: Cli, run: CliRun) -> bool:
    """Did the run end well by its own final event? The exit code alone lies: permission
    denials exit 0 everywhere, and gemini's error exit code is the HTTP status mod 256."""
    events = run.events
    last = events[-1] if events else {}
    if cli == "claude":
        return last.get("type") == "result" and last.get("is_error") is False
    if cli == "gemini":
        return last.get("type") == "result" and last.get("status") == "success"
    if cli == "codex":
        kinds = {e.get("type") for e in events}
        return "turn.completed" in kinds and "turn.failed" not in kinds
    # A cancelled copilot still ends with result.exitCode 0; only an "abort" event tells.
    aborted = any(e.get("type") in ("abort", "session.error") for e in events)
    return last.get("type") == "result" and last.get("exitCode") == 0 and not aborted


def final_text(cli: Cli, run: CliRun) -> str:
    """The assistant's last answer as each CLI reports it."""
    events = run.events
    if cli == "claude":
        return next((str(e.get("result")) for e in events if e.get("type") == "result"), "")
    if cli == "gemini":
        # Assistant text arrives as deltas after the last tool result.
        text = ""
        for e in events:
            if e.get("type") == "tool_result":
                text = ""
            elif e.get("type") == "message" and e.get("role") == "assistant":
                text += str(e.get("content", ""))
        return text
    if cli == "codex":
        messages = [e["item"] for e in events if e.get("type") == "item.completed"]
        texts = [str(m.get("text", "")) for m in messages if m.get("type") == "agent_message"]
        return texts[-1] if texts else ""
    answers = [e["data"] for e in events if e.get("type") == "assistant.message"]
    return str(answers[-1].get("content", "")) if answers else ""
