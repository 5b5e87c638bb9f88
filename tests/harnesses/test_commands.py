"""What the gemini-cli, codex and copilot adapters hand the kennel: argv, the complete
environment and the config files they write (the real CLIs run in
``tests/e2e/test_four_harnesses.py``)."""

from __future__ import annotations

import dataclasses
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from harnesses import builtin_harnesses
from harnesses.base import Harness, HarnessRequest
from harnesses.codex import Codex
from harnesses.copilot_cli import CopilotCli
from harnesses.gemini_cli import GeminiCli
from kennel.relay import PLACEHOLDER_KEY

URL = "http://127.0.0.1:4100"


def request(tmp_path: Path, **changes: Any) -> HarnessRequest:
    # A prompt starting with "-" must stay a prompt, not become a flag.
    base = HarnessRequest(
        prompt="-rf the typo",
        workdir=tmp_path / "ws",
        state_dir=tmp_path / "kennel" / "demo" / "x",
        model_url=URL,
        placeholder_key=PLACEHOLDER_KEY,
        path_env="/bin",
    )
    return dataclasses.replace(base, **changes)


def prepared(harness: Harness, req: HarnessRequest) -> tuple[list[str], dict[str, str]]:
    harness.prepare(req, req.state_dir)
    return harness.command(req)


def test_builtin_order_and_identity() -> None:
    found = [(h.name, h.provider, h.binary) for h in builtin_harnesses()]
    assert found[0][0] == "claude-code" and found[-1][0] == "demo"
    assert ("gemini-cli", "gemini", "gemini") in found
    assert ("codex", "openai", "codex") in found
    assert ("copilot", "openai", "copilot") in found


@pytest.mark.parametrize("harness", [GeminiCli(), Codex(), CopilotCli()], ids=lambda h: h.name)
def test_env_is_complete_isolated_and_holds_only_the_placeholder(
    harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "GEMINI_API_KEY", "SECRET_FROM_HOST"):
        monkeypatch.setenv(name, "sk-real-host-secret")
    req = request(tmp_path)
    argv, env = prepared(harness, req)
    assert "sk-real-host-secret" not in json.dumps([argv, env])
    assert PLACEHOLDER_KEY in env.values()
    assert env["PATH"] == "/bin"
    assert Path(env["HOME"]).is_relative_to(req.state_dir)
    assert Path(env["TMPDIR"]).is_relative_to(req.state_dir)
    assert Path(env["TMPDIR"]).is_dir()  # prepare made it
    assert "-rf the typo" in " ".join(argv)


def test_gemini(tmp_path: Path) -> None:
    req = request(tmp_path, max_retries=2)
    argv, env = prepared(GeminiCli(), req)
    assert argv[:2] == ["gemini", "--prompt=-rf the typo"]
    flags = " ".join(argv[2:])
    assert "--output-format stream-json" in flags
    assert "--approval-mode auto_edit --skip-trust" in flags and "yolo" not in flags
    assert "--model gemini-2.5-flash" in flags and "--resume" not in flags
    assert env["GOOGLE_GEMINI_BASE_URL"] == URL
    assert env["GEMINI_API_KEY"] == PLACEHOLDER_KEY
    assert env["GEMINI_CLI_NO_RELAUNCH"] == "true"
    home = Path(env["GEMINI_CLI_HOME"])
    assert home.is_relative_to(req.state_dir)
    settings = json.loads((home / ".gemini" / "settings.json").read_text())
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert settings["privacy"]["usageStatisticsEnabled"] is False
    assert settings["general"]["enableAutoUpdate"] is False
    assert settings["general"]["maxAttempts"] == 3

    argv, _ = prepared(
        GeminiCli(), request(tmp_path, model="gemini-9", resume="abc", max_retries=10)
    )
    assert argv[-4:] == ["--model", "gemini-9", "--resume", "abc"]
    settings = json.loads((home / ".gemini" / "settings.json").read_text())
    assert settings["general"]["maxAttempts"] == 10  # the CLI's ceiling


def test_codex(tmp_path: Path) -> None:
    req = request(tmp_path, max_retries=1)
    argv, env = prepared(Codex(), req)
    # stderr folded into stdout (sandbox rejections are only printed there), same pid.
    assert argv[:4] == ["/bin/sh", "-c", 'exec "$@" 2>&1', "sh"]
    assert argv[4:] == [
        "codex",
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--sandbox",
        "workspace-write",
        "--",
        "-rf the typo",
    ]
    home = Path(env["CODEX_HOME"])
    assert home.is_relative_to(req.state_dir)
    assert not home.is_relative_to(env["TMPDIR"]) and not Path(env["TMPDIR"]).is_relative_to(home)
    config = tomllib.loads((home / "config.toml").read_text())
    provider = config["model_providers"][config["model_provider"]]
    # The relay puts the CLI's path after the vendor base (…/v1): no /v1 here.
    assert provider["base_url"] == URL
    assert provider["wire_api"] == "responses"
    assert env[provider["env_key"]] == PLACEHOLDER_KEY
    assert provider["request_max_retries"] == provider["stream_max_retries"] == 1
    assert config["model"] == "gpt-5.5"
    assert config["analytics"]["enabled"] is False and config["features"]["plugins"] is False
    assert config["check_for_update_on_startup"] is False
    assert config["sandbox_workspace_write"]["exclude_slash_tmp"] is True

    argv, _ = prepared(Codex(), request(tmp_path, resume="01a1-thread", model='gpt-"x"'))
    # --sandbox must precede "resume": clap rejects it after.
    assert argv[-6:] == [
        "--sandbox",
        "workspace-write",
        "resume",
        "01a1-thread",
        "--",
        "-rf the typo",
    ]
    assert tomllib.loads((home / "config.toml").read_text())["model"] == 'gpt-"x"'


def test_codex_needs_the_relay(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="relay"):
        prepared(Codex(), request(tmp_path, model_url=None))


def test_copilot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COPILOT_PKG_CACHE_HOME", raising=False)
    req = request(tmp_path)
    argv, env = prepared(CopilotCli(), req)
    assert argv[:3] == ["copilot", "--prompt=-rf the typo", "--output-format=json"]
    assert "--allow-tool=write" in argv and "--disallow-temp-dir" in argv
    assert not {"--allow-all-tools", "--allow-all", "--yolo", "--allow-all-paths"} & set(argv)
    assert env["COPILOT_PROVIDER_BASE_URL"] == URL  # posts /chat/completions, not /v1/…
    assert env["COPILOT_PROVIDER_API_KEY"] == PLACEHOLDER_KEY
    assert env["COPILOT_MODEL"] == "gpt-5.4"
    assert env["COPILOT_OFFLINE"] == "true"
    assert Path(env["COPILOT_HOME"]).is_relative_to(req.state_dir)
    # Shared by this repo's harnesses, outside any one harness's state.
    assert Path(env["XDG_CACHE_HOME"]).parent == req.state_dir.parent
    assert "COPILOT_PKG_CACHE_HOME" not in env

    monkeypatch.setenv("COPILOT_PKG_CACHE_HOME", "/opt/kennel/copilot")
    argv, env = prepared(CopilotCli(), request(tmp_path, model="gpt-9", resume="uuid-1"))
    assert env["COPILOT_PKG_CACHE_HOME"] == "/opt/kennel/copilot"
    assert env["COPILOT_MODEL"] == "gpt-9"
    assert argv[-1] == "--resume=uuid-1"
