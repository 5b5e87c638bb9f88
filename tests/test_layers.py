"""The dependency rule, checked on the source: the kernel ``core`` imports nothing of
Fetch's own, and each plugin package imports only ``core`` and itself, never another
plugin and never the application ``orchestrator``.

Every import counts: module level, inside functions, under ``if TYPE_CHECKING:``, and
``importlib.import_module("...")`` / ``__import__("...")`` with a literal name.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Fetch's own top-level packages: every folder at the root with an __init__.py.
FETCH = frozenset(p.parent.name for p in ROOT.glob("*/__init__.py"))
KERNEL = "core"
PLUGINS = ("harnesses", "kennel", "identity", "skills", "channels", "instincts")
APPLICATION = "orchestrator"


@dataclass(frozen=True, slots=True)
class Import:
    file: str  # relative to the repository root
    line: int
    module: str  # the dotted name imported

    @property
    def package(self) -> str:
        return self.module.split(".", 1)[0]

    def __str__(self) -> str:
        return f"{self.file}:{self.line} imports {self.module}"


def imports_in(source: str, file: str, package: str) -> list[Import]:
    """Every import in ``source``; relative imports resolve inside ``package``."""
    found: list[Import] = []
    for node in ast.walk(ast.parse(source, filename=file)):
        if isinstance(node, ast.Import):
            found += [Import(file, node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            # A relative import cannot leave the top-level package it is in.
            name = ".".join(filter(None, (package, module))) if node.level else module
            found.append(Import(file, node.lineno, name))
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and _dynamic_import(node.func)
        ):
            found.append(Import(file, node.lineno, node.args[0].value))
    return found


def _dynamic_import(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id in {"__import__", "import_module"}
    return isinstance(func, ast.Attribute) and func.attr == "import_module"


def package_imports(package: str) -> list[Import]:
    files = sorted((ROOT / package).rglob("*.py"))
    assert files, f"no Python files found under {package}/"
    found: list[Import] = []
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        found += imports_in(path.read_text(encoding="utf-8"), rel, package)
    return found


def forbidden(package: str, allowed: set[str]) -> list[str]:
    return [
        f"{imp} (allowed: {', '.join(sorted(allowed))})"
        for imp in package_imports(package)
        if imp.package in FETCH and imp.package not in allowed
    ]


def test_the_kernel_imports_nothing_of_fetch_but_itself() -> None:
    bad = forbidden(KERNEL, {KERNEL})
    assert not bad, "core must not import other Fetch packages:\n" + "\n".join(bad)


@pytest.mark.parametrize("package", PLUGINS)
def test_a_plugin_imports_only_the_kernel_and_itself(package: str) -> None:
    bad = forbidden(package, {KERNEL, package})
    assert not bad, f"{package} may import only core and {package}:\n" + "\n".join(bad)


def test_no_plugin_and_not_the_kernel_imports_the_application() -> None:
    bad = [
        str(imp)
        for package in (KERNEL, *PLUGINS)
        for imp in package_imports(package)
        if imp.package == APPLICATION
    ]
    assert not bad, "the application is imported by a lower layer:\n" + "\n".join(bad)


def test_the_packages_are_the_ones_on_disk() -> None:
    assert {KERNEL, APPLICATION, *PLUGINS} <= FETCH


def test_every_kind_of_import_is_seen() -> None:
    # The check above is only as good as this walker: hidden imports must be found too.
    source = """
from __future__ import annotations
import os, orchestrator.config as cfg
from typing import TYPE_CHECKING
from . import sibling
from .sub import thing
if TYPE_CHECKING:
    from kennel.relay import ModelRelay
def later():
    from orchestrator.memory import Memory
    import importlib
    importlib.import_module("channels.whatsapp")
    __import__("skills")
"""
    found = {(i.line, i.module) for i in imports_in(source, "x/y.py", "harnesses")}
    assert {
        (3, "os"),
        (3, "orchestrator.config"),
        (5, "harnesses"),
        (6, "harnesses.sub"),
        (8, "kennel.relay"),
        (10, "orchestrator.memory"),
        (12, "channels.whatsapp"),
        (13, "skills"),
    } <= found
