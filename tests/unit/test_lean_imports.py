"""Nothing heavy is imported before it is needed (issue 26): ``fetch --help`` imports no
third-party package at all, and what a start imports before it runs (the app and the
settings) leaves out what only a configured feature or a finished task needs: the model
SDK, Docker's client, the MCP server, WhatsApp, the blob writer, the phone number tables.

Each check is a fresh interpreter (a subprocess): the only honest view of sys.modules.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Third-party packages Fetch uses somewhere; none belongs in `fetch --help`.
THIRD_PARTY = (
    "openai",
    "httpx",
    "httpx2",
    "aiohttp",
    "docker",
    "requests",
    "mcp",
    "anyio",
    "starlette",
    "uvicorn",
    "rich",
    "git",
    "gitdb",
    "transitions",
    "yaml",
    "neonize",
    "jinja2",
    "pydantic",
    "aiosqlite",
    "phonenumbers",
    "numpy",
    "sqlite_vec",
    "croniter",
    "frontmatter",
)
# Needed only once a feature is used (a model configured, Docker chosen, a task run, a
# WhatsApp number set, a page opened), never to import the app and read its settings.
NOT_BEFORE_START = (
    "openai",
    "httpx",
    "httpx2",
    "docker",
    "requests",
    "mcp",
    "starlette",
    "uvicorn",
    "rich",
    "git",
    "gitdb",
    "neonize",
    "phonenumbers",
    "numpy",
    "sqlite_vec",
    "jinja2",
    "segno",
)


def _modules(code: str, tmp_path: Path) -> list[str]:
    """The top-level packages in sys.modules after ``code``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FETCH_")}
    env.update(
        PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
        FETCH_HOME=str(tmp_path / "home"),
        FETCH_WORKSPACE=str(tmp_path),
    )
    script = (
        "import sys, json\n"
        + code
        + "\nprint(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    names: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return names


def test_help_imports_no_third_party_package(tmp_path: Path) -> None:
    loaded = _modules(
        "sys.argv = ['fetch', '--help']\n"
        "from orchestrator.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass",
        tmp_path,
    )
    assert [m for m in THIRD_PARTY if m in loaded] == []


def test_the_app_and_its_settings_import_nothing_only_a_feature_needs(tmp_path: Path) -> None:
    loaded = _modules(
        "from orchestrator.config import load_settings\nimport orchestrator.app\nload_settings()",
        tmp_path,
    )
    assert [m for m in NOT_BEFORE_START if m in loaded] == []


def test_a_whatsapp_number_still_loads_the_phone_tables_and_is_checked(tmp_path: Path) -> None:
    """The lazy import of phonenumbers still validates: a good number is normalised, a
    bad one refused with its reason."""
    from channels.phone import normalise_number

    assert normalise_number("+49 170 1234567") == "491701234567"
    try:
        normalise_number("+999 1")
    except ValueError as err:
        assert "calling code" in str(err) or "too short" in str(err)
    else:
        raise AssertionError("an impossible number was accepted")


LATE_PROBE = """
import asyncio, json, sys, threading

LATE = []
ARMED = [False]
MCP_STACK = ("mcp", "starlette", "uvicorn", "sse_starlette", "rich")


class Spy:
    def find_spec(self, name, path=None, target=None):
        if ARMED[0] and threading.current_thread() is threading.main_thread():
            LATE.append(name)
        return None


sys.meta_path.insert(0, Spy())
import aiohttp

from bench._common import fresh_dirs, model_env
from channels.terminal import TerminalChannel
from orchestrator.app import build_app
from orchestrator.config import load_settings
from tests.fakes.model_server import ScriptedModelServer, Text


async def main():
    async with ScriptedModelServer(default=Text("hello back")) as model:
        with fresh_dirs("late") as (home, workspace):
            env = {
                **model_env(home, workspace, model.url),
                "FETCH__HTTP__PORT": "0",
            }
            settings = load_settings(None, env)
            terminal = TerminalChannel(settings.terminal.chat)
            async with build_app(settings, terminal=terminal) as app:
                ARMED[0] = True
                for text in ("Say hello", "/status", "and say hello again"):
                    await terminal.submit(text)
                    await asyncio.wait_for(terminal.outbox.get(), 30)
                # A dashboard page, logged in as the owner's browser would be.
                base = f"http://127.0.0.1:{app.http.port}"
                jar = aiohttp.CookieJar(unsafe=True)
                async with aiohttp.ClientSession(cookie_jar=jar) as browser:
                    async with browser.get(app.web_auth.login_url(base)) as answer:
                        await answer.read()
                    async with browser.get(base + "/sessions") as answer:
                        page = (answer.status, "Sessions" in await answer.text())
                await asyncio.sleep(0.5)
                ARMED[0] = False
                memory_on = app.services.memory.enabled
                stack = sorted({m.split(".")[0] for m in sys.modules} & set(MCP_STACK))
    print(json.dumps({"late": sorted(set(LATE)), "page": page, "memory": memory_on,
                      "mcp_stack": stack}))


asyncio.run(main())
"""


def test_after_start_model_messages_import_nothing_on_the_loop(tmp_path: Path) -> None:
    """The web listener, the terminal, memory and a configured model, started as ``fetch``
    starts them: then two model messages, /status and a dashboard page import no module on
    the event loop's thread, and memory's MCP stack is not imported at all without a task
    (the model SDK used to be imported there by the first message; the pages' jinja2 is
    imported by a thread once Fetch is up)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FETCH_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run(
        [sys.executable, "-c", LATE_PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["page"] == [200, True]
    assert result["late"] == []
    # Memory is on, yet its MCP server (mcp, starlette, uvicorn, rich: ~0.5 s of CPU and
    # ~40 MiB) is not there: only a task that can use it starts it (Memory.mcp_ready).
    assert result["memory"] is True
    assert result["mcp_stack"] == []
