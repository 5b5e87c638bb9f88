"""A Claude subscription instead of an API key (issue 24, 1): `fetch login claude-code`
keeps the token on the host (0600); the real Claude Code in the bwrap kennel holds only
the run's secret (as CLAUDE_CODE_OAUTH_TOKEN) and the relay sends the vendor the real
token as a bearer with the OAuth flag, never an x-api-key; a 401 (a revoked token) ends
the task with one line. The scripted vendor checks each request's credential shape."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, start_driver
from tests.fakes.model_server import EditFile, ScriptedModelServer, Text
from tests.fakes.require import require_binary

pytestmark = pytest.mark.real
TOKEN = "sk-ant-oat01-subscription-token-of-the-test-7f3a"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


def _login(home: Path, token: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "FETCH_HOME": str(home),
        "HOME": str(home),
    }
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "login", "claude-code"],
        input=token + "\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )


@pytest.fixture
async def claude(
    model: ScriptedModelServer, make_settings: Callable[..., Settings], tmp_path: Path
) -> AsyncIterator[Driver]:
    require_binary("claude")
    home = tmp_path / "home"
    done = _login(home, TOKEN)
    assert done.returncode == 0, done.stderr
    assert "runs on your subscription" in done.stdout
    kept = home / "credentials" / "anthropic.json"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
    settings = make_settings(FETCH_HARNESS="claude-code", ANTHROPIC_BASE_URL=model.url)
    assert settings.providers["anthropic"].api_key is None
    app, driver = await start_driver(settings)
    try:
        yield driver
    finally:
        await app.__aexit__(None, None, None)


async def test_the_relay_sends_the_subscription_token_the_cli_never_has_it(
    claude: Driver, model: ScriptedModelServer, tmp_path: Path
) -> None:
    status = await claude.ask("/harness", "claude-code")
    assert "subscription token" in status and TOKEN not in status, status
    repo = claude.services.workspace.path("demo")
    model.script(EditFile(str(repo / "README.md"), "Teh quick", "The quick"), Text("Fixed."))
    card = await claude.ask("fix the typo in README.md of demo", "Apply? (yes/no)", 120)
    assert "+The quick" in card
    calls = [r for r in model.requests if r.path.startswith("/v1/messages")]
    assert calls
    for call in calls:
        assert call.headers.get("authorization") == f"Bearer {TOKEN}", call.headers
        assert "x-api-key" not in call.headers
        assert "oauth-2025-04-20" in call.headers.get("anthropic-beta", "").split(",")
    # The kennel had only the run's secret: the token is nowhere the CLI could write.
    for folder in (tmp_path / "home" / "runs", tmp_path / "home" / "kennel"):
        for path in folder.rglob("*") if folder.exists() else []:
            if path.is_file() and not path.is_symlink():
                assert TOKEN.encode() not in path.read_bytes(), path
    await claude.ask("no", "Discarded")


async def test_a_revoked_token_ends_the_task_in_one_line(
    claude: Driver, model: ScriptedModelServer
) -> None:
    from tests.fakes.steps import Error

    model.script(*[Error(401, "authentication_error")] * 8)
    failed = await claude.ask("fix the typo in README.md of demo", "failed", 120)
    assert "Traceback" not in failed and TOKEN not in failed, failed
    assert "ALERT" in await claude.ask("/status", "Fetch ·")


def test_a_bad_token_is_refused_and_nothing_is_kept(tmp_path: Path) -> None:
    done = _login(tmp_path / "home", "not a token")
    assert done.returncode == 2 and "not a token" in done.stderr, done.stderr
    assert not (tmp_path / "home" / "credentials" / "anthropic.json").exists()
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "login", "codex"],
        capture_output=True,
        text=True,
        env={"PATH": os.environ.get("PATH", ""), "FETCH_HOME": str(tmp_path / "home")},
        cwd=ROOT,
        timeout=60,
        input="",
    )
    # Nothing piped in: codex's sign-in (tests/harnesses/test_codex_signin.py) says why.
    assert done.returncode == 2 and "neither codex's auth.json" in done.stderr, done.stderr


def test_doctor_says_which_credential_and_what_cannot_sign_in(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert _login(home, TOKEN).returncode == 0
    env = {"PATH": os.environ.get("PATH", ""), "FETCH_HOME": str(home), "HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "doctor"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    out = done.stdout
    assert "claude-code: " in out and "subscription token configured" in out, out
    # fetch doctor leaves nothing mounted behind it (the Docker kennel's runs folder).
    with open("/proc/self/mountinfo", encoding="utf-8") as table:
        assert str(home) not in table.read()
    assert "not supported" not in out, out  # every CLI's sign-in rides the relay
    assert TOKEN not in out + done.stderr
