"""A bad agent file of the owner's never stops Fetch: the real ``fetch doctor`` lists the
pack and names the skipped file with its key (the running app: /identity, in
tests/e2e/test_pack_demo.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.cli.test_fetch_command import _env, _fetch_executable


def test_fetch_doctor_lists_the_pack_and_names_a_bad_agent(tmp_path: Path, workspace: Path) -> None:
    agents = tmp_path / "home" / "agents"
    agents.mkdir(parents=True)
    (agents / "sql-expert.md").write_text("---\nname: sql-expert\nrole: writes SQL\n---\nx\n")
    (agents / "broken.md").write_text("---\nname: broken\nrole: r\nmood: grumpy\n---\n")
    done = subprocess.run(
        [_fetch_executable(), "doctor"],
        env=_env(tmp_path / "home", FETCH_WORKSPACE=str(workspace)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "pack:      coder, docs-writer, reviewer, test-fixer, sql-expert (default: coder)" in out
    assert (
        "⚠️ pack: skipped agents/broken.md: mood: no such key "
        "(known: name, role, harness, model, when)" in out
    ), out
