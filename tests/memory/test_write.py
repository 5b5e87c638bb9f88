"""Persistent memories: write, dedup by similarity, forget, overview."""

from __future__ import annotations

from collections.abc import Callable

from orchestrator.config import Settings
from orchestrator.memory import Memory
from tests.fakes.embeddings import embed
from tests.memory.conftest import on_both_engines

pytestmark = on_both_engines


def _cos(a: str, b: str) -> float:
    return sum(x * y for x, y in zip(embed(a), embed(b), strict=True))


async def test_near_duplicate_updates_instead_of_adding(memory: Memory) -> None:
    first = await memory.write(
        "The staging database of the shop listens on port 5433 and is only reachable over the VPN",
        "fact",
        ("infra",),
    )
    assert not first.merged
    # One word changed: above 0.95 with the fake's embeddings.
    again = (
        "The staging database of the shop listens on port 5433 and is only reachable "
        "through the VPN"
    )
    assert _cos(first.item.content, again) >= 0.95
    second = await memory.write(again, "fact", ("db",))
    assert second.merged and second.item.id == first.item.id
    assert second.similarity >= 0.95
    assert second.item.content == again  # the newer wording wins
    assert set(second.item.tags) == {"infra", "db"}
    counts, newest = await memory.overview()
    assert counts == {"fact": 1} and [i.id for i in newest] == [first.item.id]


async def test_different_memories_are_kept_apart(memory: Memory) -> None:
    a = await memory.write("The owner prefers tabs over spaces", "preference")
    b = await memory.write("Run pytest with -x to stop at the first failure", "learning")
    assert _cos(a.item.content, b.item.content) < 0.5
    assert not b.merged and a.item.id != b.item.id
    counts, _ = await memory.overview()
    assert counts == {"preference": 1, "learning": 1}


async def test_threshold_is_configurable(memory_settings: Callable[..., Settings]) -> None:
    from tests.memory.conftest import Running

    async with Running(memory_settings(FETCH__MEMORY__DEDUP_THRESHOLD="0.3")) as run:
        a = await run.memory.write("the staging database runs on port 5433")
        b = await run.memory.write("the production database runs on port 5432")
        assert b.merged and b.item.id == a.item.id


async def test_forget(memory: Memory) -> None:
    kept = await memory.write("Deploys happen on Fridays", "fact")
    gone = await memory.write("The API key rotates monthly", "fact")
    forgotten = await memory.forget(gone.item.id)
    assert forgotten is not None and forgotten.id == gone.item.id
    assert await memory.forget(gone.item.id) is None
    hits = await memory.search("API key rotates")
    assert [h.item.id for h in hits] == []
    assert [h.item.id for h in await memory.search("deploys Fridays")] == [kept.item.id]
