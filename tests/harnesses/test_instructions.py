"""Each adapter writes the run's instructions where its CLI reads user-level
instructions, under the host side of ``state_dir`` (never the repository), fresh for
every run, and removes a stale file when a run has none. (That the CLIs really read
them there: tests/e2e/test_pack_cli_wire.py, with the real CLIs.)"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from harnesses import builtin_harnesses
from harnesses.base import Harness, HarnessRequest
from harnesses.instructions import user_file, write_user_instructions
from tests.fakes.require import require_binary

ROOT = Path(__file__).resolve().parents[2]

WHERE = {
    "claude-code": "claude/CLAUDE.md",
    "codex": "codex/AGENTS.md",
    "gemini-cli": "gemini/.gemini/GEMINI.md",
    "copilot": "copilot/copilot-instructions.md",
    "demo": "fetch-instructions.md",
}


def harness(name: str) -> Harness:
    return next(h for h in builtin_harnesses() if h.name == name)


def request(tmp: Path, instructions: str) -> HarnessRequest:
    return HarnessRequest(
        prompt="fix it",
        workdir=tmp / "repo",
        state_dir=Path("/state"),  # as the CLI sees it; the host side is another folder
        model_url="http://127.0.0.1:4100",
        placeholder_key="placeholder",
        instructions=instructions,
    )


@pytest.mark.parametrize("name", sorted(WHERE))
def test_prepare_writes_and_clears_the_cli_instructions(tmp_path: Path, name: str) -> None:
    host = tmp_path / "state-host"
    (tmp_path / "repo").mkdir()
    h = harness(name)
    req = request(tmp_path, "# Fetch pack member: reviewer (reviews)\n\nChange nothing.\n")
    h.prepare(req, host)
    path = host / WHERE[name]
    assert path.read_text() == "# Fetch pack member: reviewer (reviews)\n\nChange nothing.\n"
    # The CLI's own home variable points at that folder (as the CLI sees state_dir).
    _, env = h.command(req)
    seen = Path("/state") / WHERE[name]
    homes = {env.get(k) for k in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "HOME")}
    homes.add(str(Path(env.get("GEMINI_CLI_HOME", "/x")) / ".gemini"))
    assert str(seen.parent) in homes, (name, env)
    # The next run (another member, then none) never sees the old text.
    h.prepare(replace(req, instructions="Other rules."), host)
    assert path.read_text() == "Other rules.\n"
    h.prepare(replace(req, instructions=""), host)
    assert not path.exists()
    assert not list((tmp_path / "repo").iterdir())  # nothing in the work tree


def test_every_builtin_harness_is_covered() -> None:
    assert {h.name for h in builtin_harnesses()} == set(WHERE)


def test_blank_instructions_write_nothing(tmp_path: Path) -> None:
    req = request(tmp_path, "  \n")
    assert write_user_instructions(req, tmp_path, "codex") is None
    assert not user_file(tmp_path, "codex").exists()


@pytest.mark.parametrize("port", ["python", "node"])
def test_the_demo_clis_name_the_member_they_read(tmp_path: Path, port: str) -> None:
    """Both stand-in CLIs (host: Python, Docker image: Node) read the demo's user-level
    file from $HOME, as the real CLIs read theirs, and say which member they are."""
    if port == "node":
        require_binary("node")
    home, repo = tmp_path / "home", tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("teh end\n")
    req = request(tmp_path, "# Fetch pack member: test-fixer (fixes tests)\n\nRun it first.")
    write_user_instructions(req, home, "demo")
    argv = (
        [sys.executable, "-m", "harnesses.demo_cli"]
        if port == "python"
        else ["node", str(ROOT / "kennel" / "demo_cli.js")]
    )
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(home)}
    out = subprocess.run([*argv, "fix README.md"], cwd=repo, env=env, capture_output=True)
    assert out.returncode == 0, out.stderr
    done = json.loads(out.stdout.splitlines()[-1])
    assert done == {"type": "done", "text": "test-fixer: Fixed 1 typo(s) in README.md."}
    user_file(home, "demo").unlink()
    out = subprocess.run([*argv, "fix README.md"], cwd=repo, env=env, capture_output=True)
    assert json.loads(out.stdout.splitlines()[-1])["text"].startswith("No typos I know of")
