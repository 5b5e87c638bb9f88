"""Standing instructions (and skills) handed to a coding CLI as its *user-level* files.

Every CLI reads a user-level instructions file from its own home: Claude Code
``$CLAUDE_CONFIG_DIR/CLAUDE.md``, Gemini CLI ``$GEMINI_CLI_HOME/.gemini/GEMINI.md``, Codex
``$CODEX_HOME/AGENTS.md``, Copilot CLI ``$COPILOT_HOME/copilot-instructions.md``. Those
homes live under the run's ``state_dir`` (per workspace and harness, see
``kennel.base.Layout``), never in the repository: a file in the work tree would show in
the diff the owner approves. ``state_dir`` outlives a run, so the file is written fresh
before every run and removed when a run has no instructions, so a reviewer's rules never
leak into the next coder's run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from harnesses.base import HarnessRequest
from harnesses.skillfiles import section, write_skill_folder

Format = Literal["claude", "gemini", "codex", "copilot", "demo"]

# Where each CLI looks, relative to the host side of ``state_dir`` (the adapters point the
# CLI's home variables there: CLAUDE_CONFIG_DIR, GEMINI_CLI_HOME, CODEX_HOME, COPILOT_HOME).
USER_FILES: dict[Format, str] = {
    "claude": "claude/CLAUDE.md",
    "gemini": "gemini/.gemini/GEMINI.md",
    "codex": "codex/AGENTS.md",
    "copilot": "copilot/copilot-instructions.md",
    "demo": "fetch-instructions.md",
}


def user_file(home: Path, fmt: Format) -> Path:
    """The instructions file of ``fmt`` under ``home`` (the host side of ``state_dir``)."""
    return home / USER_FILES[fmt]


def render(req: HarnessRequest) -> str:
    """The file's text: the pack member's instructions (empty: no file at all)."""
    text = req.instructions.strip()
    return text + "\n" if text else ""


def write_user_instructions(req: HarnessRequest, home: Path, fmt: Format) -> Path | None:
    """Write (or remove a stale) user-level instructions file; the path written, or None."""
    path = user_file(home, fmt)
    text = render(req)
    # Skills (harnesses/skillfiles.py): Claude Code's own skills folder beside CLAUDE.md;
    # the other CLIs read them as a section of their instructions file.
    if fmt == "claude":
        write_skill_folder(req.skills, path.parent / "skills")
    elif skills := section(req.skills):
        text = f"{text}\n{skills}" if text else skills
    if not text:
        path.unlink(missing_ok=True)
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    # Write then rename: a CLI of another run on the same state_dir never reads half a file.
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


__all__ = ["USER_FILES", "Format", "render", "user_file", "write_user_instructions"]
