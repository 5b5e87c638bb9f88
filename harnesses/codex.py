"""OpenAI Codex CLI (``@openai/codex``), headless: ``codex app-server`` when the run is
steered, else ``codex exec --json``.

Steered (``req.steer``: a kennel that passes stdin on), codex runs as its app server
(JSON-RPC over stdio) under harnesses/codex_driver.py, copied into the run's state folder
and run by the kennel's python3: the owner's messages mid-run become ``turn/steer`` (a
model request whose stream is open is dropped; the next carries the text), one that
comes when no turn runs a turn of its own (``turn/start``). Its notifications
(``item/completed``, ``thread/tokenUsage/updated``, ``turn/completed``) are read here as
exec's events are. Approval policy "never" and the
same sandbox mode as exec: the kennel is the sandbox. A kennel that takes no stdin
(Docker over TLS) runs ``codex exec`` as before.

Facts this relies on (``shared/facts/harness-clis.md`` §4): only a custom
``[model_providers.X]`` entry reaches a non-default endpoint without WebSocket detours;
the wire is the Responses API; and a patch refused by the sandbox appears **only on
stderr** (``ERROR codex_core::tools::router: error=patch rejected: …``), while the turn
still completes. So stderr is folded into stdout and the parser watches for that line.

Signed in with ChatGPT (kennel/relay_signin.py), codex runs as if signed in itself: its
``chatgpt_base_url`` and a provider with ``requires_openai_auth`` point at the relay, and
its auth.json is a stand-in: the access token is the run's secret, the refresh token a
fixed word, the id token a JWT Fetch writes with only the account and plan codex reads
(unsigned: codex does not check it). Nothing in it is the owner's secret. Measured with
codex 0.169.0: before a turn it asks ``wham/accounts/check`` (the relay forwards it), and
it never refreshes a token whose ``last_refresh`` is recent; if it does try, its token
endpoint is the relay too (which refuses it), never the vendor.
"""

from __future__ import annotations

import base64
import json
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harnesses.base import Harness, HarnessEvent, HarnessRequest, usage_event
from harnesses.instructions import write_user_instructions
from harnesses.runstate import RunState

DEFAULT_MODEL = "gpt-5.5"  # a slug codex knows: an unknown one gets no apply_patch tool
# The variable env_key names: one codex gives no other meaning (it holds the placeholder).
KEY_ENV = "FETCH_RELAY_KEY"
# The stand-in's refresh token: a word, so that nothing in the kennel is worth stealing.
PLACEHOLDER_REFRESH = "fetch-placeholder-refresh-token"
SIGNIN_PREFIX = "/backend-api"  # as kennel/relay.py takes it off
DRIVER = "codex_driver.py"  # in the run's state folder
DRIVER_SOURCE = Path(__file__).with_name("codex_driver.py")
NO_PYTHON = "'Error: codex takes messages mid-run through python3, which this kennel lacks'"
# The app server colours its log even into a pipe; exec did not.
ANSI = re.compile(r"\x1b\[[0-9;]*m")
REJECTED = re.compile(r"error=((?:patch|exec command) rejected.*)")


@dataclass
class _Run:
    session_id: str = ""
    answer: str = ""
    denials: list[str] = field(default_factory=list)
    # The app server counts tokens for the whole thread: a turn's are the difference.
    tokens: tuple[int, int] = (0, 0)
    counted: tuple[int, int] = (0, 0)


# See harnesses/runstate.py: a denial seen mid-stream must survive until the verdict.
_run = RunState("codex_run", _Run).get


