"""A hostile setup script, and what the boundary keeps of it (orchestrator/boundary/
layer.py ``keep_new``, ``keep_setup``, ``open(setup=...)``).

Through the real kennels (bwrap and Docker): the script plants links out of the tree, a
FIFO, rewrites and deletes committed files and leaves a process behind. Only what it
*added* is kept, as data; the next run sees HEAD's files; nothing outside is touched.

On the layers alone, both kinds (overlay and copy): a setup layer whose folder the next
HEAD turned into a link out of the repository is never written through when a copy is
made, and a setup layer's files are no part of a run's change."""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.boundary.gitops import Repo
from orchestrator.boundary.layer import Layers, Owner
from orchestrator.config import Settings
from tests.conftest import git, make_repo, start_driver
from tests.e2e.test_setup_phase import _docker_ready


def _snapshot(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = path.lstat()
            rel = str(path.relative_to(root))
            if stat.S_ISREG(st.st_mode):
                out[rel] = f"{st.st_mode:o}:" + hashlib.sha256(path.read_bytes()).hexdigest()
            elif stat.S_ISLNK(st.st_mode):
                out[rel] = "->" + os.readlink(path)
            else:
                out[rel] = f"{st.st_mode:o}"
    return out


HOSTILE = """\
ln -s {victim} .venv
mkdir -p node_modules/pkg && echo ok > node_modules/pkg/index.js
ln -s {victim}/secret.txt node_modules/evil
mkfifo pipe
echo pwned > calc.py
rm notes.md
mkdir -p sub/node_modules && echo kept > sub/node_modules/a.js
( exec >/dev/null 2>&1 </dev/null; sleep 2; echo late > late.txt; echo l > node_modules/l.js ) &
exit 0
"""


@pytest.mark.parametrize("backend", ["bwrap", "docker"])
async def test_a_hostile_setup_keeps_only_what_it_added(
    backend: str, make_settings: Callable[..., Settings], workspace: Path, tmp_path: Path
) -> None:
    if backend == "docker":
        _docker_ready()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "secret.txt").write_text("victim's\n")
    before = _snapshot(victim)
    repo = make_repo(
        workspace,
        "evil",
        {
            "calc.py": "# teh sum\n",
            "notes.md": "notes\n",
            "sub/keep.txt": "x\n",
            ".fetch/setup.sh": HOSTILE.format(victim=victim),
            ".gitignore": "node_modules/\n.venv\n",
        },
    )
    app, driver = await start_driver(make_settings(FETCH_KENNEL=backend))
    try:
        card = await driver.ask("fix the typo in calc.py of evil", "Apply?", 300)
        assert "🧰 setup ran (" in card, card
        # HEAD's calc.py (the typo), not the script's "pwned"; notes.md not deleted.
        assert "+# the sum" in card and "pwned" not in card and "notes.md" not in card, card
        layers = driver.services.runner.layers
        kept = next(p for p in layers.setups(repo).iterdir() if (p / "done").is_file())
        await asyncio.sleep(3)  # the process it left behind would have written by now
        found = _snapshot(kept / "layer")
        assert found[".venv"] == f"->{victim}"
        assert found["node_modules/evil"] == f"->{victim}/secret.txt"
        assert "node_modules/pkg/index.js" in found and "sub/node_modules/a.js" in found
        for absent in ("calc.py", "notes.md", "pipe", "late.txt", "node_modules/l.js"):
            assert absent not in found, absent
        await driver.ask("yes", "Committed", 60)
        assert git(repo, "show", "HEAD:calc.py") == "# the sum"
        assert git(repo, "status", "--porcelain") == ""
        assert (repo / "notes.md").read_text() == "notes\n"
        # A second run has the setup layer below it and the same files of HEAD's.
        (repo / "notes.md").write_text("teh notes\n")
        git(repo, "commit", "-qam", "typo")
        card = await driver.ask("fix the typo in notes.md of evil", "Apply?", 300)
        assert "🧰" not in card and "notes.md +1 −1" in card and "calc.py" not in card, card
        await driver.ask("no", "Discarded")
    finally:
        await app.__aexit__(None, None, None)
    assert _snapshot(victim) == before


@pytest.mark.parametrize("overlay", [True, False])
def test_setup_layer_under_a_run_on_both_kinds(tmp_path: Path, overlay: bool) -> None:
    if overlay and os.geteuid() != 0:
        pytest.skip("an overlay needs root; the copy case runs everywhere")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "x").write_text("x\n")
    before = _snapshot(victim)
    path = make_repo(tmp_path / "ws", "r", {"sub/a.txt": "a\n", "app.py": "teh\n"})
    repo = Repo(path)
    owner = Owner(os.geteuid(), os.getegid())
    layers = Layers(tmp_path / "home", lambda: owner, overlay=overlay)
    setup_run = layers.open(repo, "setup", host_mounts=True)
    assert setup_run.kind == ("overlay" if overlay else "copy")
    tree = setup_run.tree
    (tree / ".venv" / "lib").mkdir(parents=True)
    (tree / ".venv" / "lib" / "dep.py").write_text("VALUE = 1\n")
    (tree / "sub" / "node_modules").mkdir()
    (tree / "sub" / "node_modules" / "m.js").write_text("m\n")
    (tree / "app.py").write_text("changed by setup\n")
    kept = layers.keep_setup(setup_run, "d1")
    setup_run.drop()
    assert sorted(__import__("json").loads((kept / "paths.json").read_text())) == [
        ".venv",
        "sub/node_modules",
    ]
    # The next HEAD makes sub a link out of the repository (a committed symlink).
    git(path, "rm", "-rq", "sub")
    os.symlink(victim, path / "sub")
    git(path, "add", "sub")
    git(path, "commit", "-qm", "sub is a link now")
    run = layers.open(repo, 1, host_mounts=True, setup=kept)
    try:
        assert (run.tree / ".venv" / "lib" / "dep.py").read_text() == "VALUE = 1\n"
        assert (run.tree / "app.py").read_text() == "teh\n"  # HEAD's, not setup's
        assert (run.tree / "sub").is_symlink() or run.kind == "overlay"
        (run.tree / "app.py").write_text("the\n")
        change = run.read(repo)
        assert [f.path for f in change.files] == ["app.py"], change.files
    finally:
        run.drop()
    assert _snapshot(victim) == before
