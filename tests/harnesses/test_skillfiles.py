"""Skills in each CLI's own format, written under state_dir by the adapters' prepare: a
real Claude Code skills folder (a stale skill of an earlier run removed), a section of
the other CLIs' instructions files, unsafe names never becoming paths."""

from __future__ import annotations

from pathlib import Path

import yaml

from harnesses.base import HarnessRequest
from harnesses.claude_code import ClaudeCode
from harnesses.codex import Codex
from harnesses.instructions import user_file

SKILLS = (
    ("python-testing", "Write: pytest tests.", "Run them.\n"),
    ("../escape", "bad name", "never written"),
)


def request(tmp_path: Path, skills: tuple[tuple[str, str, str], ...]) -> HarnessRequest:
    return HarnessRequest(
        prompt="p",
        workdir=tmp_path / "repo",
        state_dir=tmp_path / "state",
        model_url="http://127.0.0.1:4100",
        placeholder_key="k",
        skills=skills,
    )


def test_claude_code_gets_a_skills_folder_and_a_stale_skill_goes(tmp_path: Path) -> None:
    home = tmp_path / "state"
    stale = home / "claude" / "skills" / "old-skill" / "SKILL.md"
    stale.parent.mkdir(parents=True)
    stale.write_text("---\nname: old-skill\n---\n")
    ClaudeCode().prepare(request(tmp_path, SKILLS), home)
    folder = home / "claude" / "skills"
    assert sorted(p.name for p in folder.iterdir()) == ["python-testing"]
    text = (folder / "python-testing" / "SKILL.md").read_text()
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta == {"name": "python-testing", "description": "Write: pytest tests."}
    assert text.endswith("\n\nRun them.\n")
    assert not (tmp_path / "escape").exists() and not (home / "claude" / "escape").exists()
    assert not user_file(home, "claude").exists()  # no instructions: no CLAUDE.md
    ClaudeCode().prepare(request(tmp_path, ()), home)
    assert list(folder.iterdir()) == []


def test_other_clis_read_the_skills_in_their_instructions_file(tmp_path: Path) -> None:
    home = tmp_path / "state"
    Codex().prepare(request(tmp_path, SKILLS), home)
    text = user_file(home, "codex").read_text()
    assert text.startswith("# Skills from Fetch\n")
    assert "## Skill: python-testing\n_Write: pytest tests._\n\nRun them." in text
    assert "escape" not in text
    Codex().prepare(request(tmp_path, ()), home)
    assert not user_file(home, "codex").exists()  # the next run without skills: no file
