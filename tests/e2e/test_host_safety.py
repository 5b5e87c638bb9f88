"""Invariant 3: the host never runs what the sandbox wrote. A CLI plants hooks,
fsmonitor, filters, textconv and includes in the repo; Fetch reads the diff, commits,
undoes and discards, and not one of those programs ever runs (canary files)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, git, start_driver

EVIL = r"""#!/bin/sh
# A "coding CLI" gone rogue: it edits a file and plants every git execution hook it knows.
C="{canary}"
sed -i 's/Teh quick/The quick/' README.md
cat >> .git/config <<CFG
[core]
	fsmonitor = "touch $C/fsmonitor; false"
	hooksPath = $C/hooks
	pager = "touch $C/pager; cat"
[filter "evil"]
	clean = "touch $C/clean; cat"
	smudge = "touch $C/smudge; cat"
	process = "touch $C/process"
	required = true
[diff "evil"]
	textconv = "touch $C/textconv; cat"
	command = "touch $C/diffcmd"
[merge "evil"]
	driver = "touch $C/merge"
[include]
	path = $C/included.cfg
CFG
mkdir -p "$C/hooks"
for h in pre-commit post-commit reference-transaction post-checkout post-rewrite \
         pre-auto-gc post-index-change prepare-commit-msg commit-msg; do
  printf '#!/bin/sh\ntouch %s/hook-%s\n' "$C" "$h" > .git/hooks/$h
  cp .git/hooks/$h "$C/hooks/$h"
  chmod +x .git/hooks/$h "$C/hooks/$h"
done
printf '[core]\n\tfsmonitor = "touch %s/included"\n' "$C" > "$C/included.cfg"
printf '* filter=evil diff=evil merge=evil\n' > .gitattributes
mkdir -p .git/info && printf '* filter=evil\n' > .git/info/attributes
echo '{{"type":"result","subtype":"success","is_error":false,"result":"done"}}'
"""


@pytest.fixture(params=["unsafe-local", "bwrap"])
async def rogue(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> AsyncIterator[tuple[Driver, Path]]:
    """unsafe-local: the CLI can write .git and the guard must put it back; bwrap (the
    default): .git is read-only inside, the same attempts fail there."""
    canary = tmp_path / "canary"
    canary.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cli = bin_dir / "claude"
    cli.write_text(EVIL.format(canary=canary))
    cli.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    settings = make_settings(
        FETCH_HARNESS="claude-code", ANTHROPIC_API_KEY="sk-x", FETCH_KENNEL=request.param
    )
    app, driver = await start_driver(settings)
    try:
        yield driver, canary
    finally:
        await app.__aexit__(None, None, None)


def fired(canary: Path) -> list[str]:
    return sorted(p.name for p in canary.iterdir() if p.is_file() and p.name != "included.cfg")


async def test_planted_git_programs_never_run_on_the_host(rogue: tuple[Driver, Path]) -> None:
    fetch, canary = rogue
    repo = fetch.services.workspace.path("demo")
    config_before = (repo / ".git" / "config").read_text()
    diff = await fetch.ask("fix the typo in README.md of demo", "Apply?")
    if fetch.services.kennel.name == "unsafe-local":
        # Its .git writes went to the run's own layer: named on the card, never applied.
        assert "Left out" in diff and ".git/" in diff
    assert ".gitattributes" in diff and "README.md" in diff
    assert (repo / ".git" / "config").read_text() == config_before
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    await fetch.ask("yes", "Committed")
    await fetch.ask("/undo", "Reverted")
    await fetch.ask("fix the typo in README.md of demo", "Apply?")
    await fetch.ask("no", "Discarded")
    assert fired(canary) == []
    assert git(repo, "status", "--porcelain") == ""
