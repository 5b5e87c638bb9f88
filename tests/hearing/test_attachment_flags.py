"""Each CLI gets the owner's attachments its own way (issue 23, 2): Claude Code may read
their folder (--add-dir; tests/hearing/test_attachments_claude.py runs it for real),
codex takes images with the first prompt (--image), copilot attaches them
(--attachment) and may read the folder (--add-dir), gemini includes it
(--include-directories). A resumed turn attaches nothing again."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from harnesses.base import HarnessRequest
from harnesses.claude_code import ClaudeCode
from harnesses.codex import Codex
from harnesses.copilot_cli import CopilotCli
from harnesses.gemini_cli import GeminiCli
from kennel.relay import PLACEHOLDER_KEY

SEEN = Path("/fetch/attachments")
SHOT, LOG = SEEN / "shot.png", SEEN / "crash.log"


def request(tmp_path: Path, **changes: object) -> HarnessRequest:
    base = HarnessRequest(
        prompt="fix what the screenshot shows",
        workdir=tmp_path / "ws",
        state_dir=tmp_path / "state",
        model_url="http://127.0.0.1:4100",
        placeholder_key=PLACEHOLDER_KEY,
        attachments=(SHOT, LOG),
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_each_cli_is_handed_the_attachments_its_own_way(tmp_path: Path) -> None:
    req = request(tmp_path)
    assert req.attached_images == (SHOT,)
    claude = ClaudeCode().command(req)[0]
    assert claude[claude.index("--add-dir") + 1] == str(SEEN)
    codex = Codex().command(req)[0]
    assert f"--image={SHOT}" in codex and f"--image={LOG}" not in codex
    assert codex.index(f"--image={SHOT}") < codex.index("--")  # a flag, not the prompt
    copilot = CopilotCli().command(req)[0]
    assert f"--attachment={SHOT}" in copilot and f"--add-dir={SEEN}" in copilot
    gemini = GeminiCli().command(req)[0]
    assert f"--include-directories={SEEN}" in gemini


def test_a_resumed_turn_attaches_nothing_again_and_none_means_no_flag(tmp_path: Path) -> None:
    resumed = request(tmp_path, resume="abc")
    assert not any(a.startswith("--image") for a in Codex().command(resumed)[0])
    assert not any(a.startswith("--attachment") for a in CopilotCli().command(resumed)[0])
    bare = request(tmp_path, attachments=())
    for harness in (ClaudeCode(), Codex(), CopilotCli(), GeminiCli()):
        argv = harness.command(bare)[0]
        assert not any(
            a.startswith(("--add-dir", "--image", "--attachment", "--include-directories"))
            for a in argv
        ), harness.name
