"""A CLI that hangs, floods its output or is killed: a clear message on the phone, the
session back in ALERT, the repo untouched, Fetch still serving."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.config import Settings
from tests.conftest import start_driver, tree_snapshot

SCRIPTS = {
    "hang": "#!/bin/sh\nsed -i 's/Teh/The/' README.md\nsleep 600\n",
    "flood": (
        "#!/bin/sh\nhead -c 8000000 /dev/zero | tr '\\0' 'x'\necho\n"
        'i=0; while [ $i -lt 20000 ]; do echo \'{"type":"noise","i":\'$i\'}\'; '
        "i=$((i+1)); done\nexit 0\n"
    ),
    "oom": "#!/bin/sh\nkill -KILL $$\n",
}
EXPECT = {"hang": "took longer than 3 s", "flood": "exit code 0", "oom": "memory limit"}


@pytest.mark.parametrize("kind", sorted(SCRIPTS))
async def test_misbehaving_cli(
    kind: str,
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cli = bin_dir / "claude"
    cli.write_text(SCRIPTS[kind])
    cli.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    app, fetch = await start_driver(
        make_settings(
            FETCH_HARNESS="claude-code",
            ANTHROPIC_API_KEY="sk-x",
            FETCH__HARNESS__TIMEOUT_SECONDS="3",
        )
    )
    try:
        repo = fetch.services.workspace.path("demo")
        before = tree_snapshot(repo)
        reply = await fetch.ask("fix the typo in README.md of demo", "failed", 60)
        assert EXPECT[kind] in reply, reply
        assert tree_snapshot(repo) == before
        assert "ALERT" in await fetch.ask("/status", "Fetch ·")
        assert "Commands:" in await fetch.ask("/commands", "Commands:")
    finally:
        await app.__aexit__(None, None, None)