def config_toml(req: HarnessRequest) -> str:
    if not req.model_url:
        raise ValueError("codex reaches its model only through the relay: no model_url")
    retries = req.max_retries
    # Fetch's memory over the relay's socket (streamable HTTP, as `codex mcp add --url`
    # writes it); "approve": exec mode has no one to ask. The relay serves /mcp only with
    # the run's secret, the CLI's key: codex sends it as the bearer from the variable.
    memory = "".join(
        f"\n[mcp_servers.{_toml_key(m.name)}]\nurl = {_toml_str(m.url)}\n"
        f'bearer_token_env_var = "{KEY_ENV}"\n'
        'default_tools_approval_mode = "approve"\n'
        for m in req.mcp_servers
    )
    # The relay appends the request path to the vendor base (…/v1), so the CLI must ask
    # for "/responses", not "/v1/responses": base_url is the relay itself. Signed in, the
    # provider is ChatGPT's codex backend and the key comes from auth.json (a stand-in).
    if req.signin_account:
        backend = req.model_url.rstrip("/") + SIGNIN_PREFIX
        top = f"chatgpt_base_url = {_toml_str(backend + '/')}\n"
        top += 'cli_auth_credentials_store = "file"\n'
        # ChatGPT's apps (its ps/mcp server) run tools on the owner's account: off.
        features = "apps = false\n"
        provider = f"base_url = {_toml_str(backend + '/codex')}\nrequires_openai_auth = true"
    else:
        top = features = ""
        provider = f'base_url = {_toml_str(req.model_url)}\nenv_key = "{KEY_ENV}"'
    return f"""\
model = {_toml_str(req.model or DEFAULT_MODEL)}
model_provider = "fetch"
check_for_update_on_startup = false
{top}
[analytics]
enabled = false

[features]
plugins = false  # with analytics off: no lookups at all at startup
{features}
[sandbox_workspace_write]
exclude_slash_tmp = true  # writable: the workspace and $TMPDIR (our state dir) only
network_access = false

[model_providers.fetch]
name = "Fetch relay"
{provider}
wire_api = "responses"
request_max_retries = {retries}
stream_max_retries = {retries}
{memory}"""


def placeholder_auth(req: HarnessRequest, now: float | None = None) -> dict[str, Any]:
    """The auth.json a signed-in codex gets in the kennel: the run's secret as its access
    token, and an id token naming the account and plan (what codex reads of it)."""
    when = time.time() if now is None else now
    auth: dict[str, str] = {"chatgpt_account_id": req.signin_account}
    if req.signin_plan:
        auth["chatgpt_plan_type"] = req.signin_plan
    payload = {"https://api.openai.com/auth": auth, "iat": int(when), "exp": int(when) + 86400}
    id_token = ".".join(
        (_b64({"alg": "none", "typ": "JWT"}), _b64(payload), "ZmV0Y2gtcGxhY2Vob2xkZXI")
    )
    return {
        "OPENAI_API_KEY": None,
        "tokens": {
            "id_token": id_token,
            "access_token": req.placeholder_key,
            "refresh_token": PLACEHOLDER_REFRESH,
            "account_id": req.signin_account,
        },
        # Now: codex refreshes a token only when it is old (or refused by the relay).
        "last_refresh": datetime.fromtimestamp(when, UTC).isoformat().replace("+00:00", "Z"),
    }


def _b64(data: dict[str, Any]) -> str:
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _toml_key(name: str) -> str:
    """A table name: the bare key (a-z, 0-9, - and _) or a quoted one."""
    return name if name.replace("-", "").replace("_", "").isalnum() else _toml_str(name)


def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


