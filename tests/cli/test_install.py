"""``pip install .`` (a wheel, not editable) and ``pipx install .`` give a ``fetch`` that
starts: the installed copy carries its shipped identity and skills (package data), and a
short real session answers. (``pip install -e .`` is the install every other CLI test
runs.) Dependencies come from the environment running the tests (the README's venv, or
whatever interpreter runs pytest), never from the system Python: a one-line ``.pth``
package (:func:`_deps_wheel`) puts this interpreter's site-packages after the new
environment's own. Only the build backend is fetched, as for any ``pip install .``.
Fetch itself must come from the install, which is checked."""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.cli.test_fetch_command import _env

ROOT = Path(__file__).resolve().parents[2]
# What a source checkout has that an install must not need: copied without the rest of
# the working tree (build/ and *.egg-info of the editable install stay out of it).
SOURCES = (
    "pyproject.toml",
    "setup.py",
    "README.md",
    "data",
    "core",
    "channels",
    "orchestrator",
    "instincts",
    "harnesses",
    "identity",
    "skills",
    "kennel",
)
WHERE = (
    "import orchestrator, orchestrator.app as a; "
    "print(orchestrator.__file__); print(a.SHIPPED_DATA)"
)
# What the installed code must find in the shipped data (the top-level data/ folder,
# installed as the package fetch_data): one file of each kind.
SHIPPED = (
    "identity/COLLAR.md",
    "agents/ROUTING.md",
    "skills/commit-style/SKILL.md",
    "prices.yaml",
    "web/templates/dash/base.html",
    "web/static/dash/dash.css",
)
# The installed code reading them as Fetch does: the pack, the skills, the prices, the
# dashboard's templates and static files. Prints what it found, one count per line.
READS = (
    "from orchestrator.shipped import SHIPPED_DATA as d; "
    "from identity import load_pack; from skills import discover; "
    "from orchestrator.costs.prices import load_defaults; "
    "from orchestrator.dashboard.assets import static_files; "
    "from orchestrator.dashboard.render import Renderer; "
    "print(len(load_pack(d / 'agents').agents)); print(len(discover(None, d / 'skills'))); "
    "print(len(load_defaults(d / 'prices.yaml'))); print(len(static_files())); "
    "print(len(Renderer().env.list_templates()))"
)


def _source(tmp: Path) -> Path:
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(
                path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
            )
        else:
            shutil.copy2(path, src / name)
    return src


def _deps_dirs() -> list[str]:
    """Where this interpreter imports its third-party packages from: its site-packages
    (a venv's own, and the base's only when this interpreter sees them too)."""
    return [p for p in sys.path if p and Path(p).name in {"site-packages", "dist-packages"}]


def _deps_wheel(tmp: Path) -> Path:
    """A wheel holding one ``.pth`` file that lists :func:`_deps_dirs`. Installed first
    into the new environment, it appends them to ``sys.path`` after the environment's own
    site-packages, so Fetch's dependencies are found (by pip's resolver too, which then
    fetches nothing) while ``orchestrator`` and the other packages still come from the
    install. Hand-built (a wheel is a zip): no build backend, nothing downloaded."""
    name, version = "fetch_test_deps", "0"
    files = {
        f"{name}.pth": "".join(f"{d}\n" for d in _deps_dirs()),
        f"{name}-{version}.dist-info/METADATA": (
            f"Metadata-Version: 2.1\nName: fetch-test-deps\nVersion: {version}\n"
        ),
        f"{name}-{version}.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = []
    for path, text in files.items():
        digest = hashlib.sha256(text.encode()).digest()
        hashed = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        record.append(f"{path},sha256={hashed},{len(text.encode())}\n")
    files[f"{name}-{version}.dist-info/RECORD"] = (
        "".join(record) + f"{name}-{version}.dist-info/RECORD,,\n"
    )
    wheel = tmp / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return wheel


def _run(
    argv: list[str],
    cwd: Path,
    env: dict[str, str] | None = None,
    stdin: str = "",
    timeout: float = 240,
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        argv, cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{argv}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def _works(fetch: Path, python: Path, prefix: Path, tmp: Path) -> None:
    """The installed ``fetch``: its own code and data, --version, a /help session."""
    module, data = _run([str(python), "-c", WHERE], tmp).stdout.split()
    assert Path(module).is_relative_to(prefix), f"fetch imported from {module}, not {prefix}"
    assert Path(data).is_relative_to(prefix), f"shipped data from {data}, not {prefix}"
    assert Path(data).name == "fetch_data", data
    assert [name for name in SHIPPED if not (Path(data) / name).is_file()] == []
    assert len(list((Path(data) / "skills").glob("*/SKILL.md"))) == len(
        list((ROOT / "data" / "skills").glob("*/SKILL.md"))
    )
    counts = [int(n) for n in _run([str(python), "-c", READS], tmp).stdout.split()]
    assert len(counts) == 5 and all(counts), f"pack, skills, prices, static, templates: {counts}"
    version = _run([str(fetch), "--version"], tmp, env=_env(tmp / "home")).stdout
    assert version.startswith("fetch 0.") and "unknown" not in version
    session = _run([str(fetch)], tmp, env=_env(tmp / "home"), stdin="/help\n", timeout=90)
    assert "Fetch is ready" in session.stdout and "I'm Fetch." in session.stdout
    assert session.stdout.rstrip().endswith("fetch: stopped."), session.stdout


def test_pip_install_dot_gives_a_working_fetch(tmp_path: Path) -> None:
    src = _source(tmp_path)
    wheels = tmp_path / "wheels"
    # Built as a user's `pip install .` builds it: in an isolated build environment.
    _run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(src)],
        tmp_path,
    )
    wheel = next(wheels.glob("fetch_assistant-*.whl"))
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps"]
    # Fetch first: with the dependencies visible, a Fetch of the same version installed in
    # them (a non-editable `pip install .`) would count as "already installed".
    _run([*pip, str(wheel)], tmp_path)
    _run([*pip, str(_deps_wheel(tmp_path))], tmp_path)
    _works(venv / "bin" / "fetch", venv / "bin" / "python", venv, tmp_path)


def test_pipx_install_dot_gives_a_working_fetch(tmp_path: Path) -> None:
    pipx = shutil.which("pipx")
    if pipx is None:
        pytest.fail("pipx is not installed; pip install -e '.[test]' installs it", pytrace=False)
    src = _source(tmp_path)
    env = {
        **_env(tmp_path / "home"),
        "PIPX_HOME": str(tmp_path / "pipx"),
        "PIPX_BIN_DIR": str(tmp_path / "bin"),
        "PIPX_MAN_DIR": str(tmp_path / "man"),
    }
    # This interpreter (an extension module built for it loads), Fetch's dependencies
    # through the .pth package installed before Fetch.
    deps = str(_deps_wheel(tmp_path))
    argv = [pipx, "install", "--python", sys.executable, "--preinstall", deps, str(src)]
    _run(argv, tmp_path, env=env)
    venv = tmp_path / "pipx" / "venvs" / "fetch-assistant"
    _works(tmp_path / "bin" / "fetch", venv / "bin" / "python", venv, tmp_path)
