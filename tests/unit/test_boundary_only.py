"""Only orchestrator/boundary/ touches what a kennel can write.

A run's folders (its layer's tree and upper folder, its CLI state) are the kennel's: the
host reads them as data in one package, with no-follow rules and bounds. Every other
module may only hand them on (to the kennel that binds them, to a harness's ``prepare``
that fills a fresh state folder before any kennel saw it); opening, walking, writing or
removing them anywhere else fails this test, naming the file and line.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("orchestrator", "kennel", "harnesses", "channels", "instincts", "core", "identity")
BOUNDARY = ROOT / "orchestrator" / "boundary"
# Attribute chains that name a kennel-writable folder: ``<x>.<attr>`` where x's name says
# it is a run's layer, a kennel layout or an exec spec.
FOLDER_ATTRS = {"tree", "state", "upper", "root", "state_host", "repo"}
OWNERS = ("layer", "layout", "spec")
FS_CALLS = {
    # pathlib
    "read_text", "read_bytes", "write_text", "write_bytes", "open", "iterdir", "glob",
    "rglob", "walk", "unlink", "rmdir", "mkdir", "touch", "rename", "replace", "chmod",
    "exists", "is_file", "stat", "lstat", "resolve", "readlink", "owner", "symlink_to",
    # os / shutil
    "listdir", "scandir", "remove", "removedirs", "makedirs", "chown", "lchown",
    "rmtree", "copytree", "copy", "copy2", "copyfile", "move", "fwalk",
}  # fmt: skip
# Where a kennel's folder may be handed on (never read here): the kennel binds it, the
# test run and the harness's prepare get it, a layout is computed from it.
SINKS = {"layout", "run", "ExecSpec", "exec", "prepare", "to_thread", "Layout"}
# Checks that only lstat (never follow, never open): the bwrap backend refuses a link.
CHECKS = {"is_symlink", "is_dir"}
KENNEL_BACKENDS = {"kennel/bwrap.py", "kennel/docker_backend.py", "kennel/local.py"}


def _is_folder(node: ast.AST) -> bool:
    if not isinstance(node, ast.Attribute) or node.attr not in FOLDER_ATTRS:
        return False
    base = node.value
    name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
    return any(owner in str(name).lower() for owner in OWNERS)


def _mentions(node: ast.AST) -> bool:
    return any(_is_folder(n) for n in ast.walk(node))


def _call_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return getattr(func, "id", "")


def _violations(path: Path, rel: str | None = None) -> list[str]:
    rel = rel or path.relative_to(ROOT).as_posix()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node)
        receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
        args = [*node.args, *(k.value for k in node.keywords)]
        touches = (receiver is not None and _mentions(receiver)) or any(map(_mentions, args))
        if not touches:
            continue
        if rel in KENNEL_BACKENDS and name in CHECKS:
            continue
        if name in FS_CALLS or name in CHECKS:
            found.append(f"{rel}:{node.lineno}: {name}() on a kennel's folder")
        elif rel.startswith("orchestrator/") and name not in SINKS and not _is_constructor(name):
            # Handing a kennel's folder to anything but a sink: that function could read it.
            found.append(f"{rel}:{node.lineno}: a kennel's folder passed to {name}()")
    return found


def _is_constructor(name: str) -> bool:
    return name[:1].isupper()


def _modules() -> list[Path]:
    out: list[Path] = []
    for package in PRODUCT:
        out += [
            p
            for p in sorted((ROOT / package).rglob("*.py"))
            if BOUNDARY not in p.parents and "data" not in p.relative_to(ROOT).parts
        ]
    return out


def test_no_module_but_the_boundary_touches_a_kennels_folders() -> None:
    modules = _modules()
    assert len(modules) > 100  # the scan sees the product, not an empty folder
    found = [v for path in modules for v in _violations(path)]
    assert found == [], "\n".join(found)


def test_the_scan_catches_a_read_of_a_layer(tmp_path: Path) -> None:
    # The rule itself, on code that breaks it: a read, a walk, a removal, a hand-over.
    bad = tmp_path / "probe.py"
    source = (
        "import os, shutil\n"
        "def f(handle, layout, spec, repo):\n"
        "    (handle.layer.tree / 'x').read_text()\n"
        "    os.walk(layout.state_host)\n"
        "    shutil.rmtree(spec.repo)\n"
        "    inspect(handle.layer.tree)\n"
        "    repo.path.read_text()\n"
    )
    bad.write_text(source)
    found = _violations(bad, "orchestrator/probe.py")
    assert [v.split(": ", 1)[1] for v in found] == [
        "read_text() on a kennel's folder",
        "walk() on a kennel's folder",
        "rmtree() on a kennel's folder",
        "a kennel's folder passed to inspect()",
    ], found
