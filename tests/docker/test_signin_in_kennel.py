"""Each CLI's sign-in in the real kennel image (issue 24, 1), as on bubblewrap
(tests/harnesses/test_*signin*.py): codex with a ChatGPT sign-in, Gemini CLI with a Google
sign-in, Copilot CLI with a GitHub token. The edit reaches the approval step; the backend
of the test's own saw only the owner's real credential, sent by the relay; the container
held the run's secret only."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from aiohttp import web

from kennel.credentials import path_for, save_chatgpt, save_github
from kennel.relay_signin_google import save_google
from orchestrator.config import Settings
from tests.conftest import start_driver
from tests.fakes.model_server import EditFile, ScriptedModelServer, Text
from tests.harnesses import test_codex_signin as chatgpt
from tests.harnesses import test_copilot_signin as github
from tests.harnesses import test_gemini_signin as google


async def _serve(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    port = next(a[1] for a in runner.addresses if isinstance(a, tuple))
    return runner, f"http://127.0.0.1:{port}"


@pytest.fixture(params=["codex", "copilot", "gemini-cli"])
async def signed_in(
    request: pytest.FixtureRequest,
    kennel_image: str,
    model: ScriptedModelServer,
    tmp_path: Path,
) -> AsyncIterator[tuple[str, Callable[[], list[str]], dict[str, str]]]:
    """(harness, the bearers the backend saw, settings env) with the sign-in kept."""
    name: str = request.param
    home = tmp_path / "home"
    app = web.Application()
    if name == "codex":
        token = chatgpt.access(1, 3600)
        save_chatgpt(home, chatgpt.auth_json(token, "real-refresh-docker-1"))
        vendor = chatgpt.Vendor(model, valid={token})
        app.router.add_route("*", "/backend-api/{tail:.*}", vendor.backend)
        runner, url = await _serve(app)
        env = {
            "FETCH__PROVIDERS__OPENAI__SIGNIN_BASE_URL": f"{url}/backend-api",
            "FETCH__PROVIDERS__OPENAI__TOKEN_URL": f"{url}/oauth/token",
        }

        def seen() -> list[str]:
            assert not vendor.bad, vendor.bad
            return [h["authorization"] for _, p, h in vendor.seen if p.endswith("/responses")]

        want = f"Bearer {token}"
    elif name == "gemini-cli":
        token = "ya29.real-access-docker-7"
        save_google(path_for(home, "gemini"), google.creds(token, "1//real-refresh-d", 3600))
        assist = google.CodeAssist(model, valid={token})
        app.router.add_route("*", "/{tail:v1internal:.*}", assist.backend)
        runner, url = await _serve(app)
        env = {
            "FETCH__PROVIDERS__GEMINI__SIGNIN_BASE_URL": url,
            "FETCH__PROVIDERS__GEMINI__TOKEN_URL": f"{url}/token",
        }

        def seen() -> list[str]:
            assert not assist.bad, assist.bad
            return [h["authorization"] for p, h in assist.seen if p.endswith("GenerateContent")]

        want = f"Bearer {token}"
    else:
        save_github(home, github.TOKEN)
        api = github.CopilotApi(model)
        app.router.add_route("*", "/{tail:.*}", api.handle)
        runner, url = await _serve(app)
        env = {"FETCH__PROVIDERS__GITHUB__BASE_URL": url}

        def seen() -> list[str]:
            return [h.get("authorization", "") for _, p, h in api.seen if p == "/responses"]

        want = f"Bearer {github.TOKEN}"
    try:
        yield name, seen, {**env, "WANT": want}
    finally:
        await runner.cleanup()


async def test_each_sign_in_edits_in_the_kennel(
    signed_in: tuple[str, Callable[[], list[str]], dict[str, str]],
    model: ScriptedModelServer,
    make_settings: Callable[..., Settings],
) -> None:
    name, seen, env = signed_in
    want = env.pop("WANT")
    settings = make_settings(FETCH_KENNEL="docker", FETCH_HARNESS=name, **env)
    app, fetch = await start_driver(settings)
    try:
        model.script(
            EditFile("README.md", "Teh quick brown fox.", "The quick brown fox."),
            Text("Fixed the typo."),
        )
        started = time.monotonic()
        diff = await fetch.ask("fix the typo in README.md of demo", "Apply?", 240)
        assert "+The quick" in diff, (name, time.monotonic() - started)
        bearers = seen()
        assert bearers and set(bearers) == {want}, bearers
        await fetch.ask("no", "Discarded")
    finally:
        await app.__aexit__(None, None, None)
