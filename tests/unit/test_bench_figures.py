"""Issue 26.6: the figures bench/README.md quotes are the benchmarks' own output.

``python -m bench --write-readme`` writes them into the README's generated section from
what each benchmark returns (``bench.figures.FIGURES`` declares which numbers). This
test keeps that section honest without running or importing a benchmark: every figure
quoted there is declared for its benchmark, and every key of its name is one the
benchmark's module (or bench/_common.py's shared statistics) still writes, read from
their source with ``ast`` (bench/__main__.py's BENCHMARKS says which module is whose).
A key renamed or dropped by a benchmark fails here until the section is generated anew.
"""

from __future__ import annotations

import ast
import fnmatch
from functools import cache
from pathlib import Path

import pytest

from bench import figures as runner
from bench._common import figure_key, figures

BENCH = Path(runner.__file__).resolve().parent


@cache
def benchmarks() -> dict[str, str]:
    """bench/__main__.py's BENCHMARKS, read from its source: name -> the module whose
    ``render`` it uses (``"agent": (agent.run, agent.render, 10, 10)``)."""
    tree = ast.parse((BENCH / "__main__.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "BENCHMARKS":
            assert isinstance(node.value, ast.Dict)
            found: dict[str, str] = {}
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                assert isinstance(key, ast.Constant) and isinstance(value, ast.Tuple)
                render = value.elts[1]
                assert isinstance(render, ast.Attribute) and isinstance(render.value, ast.Name)
                found[str(key.value)] = render.value.id
            return found
    raise AssertionError("bench/__main__.py has no BENCHMARKS")


@cache
def _strings(path: Path) -> tuple[frozenset[str], frozenset[str]]:
    """The string literals of a module as figure keys: whole ones, and the leading text
    of f-strings (``f"p50_vs_{base}"`` -> ``p50_vs``) that keys are built from."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    inside: set[int] = set()
    heads: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            inside.update(id(v) for v in node.values)
            first = node.values[0] if node.values else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                heads.add(figure_key(first.value))
    whole = {
        figure_key(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inside
    }
    return frozenset(whole - {""}), frozenset(heads - {""})


def _module_of(bench: str) -> Path:
    return BENCH / f"{benchmarks()[bench]}.py"


def still_printed(name: str) -> bool:
    """``name`` is declared for its benchmark and each of its keys is still written."""
    bench, _, _rest = name.partition(".")
    if bench not in benchmarks() or not any(
        fnmatch.fnmatchcase(name, p) for p in runner.FIGURES.get(bench, ())
    ):
        return False
    whole, heads = _strings(_module_of(bench))
    shared, shared_heads = _strings(BENCH / "_common.py")
    whole, heads = whole | shared, heads | shared_heads

    def known(key: str) -> bool:
        if key.isdigit() or key in whole:  # a size (rows, files) or a literal key
            return True
        return any(key.startswith(h + "_") and key[len(h) + 1 :] in whole for h in heads)

    return all(known(key) for key in name.split(".")[1:])


def test_every_figure_the_readme_quotes_is_still_printed() -> None:
    quoted = runner.quoted_figures(runner.README.read_text(encoding="utf-8"))
    assert len(quoted) >= 50, "bench/README.md's generated section quotes no figures"
    stale = [name for name in quoted if not still_printed(name)]
    assert not stale, f"bench/README.md quotes figures no benchmark prints: {stale}"


def test_every_benchmark_declares_its_figures() -> None:
    assert set(runner.FIGURES) == set(benchmarks())
    assert all(runner.FIGURES.values())


@pytest.mark.parametrize(
    "name",
    [
        "agent.say_hello_bytes",  # a key agent.py never writes
        "agent.hello_bytes_total",
        "nosuch.hello_bytes",  # no such benchmark
        "agent.turns",  # written, but not declared a figure
    ],
)
def test_a_stale_or_undeclared_figure_is_caught(name: str) -> None:
    assert not still_printed(name)


def test_the_generator_writes_what_the_check_reads(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# Fetch benchmarks\n\nprose stays.\n", encoding="utf-8")
    meta = {"when": "2026-11-27T03:10:00+00:00", "git_head": "abc1234", "quick": True}
    meta |= {"loadavg_start": [1.0, 0, 0], "loadavg_end": [2.0, 0, 0]}
    result = {"hello_bytes": 7967, "hello_system_bytes": 1708, "turns": 10}
    order = list(benchmarks())
    runner.write_readme(
        {"meta": meta, "agent": result}, {"layer": "RuntimeError: no"}, order, readme
    )
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("# Fetch benchmarks\n\nprose stays.\n")
    assert runner.quoted_figures(text) == ["agent.hello_bytes", "agent.hello_system_bytes"]
    assert "    agent.hello_bytes: 7967\n" in text
    assert "**layer**: not run in the last pass (RuntimeError: no)" in text
    # A second pass of one benchmark keeps the other's block.
    result["hello_bytes"] = 8000
    runner.write_readme({"meta": meta, "agent": result}, {}, order, readme)
    again = readme.read_text(encoding="utf-8")
    assert "agent.hello_bytes: 8000" in again and "**layer**: not run" in again
    assert again.count(runner.BEGIN) == 1 and "\n\n\n" not in again  # no blank line gained
    assert [n for n, _v in figures("agent", result, runner.FIGURES["agent"])] == [
        "agent.hello_bytes",
        "agent.hello_system_bytes",
    ]
