"""The figures of ``python -m bench``: which numbers of each benchmark's result are its
figures (``FIGURES``), and bench/README.md's generated section that quotes them.

A run prints each benchmark's figures as ``name: value`` lines after its table;
``python -m bench --write-readme`` writes them into the section between ``BEGIN`` and
``END``, one block per benchmark (a block of a benchmark not in this run is kept, one
that failed says so in place of its old figures, one of a benchmark that is gone goes).
Stdlib only and no benchmark imported, so tests/unit/test_bench_figures.py can check
the section quickly.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from bench._common import figure_line, figures

# Which numbers of each benchmark's result are its figures: patterns (fnmatch) over the
# names ``bench.key.key`` of its numeric leaves (keys as bench._common.figure_key spells
# them). What matches is printed as ``name: value`` and quoted in bench/README.md.
FIGURES: dict[str, tuple[str, ...]] = {
    "roundtrip": (
        "roundtrip.stats.*.p50",
        "roundtrip.stats.*.p99",
        "roundtrip.ratios.*.p50_vs_aiosqlite_txn",
    ),
    "coldstart": (
        "coldstart.stats.*.p50",
        "coldstart.ratios.p50_*",
        "coldstart.fetch_beyond_import_p50_ms",
        "coldstart.stop_after_eof.p50",
    ),
    "memory": ("memory.stats.*.vmrss", "memory.ratios.*", "memory.fetch_minus_*"),
    "memory_search": (
        "memory_search.sizes.*.search_ms.p99",
        "memory_search.sizes.*.numpy_ms.p99",
        "memory_search.sizes.*.recall_at_10",
    ),
    "memory_scale": (
        "memory_scale.sizes.*.remember_ms.p99",
        "memory_scale.sizes.*.old_repeat_ms.p99",
        "memory_scale.sizes.*.search_ms.p99",
        "memory_scale.sizes.*.old_search_ms.p99",
    ),
    "memory_pg": (
        "memory_pg.hybrid_ms.p99",
        "memory_pg.keyword_ms.p99",
        "memory_pg.exact_ms.p50",
        "memory_pg.recall_at_10",
        "memory_pg.remember_ms.p99",
        "memory_pg.copy_s",
        "memory_pg.hnsw_s",
    ),
    "kennel_start": (
        "kennel_start.start.ms.*.p50",
        "kennel_start.start.overhead_p50_ms.*",
        "kennel_start.ms.*.p50",
        "kennel_start.ratios_p50.*",
    ),
    "layer": ("layer.layer.ms.*.*.*.p50",),
    "mcp": ("mcp.direct_ms.p50", "mcp.relay_ms.p50", "mcp.added_p50_ms", "mcp.ratio_p50"),
    "setup": (
        "setup.backends.*.stats.*.p50",
        "setup.backends.*.repeat_over_baseline",
        "setup.backends.*.first_over_repeat",
    ),
    "scheduler": (
        "scheduler.burst.all_fired_seconds",
        "scheduler.burst.jobs_per_second",
        "scheduler.burst.ratio_vs_txn",
        "scheduler.steady.lateness_ms.p99",
        "scheduler.steady.baseline_sleep_ms.p99",
        "scheduler.steady.p99_ratio",
    ),
    "flood": ("flood.*.quiet_ms.p50", "flood.*.quiet_ms.p99", "flood.*.flood_ms.p[59]*"),
    "agent": ("agent.hello_*", "agent.last_turn_bytes"),
    "model_path": (
        "model_path.first_*",
        "model_path.idle_warm_ms.p50",
        "model_path.idle_post_ms.p50",
        "model_path.latency_ms.*.p50",
        "model_path.latency_ms.*.p99",
        "model_path.cpu_ms.*.mean",
        "model_path.knee.*",
    ),
    "prompt_cache": ("prompt_cache.*.hit_ratio", "prompt_cache.*.summary_calls_per_100_turns"),
    "dashboard": ("dashboard.pages.*.p95", "dashboard.first_costs_ms", "dashboard.worst_p95"),
    "skills": (
        "skills.cases.*.request_bytes",
        "skills.cases.*.system_bytes",
        "skills.bytes_per_skill",
        "skills.ratio_50_over_shipped",
    ),
    "costs": ("costs.queries.*.p50", "costs.queries.*.p99", "costs.baseline_ms.p50"),
    "webchat": ("webchat.stats.*.p50", "webchat.stats.*.p99", "webchat.ratios.*.p50"),
    "voice": ("voice.stats.*.p50", "voice.stats.*.p99", "voice.ratios.*.p50"),
}
README = Path(__file__).resolve().parent / "README.md"
BEGIN = "<!-- figures:begin (written by `python -m bench --write-readme`: do not edit) -->"
END = "<!-- figures:end -->"
_BLOCK = re.compile(r"^\*\*([a-z_]+)\*\*")
FIGURE_LINE = re.compile(r"^    ([a-z0-9_.]+): (-?[0-9][0-9.e+-]*)$")


def readme_section(text: str) -> tuple[str, str, str]:
    """bench/README.md as (before, the generated section's body, after)."""
    if BEGIN not in text or END not in text:
        return text.rstrip("\n") + "\n\n## Figures (generated)\n\n", "", "\n"
    head, rest = text.split(BEGIN, 1)
    body, tail = rest.split(END, 1)
    return head, body, tail


def readme_blocks(body: str) -> dict[str, str]:
    """The generated section's blocks, one per benchmark: ``**name** ...`` and its lines."""
    blocks: dict[str, str] = {}
    name = None
    for line in body.strip("\n").splitlines():
        if match := _BLOCK.match(line):
            name = match.group(1)
            blocks[name] = ""
        if name is not None:
            blocks[name] += line + "\n"
    # Blank lines between blocks are the writer's: kept ones must not gain one a pass.
    return {name: block.rstrip("\n") + "\n" for name, block in blocks.items()}


def quoted_figures(text: str) -> list[str]:
    """The figure names quoted in bench/README.md's generated section."""
    _head, body, _tail = readme_section(text)
    return [m.group(1) for line in body.splitlines() if (m := FIGURE_LINE.match(line))]


def write_readme(
    report: dict[str, Any], failed: dict[str, str], order: list[str], readme: Path = README
) -> None:
    """Rewrite the blocks of the benchmarks of this run in README's generated section;
    those not run keep theirs, one that failed says so instead of old figures."""
    meta = report["meta"]
    head, body, tail = readme_section(readme.read_text(encoding="utf-8"))
    blocks = readme_blocks(body)
    run = (
        f"{meta['when'][:16].replace('T', ' ')} UTC, git {meta['git_head']}"
        f"{', --quick' if meta['quick'] else ''}, 1-min load {meta['loadavg_start'][0]:.1f}"
        f" -> {meta['loadavg_end'][0]:.1f} on {os.cpu_count()} cpus"
    )
    for name in order:
        if name in failed:
            blocks[name] = f"**{name}**: not run in the last pass ({failed[name]})\n"
        elif name in report:
            lines = [
                figure_line(n, v) for n, v in figures(name, report[name], FIGURES.get(name, ()))
            ]
            blocks[name] = f"**{name}** ({run}):\n\n" + "".join(f"    {x}\n" for x in lines)
    # A benchmark that is gone takes its figures with it.
    ordered = [blocks[n] for n in order if n in blocks]
    readme.write_text(
        head + BEGIN + "\n\n" + "\n".join(ordered) + "\n" + END + tail, encoding="utf-8"
    )
