"""What the memory blocks' store (``BlockPort``) promises, asserted for ``SqliteBlocks``
on a real file and for ``MemoryBlocks`` alike: numbered versions, compare-and-swap,
history newest first, one block never touching another."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orchestrator.store import Store
from orchestrator.store.blocks import BlockPort, BlockVersion
from orchestrator.store.memory import MemoryBlocks
from tests.store.conftest import ALL, engine_store

T0 = 1_767_258_000.0


@pytest.fixture(params=ALL)
async def blocks(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BlockPort]:
    if request.param != "memory":
        async with engine_store(request.param, tmp_path, request) as store:
            yield store.blocks
    else:
        yield MemoryBlocks()


async def test_nothing_written_means_no_heads_no_history(blocks: BlockPort) -> None:
    assert await blocks.heads() == []
    assert await blocks.history("persona", "") == []
    assert await blocks.version("persona", "", 1) is None


async def test_versions_are_numbered_per_block_and_kept(blocks: BlockPort) -> None:
    one = await blocks.commit(
        "persona", "", expected=0, text="terse", author="owner", change="set", at=T0
    )
    assert one == BlockVersion("persona", "", 1, "terse", "owner", "set", T0, None)
    two = await blocks.commit(
        "persona",
        "",
        expected=1,
        text="terse\nfriendly",
        author="fetch for owner",
        change="append",
        at=T0 + 1,
    )
    assert two is not None and two.number == 2
    demo = await blocks.commit(
        "project", "demo", expected=0, text="flask app", author="owner", change="set", at=T0 + 2
    )
    assert demo is not None and demo.number == 1  # numbered per block
    back = await blocks.commit(
        "persona",
        "",
        expected=2,
        text="terse",
        author="owner",
        change="revert",
        restored=1,
        at=T0 + 3,
    )
    assert back == BlockVersion("persona", "", 3, "terse", "owner", "revert", T0 + 3, 1)
    heads = {(h.kind, h.scope): (h.number, h.text) for h in await blocks.heads()}
    assert heads == {("persona", ""): (3, "terse"), ("project", "demo"): (1, "flask app")}
    history = await blocks.history("persona", "")
    assert [(v.number, v.author, v.change) for v in history] == [
        (3, "owner", "revert"),
        (2, "fetch for owner", "append"),
        (1, "owner", "set"),
    ]
    assert [v.number for v in await blocks.history("persona", "", limit=2)] == [3, 2]
    assert await blocks.version("persona", "", 2) == two
    assert await blocks.version("persona", "", 4) is None
    assert await blocks.version("project", "other", 1) is None


async def test_a_stale_writer_writes_nothing(blocks: BlockPort) -> None:
    await blocks.commit("owner", "", expected=0, text="a", author="owner", change="set")
    # Both read version 1; the first to commit wins, the second is told and writes nothing.
    won = await blocks.commit("owner", "", expected=1, text="b", author="owner", change="set")
    lost = await blocks.commit("owner", "", expected=1, text="c", author="alice", change="set")
    assert won is not None and lost is None
    assert await blocks.commit("owner", "", expected=0, text="d", author="x", change="set") is None
    assert await blocks.commit("owner", "", expected=5, text="e", author="x", change="set") is None
    assert [v.text for v in await blocks.history("owner", "")] == ["b", "a"]
    assert [h.text for h in await blocks.heads()] == ["b"]
    # A block never written cannot be committed at a later version either.
    assert (
        await blocks.commit("project", "x", expected=3, text="t", author="o", change="set") is None
    )
    assert [h.kind for h in await blocks.heads()] == ["owner"]


async def test_sqlite_versions_survive_reopening_the_file(tmp_path: Path) -> None:
    path = tmp_path / "fetch.db"
    async with Store(path) as store:
        await store.blocks.commit(
            "persona", "", expected=0, text="v1", author="owner", change="set"
        )
        await store.blocks.commit(
            "persona", "", expected=1, text="v2", author="fetch for owner", change="set"
        )
    async with Store(path) as store:
        assert [v.text for v in await store.blocks.history("persona", "")] == ["v2", "v1"]
        assert [h.number for h in await store.blocks.heads()] == [2]
        assert await store.db.schema_version() >= 8
