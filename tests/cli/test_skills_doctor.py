"""Bad skill files never stop Fetch: each is skipped and named, with its field and what
is expected, by the real ``fetch doctor`` command and by /status in the running app."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from orchestrator.config import Settings
from tests.cli.test_fetch_command import _env, _fetch_executable
from tests.conftest import git, start_driver

GOOD = "---\nname: house-rules\ndescription: How the owner likes it.\n---\nBe kind.\n"
BAD = {
    "bad-yaml": ("---\nname: [unclosed\n---\nbody\n", "frontmatter: valid YAML"),
    "no-name": ("---\ndescription: d\n---\nbody\n", "name: required"),
    "unknown-key": (
        "---\nname: unknown-key\ndescription: d\nmood: grumpy\n---\nbody\n",
        "mood: no such key (known: name, description, cli)",
    ),
    "too-long": (
        "---\nname: too-long\ndescription: " + "x" * 250 + "\n---\nbody\n",
        "description: one line (at most 200 characters)",
    ),
}


def install(home: Path) -> dict[str, str]:
    """The good skill and the four bad ones; returns file -> what its line must say."""
    expected = {}
    for name, text in {"house-rules": (GOOD, ""), **BAD}.items():
        path = home / "skills" / name / "SKILL.md"
        path.parent.mkdir(parents=True)
        path.write_text(text[0])
        if text[1]:
            expected[str(path)] = text[1]
    return expected


def test_fetch_doctor_names_every_bad_skill_file(tmp_path: Path, workspace: Path) -> None:
    home = tmp_path / "home"
    expected = install(home)
    repo = workspace / "demo"
    planted = repo / ".fetch" / "skills" / "x" / "SKILL.md"
    planted.parent.mkdir(parents=True)
    planted.write_text("---\nname: x\n---\nno description\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a broken skill")
    done = subprocess.run(
        [_fetch_executable(), "doctor"],
        env=_env(home, FETCH_WORKSPACE=str(workspace)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "skills:    6 (5 shipped, 1 in" in out, out
    for file, what in expected.items():
        (line,) = [x for x in out.splitlines() if file in x]
        assert line.startswith("⚠️ skill skipped: ") and what in line, line
    assert ".fetch/skills/x/SKILL.md: description: required" in out, out


async def test_status_names_them_and_the_good_skill_still_works(
    make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    expected = install(tmp_path / "home")
    app, fetch = await start_driver(make_settings())
    try:
        assert fetch.services.skills.base.get("house-rules") is not None
        # The phone's rendering wraps long lines (and long paths): compare without spaces.
        status = "".join((await fetch.ask("/status", "Fetch ·")).split())
        for file, what in expected.items():
            assert "".join(f"⚠️ skill skipped: {file}: {what}".split()) in status, status
        listing = await fetch.ask("/skills", "Skills")
        assert "house-rules (owner)" in listing and "1 skill file" not in listing
        assert "4 skill file(s) skipped" in listing
    finally:
        await app.__aexit__(None, None, None)
