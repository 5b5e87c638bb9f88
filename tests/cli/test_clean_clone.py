"""The README's path on a clean clone: ``pip install .`` first (it leaves ``build/`` and
``*.egg-info`` in the tree), then the quick start's venv. Checked cheaply, without
running the whole suite inside a test:

* lint and the tests that scan the source tree pass on the clone with ``build/`` there
  (they must read Fetch's packages, never the copies a build left);
* ``.ci/run``'s own test command, taken from the script, runs from a venv made as the
  README makes it (its name from the README, Fetch installed editable into it, PATH and
  VIRTUAL_ENV as ``activate`` sets them), and imports Fetch and its data from the clone.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_install import _deps_wheel
from tests.cli.test_readme_commands import quick_start

ROOT = Path(__file__).resolve().parents[2]
# The tests that walk the source tree (the layer rule, the one send path, the boundary).
SCANNERS = [
    "tests/test_layers.py",
    "tests/unit/test_messenger.py",
    "tests/unit/test_boundary_only.py",
]


def _run(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{argv}: {done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clean clone of the committed tree after ``pip install .`` (one per module)."""
    tmp = tmp_path_factory.mktemp("clean")
    clone = tmp / "clone"
    _run(["git", "clone", "-q", "--depth", "1", f"file://{ROOT}", str(clone)], tmp)
    # What `pip install .` does to the tree: an in-tree build (wheel kept out of the way).
    _run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp / "w"), "."], clone
    )
    assert (clone / "build" / "lib" / "orchestrator").is_dir(), "pip left no build/ to trip on"
    return clone


def _ci_test_command() -> list[str]:
    """``.ci/run``'s pytest line, as arguments after the interpreter."""
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if "-m pytest" in x and not x.lstrip().startswith("#"))
    argv = shlex.split(line)
    assert argv[0] == "$PY" and argv[-1] == "$@", line
    return argv[1:-1]


def test_the_ci_test_command_runs_from_the_readmes_venv(clone: Path, tmp_path: Path) -> None:
    venv_name = re.fullmatch(r"python3 -m venv (\S+) &&.*", quick_start()[0])
    assert venv_name, quick_start()[0]
    venv = clone / venv_name.group(1)
    _run([sys.executable, "-m", "venv", str(venv)], clone)
    python = venv / "bin" / "python"
    # Fetch's dependencies from this interpreter (nothing downloaded), Fetch itself from
    # the clone, editable, as `pip install -e '.[test]'` installs it.
    _run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", str(_deps_wheel(tmp_path))], clone
    )
    _run([str(python), "-m", "pip", "install", "-q", "--no-deps", "-e", "."], clone)
    activated = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("FETCH_", "PYTHON"))},
        "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "VIRTUAL_ENV": str(venv),
    }
    # The interpreter .ci/run picks: the first python3 on PATH, the venv's.
    py = _run(["bash", "-c", "command -v python3"], clone, activated).strip()
    assert Path(py) == venv / "bin" / "python3", py
    where = _run(
        [
            py,
            "-c",
            "import sys, orchestrator, orchestrator.shipped as s; "
            "print(sys.prefix); print(orchestrator.__file__); print(s.SHIPPED_DATA)",
        ],
        tmp_path,  # not the clone: the install, not the current folder, must find Fetch
        activated,
    ).split()
    assert where == [str(venv), str(clone / "orchestrator" / "__init__.py"), str(clone / "data")]
    assert (venv / "bin" / "fetch").is_file()  # the command the CLI tests start
    out = _run([py, *_ci_test_command(), "tests/test_layers.py"], clone, activated)
    assert re.search(r"\d+ passed", out) and "failed" not in out, out


def test_lint_and_the_source_scans_pass_on_a_clean_clone_after_pip_install(clone: Path) -> None:
    # After the venv test: the README's .venv/ is in the tree too, as when .ci/run lints.
    _run([sys.executable, "-m", "ruff", "check", "."], clone)
    _run([sys.executable, "-m", "ruff", "format", "--check", "."], clone)
    out = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SCANNERS], clone)
    assert re.search(r"\d+ passed", out) and "failed" not in out, out
