"""The README's quick start is what CI runs: two commands, in one shell, in order.

The first makes a virtual environment, activates it, installs Fetch with its test extras
and starts ``fetch``; the second is ``bash .ci/run``. So ``.ci/run`` (and the
``.ci/install.sh`` it starts) must use the Python on PATH, the venv's once activated,
never a system one. Checked here by running both scripts with stand-ins for every
program they start (nothing is installed, linted or tested: a second or so), and by
running ``fetch`` as a non-interactive shell runs it, stdin at EOF.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import tomllib
from pathlib import Path

from tests.cli.test_fetch_command import _env, _fetch_executable

ROOT = Path(__file__).resolve().parents[2]


def quick_start() -> list[str]:
    """The commands of README.md's "Quick start" code block (comments left out)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.search(r"^## Quick start\n(.*?)(?=^## )", text, re.S | re.M)
    assert section, "README.md has no '## Quick start' section"
    block = re.search(r"^```sh\n(.*?)^```", section.group(1), re.S | re.M)
    assert block, "README.md's quick start has no ```sh block"
    lines = [line.strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_the_quick_start_is_the_venv_install_then_the_ci_command() -> None:
    commands = quick_start()
    assert len(commands) == 2, commands
    first, second = commands
    assert second == "bash .ci/run"
    steps = [step.strip() for step in first.split("&&")]
    assert len(steps) == 4, steps
    make, activate, install, run = steps
    venv = re.fullmatch(r"python3 -m venv (\S+)", make)
    assert venv, make
    assert activate == f". {venv.group(1)}/bin/activate"
    assert shlex.split(install) == ["pip", "install", "-e", ".[test]"]
    assert run == "fetch"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "test" in project["optional-dependencies"]
    assert "fetch" in project["scripts"]
    # What the two commands leave in the tree is ignored by git (so by ruff too):
    # the venv, and build/ and *.egg-info of a `pip install .`.
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").split()
    for left in (f"{venv.group(1)}/", "build/", "*.egg-info/"):
        assert left in ignored, f"{left} is not in .gitignore"


def _stub(path: Path, body: str) -> None:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def test_ci_run_uses_the_python_on_path(tmp_path: Path) -> None:
    """``.ci/run`` and ``.ci/install.sh`` with an activated venv first on PATH: every
    Python they start is the venv's, with the arguments CI means (extra arguments of
    ``.ci/run`` go to pytest)."""
    repo, venv, others, log = (
        tmp_path / "repo",
        tmp_path / ".venv",
        tmp_path / "others",
        tmp_path / "calls",
    )
    (repo / ".ci").mkdir(parents=True)
    for name in ("run", "install.sh"):
        (repo / ".ci" / name).write_text((ROOT / ".ci" / name).read_text(encoding="utf-8"))
    _stub(repo / ".ci" / "kennel-image.sh", "exit 0")  # Docker: not this test's business
    (repo / ".ci" / "orchestrator_image.py").write_text("")
    (venv / "bin").mkdir(parents=True)
    _stub(venv / "bin" / "python3", 'printf "%s %s\\n" "$0" "$*" >> "$CALLS"')
    (venv / "bin" / "python").symlink_to("python3")  # as in a real venv
    others.mkdir()
    # A Python later on PATH (as the system's is): never the one to use.
    for python in ("python3", "python"):
        _stub(others / python, 'printf "WRONG %s %s\\n" "$0" "$*" >> "$CALLS"; exit 1')
    # What install.sh checks for, present at the pinned versions: it installs nothing.
    install = (ROOT / ".ci" / "install.sh").read_text(encoding="utf-8")
    pinned = re.findall(r'"@[\w.-]+/[\w.-]+@([\w.-]+):([\w-]+)"', install)
    assert len(pinned) == 4, pinned
    for version, binary in pinned:
        _stub(others / binary, f"echo {version}")
    for tool in ("bwrap", "chromium", "dpkg"):
        _stub(others / tool, "exit 0")
    for tool in ("apt-get", "sudo", "npm"):
        _stub(others / tool, f'printf "WRONG {tool} %s\\n" "$*" >> "$CALLS"; exit 1')
    env = {
        "PATH": f"{venv / 'bin'}:{others}:/usr/bin:/bin",
        "VIRTUAL_ENV": str(venv),  # what `. .venv/bin/activate` sets, with PATH
        "HOME": str(tmp_path),
        "CALLS": str(log),
    }
    done = subprocess.run(
        ["bash", ".ci/run", "tests/unit"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    calls = log.read_text().splitlines() if log.exists() else []
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{calls}"
    ours = (str(venv / "bin" / "python3"), str(venv / "bin" / "python"))
    assert [c for c in calls if c.split(" ", 1)[0] not in ours] == []
    args = [c.split(" ", 1)[1] for c in calls]
    install_call = next(a for a in args if a.startswith("-m pip install"))
    assert f"-e {repo}[test]" in install_call
    for expected in (
        "-m ruff check .",
        "-m ruff format --check .",
        "-m mypy",
        "-m pytest -q -p no:cacheprovider tests/unit",
    ):
        assert expected in args, f"{expected!r} not run; ran {args}"


def test_fetch_ends_at_eof_of_stdin(tmp_path: Path) -> None:
    """The first command's ``fetch`` as a non-interactive shell runs it (stdin from
    /dev/null): it starts, sees the end of its input and stops by itself, cleanly."""
    done = subprocess.run(
        [_fetch_executable()],
        cwd=tmp_path,
        env=_env(tmp_path / "home"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert "Fetch is ready" in done.stdout
    assert done.stdout.rstrip().endswith("fetch: stopped."), done.stdout
    assert "Traceback" not in done.stderr, done.stderr