class Codex(Harness, name="codex"):
    provider = "openai"
    binary = "codex"
    summary = "OpenAI Codex CLI (Responses API)"
    # The slugs codex 0.169.0 lists (`codex debug models`, visibility "list"): one it
    # does not know gets no apply_patch tool, so its edits silently never happen.
    models = (
        DEFAULT_MODEL,
        "gpt-5.6-sol",
        "gpt-5.6-terra",
        "gpt-5.6-luna",
        "gpt-6-sol",
        "gpt-6-luna",
        "gpt-6-astra",
        "gpt-6.1-sol",
        "gpt-6.1-terra",
    )
    # Through its app server (harnesses/codex_driver.py): turn/steer, measured with 0.169.0.
    steerable = True

    def input_line(self, text: str) -> bytes:
        return (json.dumps({"text": text}) + "\n").encode()

    def prepare(self, req: HarnessRequest, host_state_dir: Path) -> None:
        home = host_state_dir / "codex"
        for folder in (home, host_state_dir / "home", host_state_dir / "tmp"):
            folder.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(config_toml(req))
        if req.signin_account:
            (home / "auth.json").write_text(json.dumps(placeholder_auth(req)))
            (home / "auth.json").chmod(0o600)
        write_user_instructions(req, host_state_dir, "codex")  # $CODEX_HOME/AGENTS.md
        if req.steer:
            (host_state_dir / DRIVER).write_text(DRIVER_SOURCE.read_text())

    def command(self, req: HarnessRequest) -> tuple[list[str], dict[str, str]]:
        # --sandbox must come before "resume"; exec's approval policy is always "never".
        # In the Docker kennel codex's own sandbox (bubblewrap/landlock) cannot start and
        # every write fails; there the container is the sandbox (only /workspace writable).
        mode = "danger-full-access" if req.confined else "workspace-write"
        # The owner's screenshots go with the first prompt as images (read by codex on
        # the host side of its own sandbox); the prompt names every attachment anyway.
        images = [] if req.resume else [str(p) for p in req.attached_images]
        if req.steer:
            # The app server under the driver; the prompt is the first line on stdin.
            options = {
                "codex": self.binary,
                "sandbox": mode,
                "resume": req.resume or "",
                "images": images,
            }
            driver = str(req.state_dir / DRIVER)
            cli = ["python3", "-I", driver, json.dumps(options)]
            # A kennel without python3 is said in one line (plain() takes "Error…").
            check = "command -v python3 >/dev/null || { echo " + NO_PYTHON + "; exit 127; }; "
        else:
            flags = ["--json", "--skip-git-repo-check", "--sandbox", mode]
            tail = ["resume", req.resume] if req.resume else []
            shown = [f"--image={p}" for p in images]
            cli = [self.binary, "exec", *flags, *shown, *tail, "--", req.prompt]
            check = ""
        # exec (not a child): the shell is replaced, the pid and process group stay.
        argv = ["/bin/sh", "-c", check + 'exec "$@" 2>&1', "sh", *cli]
        env = {
            "PATH": req.path_env,
            "HOME": str(req.state_dir / "home"),
            "CODEX_HOME": str(req.state_dir / "codex"),
            # Not under /tmp, or codex refuses to make its sandbox helper links and every
            # sandboxed shell command fails (kennel/README.md).
            "TMPDIR": str(req.state_dir / "tmp"),
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            KEY_ENV: req.placeholder_key,
        }
        if req.signin_account and req.model_url:
            # Should codex try to refresh the stand-in itself, it asks the relay (which
            # refuses it), never the vendor's token endpoint.
            base = req.model_url.rstrip("/") + SIGNIN_PREFIX
            env["CODEX_REFRESH_TOKEN_URL_OVERRIDE"] = f"{base}/oauth/token"
        return argv, env

    def event(self, obj: dict[str, Any]) -> list[HarnessEvent]:
        if "method" in obj or "fetch" in obj:
            return self._served(obj)
        kind = obj.get("type")
        if kind == "thread.started":
            run = _run(fresh=True)
            run.session_id = str(obj.get("thread_id", ""))
            return [HarnessEvent("session", data={"session_id": run.session_id})]
        run = _run()
        if kind == "item.completed":
            return self._item(obj.get("item") or {}, run)
        session = {"session_id": run.session_id}
        if kind == "turn.completed":
            events = [usage_event(obj.get("usage"))]
            if run.denials:
                text = "Codex was denied: " + "; ".join(run.denials)[:400]
                return [*events, HarnessEvent("error", text, session)]
            return [*events, HarnessEvent("done", run.answer, session)]
        if kind == "turn.failed":
            error = obj.get("error") or {}
            return [HarnessEvent("error", str(error.get("message") or "turn failed"), session)]
        if kind == "error":  # also retry notices; a later turn.completed outranks them
            return [HarnessEvent("error", str(obj.get("message") or "error"), session)]
        return []

    def _served(self, obj: dict[str, Any]) -> list[HarnessEvent]:
        """A line of the app server's (a notification) or of its driver's (``fetch``)."""
        own = obj.get("fetch")
        if own == "thread":
            run = _run(fresh=True)
            run.session_id = str(obj.get("threadId", ""))
            return [HarnessEvent("session", data={"session_id": run.session_id})]
        run = _run()
        session = {"session_id": run.session_id}
        if own == "input":
            return [HarnessEvent("input")]
        if own == "error":
            return [HarnessEvent("error", str(obj.get("message") or "codex refused"), session)]
        method = obj.get("method")
        params = obj.get("params") or {}
        if method == "turn/started":
            run.answer = ""
        elif method == "item/completed":
            return self._item(_exec_item(params.get("item") or {}), run)
        elif method == "thread/tokenUsage/updated":
            total = (params.get("tokenUsage") or {}).get("total") or {}
            run.tokens = (int(total.get("inputTokens") or 0), int(total.get("outputTokens") or 0))
        elif method == "turn/completed":
            turn = params.get("turn") or {}
            spent = (run.tokens[0] - run.counted[0], run.tokens[1] - run.counted[1])
            run.counted = run.tokens
            events = [usage_event({"input_tokens": spent[0], "output_tokens": spent[1]})]
            if turn.get("status") == "completed":
                if run.denials:
                    text = "Codex was denied: " + "; ".join(run.denials)[:400]
                    return [*events, HarnessEvent("error", text, session)]
                return [*events, HarnessEvent("done", run.answer, session)]
            error = turn.get("error") or {}
            why = str(error.get("message") or f"turn {turn.get('status') or 'failed'}")
            return [*events, HarnessEvent("error", why, session)]
        return []

    @staticmethod
    def _item(item: dict[str, Any], run: _Run) -> list[HarnessEvent]:
        kind = item.get("type")
        if kind == "agent_message":
            run.answer = str(item.get("text") or "")
            return [HarnessEvent("text", run.answer)] if run.answer else []
        if kind == "file_change" and item.get("status") == "failed":
            paths = ", ".join(
                str(c.get("path", "?")) for c in item.get("changes") or [] if isinstance(c, dict)
            )
            run.denials.append(f"could not write {paths or 'a file'}")
            return []
        if kind == "file_change" and item.get("status") == "completed":
            changes = [c for c in item.get("changes") or [] if isinstance(c, dict)]
            return [
                HarnessEvent("tool_use", "apply_patch", {"input": changes}),
                *(HarnessEvent("file_change", str(c.get("path", ""))) for c in changes),
            ]
        if kind == "command_execution":
            return [
                HarnessEvent(
                    "tool_use",
                    "shell",
                    {
                        "input": {"command": item.get("command", "")},
                        "exit_code": item.get("exit_code"),
                    },
                )
            ]
        if kind in {"mcp_tool_call", "web_search"}:
            return [HarnessEvent("tool_use", str(item.get("tool") or kind), {"input": item})]
        return []

    def plain(self, line: str) -> list[HarnessEvent]:
        """A stderr line (folded into stdout): only a sandbox rejection matters."""
        line = ANSI.sub("", line)
        found = REJECTED.search(line)
        if found is not None:
            _run().denials.append(found.group(1).strip())
        elif line.startswith("Error") or "panicked at" in line:
            # Fatal (e.g. "Error loading config.toml: …"): said here, as stderr is folded
            # in and so no longer reaches the runner's "ended without a result" report.
            return [HarnessEvent("error", line.strip()[:500])]
        return []


# The app server's items (camelCase) in exec's shape, so one reader serves both.
_ITEM_KINDS = {
    "agentMessage": "agent_message",
    "fileChange": "file_change",
    "commandExecution": "command_execution",
    "mcpToolCall": "mcp_tool_call",
    "webSearch": "web_search",
}


def _exec_item(item: dict[str, Any]) -> dict[str, Any]:
    status = str(item.get("status") or "")
    return {
        **item,
        "type": _ITEM_KINDS.get(str(item.get("type")), item.get("type")),
        # A declined patch is refused like a failed one (the policy never asks).
        "status": {"declined": "failed", "inProgress": "in_progress"}.get(status, status),
        "exit_code": item.get("exitCode"),
    }
