"""A committed ``.fetch.yaml`` with one key it may not set is not ignored whole: the keys
it may set (the restrictions it adds) still apply, and the refused key is named in one
log line. Real git repositories, read through the hardened host git; the CLI as a real
process."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.boundary.gitops import Repo
from orchestrator.permissions.committed import committed_values
from tests.conftest import git

MIXED = (
    "permissions: {deny: ['path:secrets/**'], mode: view}\n"
    "model: {api_key: sk-not-yours}\n"  # never a repository's to set
    "approvals: {ttl_seconds: -5, autonomy: supervised}\n"  # one bad value, one good
)


def _repo(tmp_path: Path, text: str) -> Repo:
    path = tmp_path / "demo"
    path.mkdir()
    git(path, "init", "-q")
    (path / ".fetch.yaml").write_text(text)
    git(path, "add", ".fetch.yaml")
    git(path, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "settings")
    return Repo(path)


def test_the_keys_it_may_set_apply_and_each_refused_key_is_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    repo = _repo(tmp_path, MIXED)
    with caplog.at_level(logging.WARNING, logger="orchestrator.permissions.committed"):
        values = committed_values(repo, "demo", repo.head())
    assert values == {
        "permissions.deny": ("path:secrets/**",),
        "permissions.mode": "view",
        "approvals.autonomy": "supervised",
    }
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert all("\n" not in line and "demo:.fetch.yaml at" in line for line in lines)
    assert "model.api_key cannot be set per repository" in lines[0]
    assert "approvals.ttl_seconds" in lines[1]
    assert "sk-not-yours" not in " ".join(lines)


def test_config_explain_shows_the_restriction_of_a_file_with_a_refused_key(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    _repo(workspace, MIXED)
    env = {**os.environ, "FETCH_HOME": str(tmp_path / "home"), "FETCH_WORKSPACE": str(workspace)}
    argv = ["config", "explain", "permissions.deny", "--repo", "demo"]
    out = subprocess.run(
        [sys.executable, "-m", "orchestrator", *argv],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert "path:secrets/**" in out and "demo:.fetch.yaml at" in out, out
