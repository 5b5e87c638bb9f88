"""The tool executor: the reads of one model turn run in parallel (observed overlapping:
they meet at a barrier none could pass alone), the writes in the model's order after
them; results go back in call order; cached reads hit until the repository changes or
any write runs."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from orchestrator.tools import ToolResult
from tests.agent.conftest import bodies, results_in_order
from tests.conftest import Driver
from tests.fakes.model_server import ScriptedModelServer, Text, ToolCall, Turn


def _probes(agent: Driver) -> list[tuple[str, str, float]]:
    """Register probe tools on the app's registry: (event, name, time) is recorded."""
    log: list[tuple[str, str, float]] = []
    barrier = asyncio.Barrier(3)
    tools = agent.services.planner.executor.tools

    @tools.tool("probe_read", "test probe", {"n": {"type": "string"}}, ["n"], kind="read")
    async def probe_read(ctx: Any, args: dict[str, Any]) -> ToolResult:
        log.append(("start", args["n"], time.monotonic()))
        # Three reads must all be running at once to get past this.
        async with asyncio.timeout(5):
            await barrier.wait()
        await asyncio.sleep(0.05)
        log.append(("end", args["n"], time.monotonic()))
        return ToolResult(f"read {args['n']}")

    @tools.tool("probe_write", "test probe", {"n": {"type": "string"}}, ["n"])
    async def probe_write(ctx: Any, args: dict[str, Any]) -> ToolResult:
        log.append(("start", args["n"], time.monotonic()))
        await asyncio.sleep(0.02)
        log.append(("end", args["n"], time.monotonic()))
        return ToolResult(f"wrote {args['n']}")

    return log


async def test_reads_overlap_and_writes_run_in_order_after(
    agent: Driver, model: ScriptedModelServer
) -> None:
    log = _probes(agent)
    model.script(
        Turn(
            ToolCall("probe_write", {"n": "w1"}),
            ToolCall("probe_read", {"n": "r1"}),
            ToolCall("probe_read", {"n": "r2"}),
            ToolCall("probe_write", {"n": "w2"}),
            ToolCall("probe_read", {"n": "r3"}),
        ),
        Text("done"),
    )
    await agent.ask("hello there, probe it", "done")
    # Results in the order of the calls, whatever order they ran in.
    assert results_in_order(bodies(model)[-1]) == [
        "wrote w1",
        "read r1",
        "read r2",
        "wrote w2",
        "read r3",
    ]
    starts = {n: t for e, n, t in log if e == "start"}
    ends = {n: t for e, n, t in log if e == "end"}
    reads = ("r1", "r2", "r3")
    # Overlap: every read started before any read ended.
    assert max(starts[r] for r in reads) < min(ends[r] for r in reads)
    # Writes after every read, in the model's order, one at a time.
    assert [n for e, n, _ in log if e == "start" and n.startswith("w")] == ["w1", "w2"]
    assert starts["w1"] >= max(ends[r] for r in reads)
    assert starts["w2"] >= ends["w1"]


async def test_a_write_that_ends_the_turn_skips_the_writes_after_it(
    agent: Driver, model: ScriptedModelServer
) -> None:
    log = _probes(agent)
    model.script(
        Turn(ToolCall("ask_user", {"question": "Which one?"}), ToolCall("probe_write", {"n": "w1"}))
    )
    await agent.ask("hello there, do both", "Which one?")
    assert not [n for _e, n, _t in log if n == "w1"]


async def test_cache_hits_until_a_write_or_a_change(
    agent: Driver, model: ScriptedModelServer, workspace: Path
) -> None:
    cache = agent.services.planner.executor.cache
    read = ToolCall("repo_read_file", {"repo": "demo", "path": "app.py"})
    model.script(Turn(read), Turn(read), Text("done"))
    await agent.ask("hello there, read app.py twice", "done")
    first, second = (results_in_order(b)[-1] for b in bodies(model)[-2:])
    assert first == second == "app.py:\n1: print('hi')"
    assert (cache.misses, cache.hits) == (1, 1)
    # Same arguments, another turn: still a hit (the repository did not change).
    model.script(Turn(read), Text("done again"))
    await agent.ask("hello there, once more", "done again")
    assert cache.hits == 2
    # The working tree changes: the repository's state differs, so a miss, fresh content.
    (workspace / "demo" / "app.py").write_text("print('changed')\n")
    model.script(Turn(read), Text("done 3"))
    await agent.ask("hello there, and now?", "done 3")
    assert results_in_order(bodies(model)[-1])[-1] == "app.py:\n1: print('changed')"
    assert (cache.misses, cache.hits) == (2, 2)
    # Any write empties the cache: the next read is a miss again.
    model.script(
        Turn(read), Turn(ToolCall("workspace_select", {"repo": "demo"})), Turn(read), Text("done 4")
    )
    await agent.ask("hello there, read, select, read", "done 4")
    assert (cache.misses, cache.hits) == (3, 3)  # hit, then (after the write) a miss
    assert len(cache) == 1
