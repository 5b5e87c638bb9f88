"""The openai SDK is imported in a thread of its own, never on the event loop
(orchestrator/providers/sdk.py): a model call that comes before it is ready waits for
it without blocking the loop, and the app starts the import when a model is configured.

Each check runs in a fresh interpreter (a subprocess), the only place where the SDK is
not imported yet; the real chain talks to a real scripted model server on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Records, for every module whose import starts, the thread that started it; and how
# long the loop went without running a 5 ms ticker while the SDK was being imported.
PROBE = """
import asyncio, json, sys, threading, time

FIRST = {}

class Spy:
    def find_spec(self, name, path=None, target=None):
        FIRST.setdefault(name, threading.current_thread().name)
        return None

sys.meta_path.insert(0, Spy())

async def ticker(gaps):
    last = time.perf_counter()
    while True:
        await asyncio.sleep(0.005)
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
"""


def _run(body: str, tmp_path: Path) -> dict[str, object]:
    script = PROBE + textwrap.dedent(body)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FETCH_")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_model_call_imports_the_sdk_off_the_loop(tmp_path: Path) -> None:
    result = _run(
        """
        from orchestrator.config import ModelSettings
        from orchestrator.providers.chain import ProviderChain
        from orchestrator.providers.settings import ProviderEntry
        from tests.fakes.model_server import ScriptedModelServer, Text

        async def main():
            assert "openai" not in sys.modules, "imported before any call"
            gaps = []
            async with ScriptedModelServer() as srv:
                srv.script(Text("hi from the model"))
                entry = ProviderEntry(name="one", base_url=srv.url + "/v1")
                chain = ProviderChain(ModelSettings(name="m", providers=(entry,)))
                tick = asyncio.create_task(ticker(gaps))
                try:
                    response, attempt = await chain.complete([{"role": "user", "content": "hi"}])
                finally:
                    tick.cancel()
                    await chain.close()
            print(json.dumps({
                "thread": FIRST.get("openai"),
                "text": response.choices[0].message.content,
                "status": attempt.status,
                "sent": srv.model_requests[0].raw.decode(),
                "max_gap": max(gaps),
            }))

        asyncio.run(main())
        """,
        tmp_path,
    )
    assert result["thread"] == "import:openai"  # not MainThread: the loop's
    assert result["text"] == "hi from the model" and result["status"] == 200
    sent = json.loads(str(result["sent"]))
    # The same request create() sent: the model, the messages, nothing else added.
    assert sent == {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    # The loop kept turning while the SDK (0.3-0.8 s of CPU) was imported beside it.
    assert float(str(result["max_gap"])) < 0.25


def test_a_started_app_with_a_model_has_begun_the_import_off_the_loop(tmp_path: Path) -> None:
    result = _run(
        """
        from bench._common import fresh_dirs, model_env
        from channels.terminal import TerminalChannel
        from orchestrator.app import build_app
        from orchestrator.config import load_settings
        from orchestrator.providers import sdk

        async def main():
            with fresh_dirs("sdk") as (home, workspace):
                env = model_env(home, workspace, "http://127.0.0.1:9")
                settings = load_settings(None, env)
                terminal = TerminalChannel(settings.terminal.chat)
                async with build_app(settings, channels=[terminal]) as app:
                    started = sdk.importer() is not None
                    await sdk.ready()
                    chain = app.services.planner.chain
                    for _ in range(200):  # the clients are built in that thread too
                        if chain.endpoints[0].clients:
                            break
                        await asyncio.sleep(0.01)
                    built = bool(chain.endpoints[0].clients)
            print(json.dumps({"started": started, "thread": FIRST.get("openai"), "built": built}))

        asyncio.run(main())
        """,
        tmp_path,
    )
    assert result == {"started": True, "thread": "import:openai", "built": True}


def test_without_a_model_the_app_never_imports_the_sdk(tmp_path: Path) -> None:
    result = _run(
        """
        from bench._common import fresh_dirs
        from channels.terminal import TerminalChannel
        from orchestrator.app import build_app
        from orchestrator.config import load_settings

        async def main():
            with fresh_dirs("sdk") as (home, workspace):
                env = {"FETCH_HOME": str(home), "FETCH_WORKSPACE": str(workspace),
                       "FETCH_HARNESS": "demo"}
                settings = load_settings(None, env)
                terminal = TerminalChannel(settings.terminal.chat)
                async with build_app(settings, channels=[terminal]):
                    await asyncio.sleep(0.2)
                    loaded = "openai" in sys.modules
            print(json.dumps({"loaded": loaded}))

        asyncio.run(main())
        """,
        tmp_path,
    )
    assert result == {"loaded": False}
