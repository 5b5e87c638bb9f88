"""Hybrid search: ranking of keyword-only, semantic-only and both matches; the FTS-only
fallbacks; the two-stage (binary index) path; re-embedding when the model changes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from orchestrator.config import Settings
from orchestrator.memory import Memory, search
from tests.fakes.model_server import ScriptedModelServer
from tests.memory.conftest import Running, on_both_engines

QUERY = "postgres database error E4711"
BOTH = "postgres database error E4711 means the disk is full"
SEMANTIC = "our sqlite db and the mysql datastore"  # no word in common with the query
KEYWORD = "E4711 shows up in the print spooler log"  # a rare code in common, another topic
UNRELATED = "the weather is nice today"
# bm25 needs a corpus: with four rows a word in two of them has an idf of ~0.
FILLER = (
    "lunch is at noon on weekdays",
    "the cat sleeps on the sofa",
    "the owner reads diffs on the train",
    "invoices go out on the first of the month",
    "the garden needs water in summer",
    "meetings are on Tuesday mornings",
    "the laptop charger is in the drawer",
    "music helps with focus",
)


async def _fill(memory: Memory) -> dict[str, int]:
    ids = {}
    for name, text in (
        ("both", BOTH),
        ("semantic", SEMANTIC),
        ("keyword", KEYWORD),
        ("unrelated", UNRELATED),
    ):
        ids[name] = (await memory.write(text, "fact")).item.id
    for text in FILLER:
        await memory.write(text, "fact")
    return ids


@on_both_engines
async def test_hybrid_ranks_both_then_semantic_then_keyword(memory: Memory) -> None:
    ids = await _fill(memory)
    hits = await memory.search(QUERY, 10)
    order = [h.item.id for h in hits]
    assert order == [ids["both"], ids["semantic"], ids["keyword"]], hits
    both, semantic, keyword = hits
    assert both.keyword == 1.0 and both.vector > 0.8
    assert semantic.keyword == 0.0 and semantic.vector > 0.7  # found by meaning alone
    assert 0 < keyword.keyword < 1.0 and keyword.vector < 0.2  # found by the word alone
    # 0.7 vector + 0.3 keyword, as configured
    for h in hits:
        assert h.score == pytest.approx(0.7 * h.vector + 0.3 * h.keyword)
    assert memory.mode().startswith("hybrid")


@on_both_engines
async def test_results_carry_what_a_caller_needs(memory: Memory) -> None:
    await _fill(memory)
    (top, *_) = await memory.search(QUERY, 1)
    shown = top.as_dict()
    assert shown["source"] == "memory" and shown["content"] == BOTH
    assert set(shown) >= {"id", "source", "kind", "score", "content", "tags", "updated"}


@on_both_engines
async def test_keyword_only_without_an_embedding_endpoint(
    memory_settings: Callable[..., Settings],
) -> None:
    async with Running(memory_settings(embeddings=False)) as run:
        ids = await _fill(run.memory)
        hits = await run.memory.search(QUERY, 10)
        assert [h.item.id for h in hits] == [ids["both"], ids["keyword"]]
        assert all(h.vector == 0.0 for h in hits) and hits[0].score == 1.0
        assert "keyword-only (no embedding endpoint configured)" in run.memory.status_line()


async def test_keyword_only_without_sqlite_vec(
    memory_settings: Callable[..., Settings],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from orchestrator.memory import db

    monkeypatch.setattr(db, "_load_vec", lambda conn, can_load: "simulated: not installed")
    async with Running(memory_settings()) as run:
        assert "sqlite-vec unavailable: simulated" in run.memory.status_line()
        ids = await _fill(run.memory)
        hits = await run.memory.search(QUERY, 10)
        assert [h.item.id for h in hits][:1] == [ids["both"]]
        assert ids["semantic"] not in [h.item.id for h in hits]
        # Dedup still works: vectors are kept and compared in Python.
        again = await run.memory.write(BOTH + ".", "fact")
        assert again.merged and again.item.id == ids["both"]


@on_both_engines
async def test_embedding_endpoint_down_falls_back_and_catches_up(
    running: Running,
    model: ScriptedModelServer,
) -> None:
    memory = running.memory
    model.embeddings.fail = 503
    item = (await memory.write(SEMANTIC, "fact")).item
    assert "keyword-only for now" in memory.status_line()
    assert await memory.search("postgres database") == []  # no vector, no shared word
    model.embeddings.fail = None
    for _ in range(100):  # the background catch-up embeds it once the endpoint is back
        await asyncio.sleep(0.05)
        hits = await memory.search("postgres database")
        if hits:
            break
    assert [h.item.id for h in hits] == [item.id]


async def test_two_stage_binary_index_path(
    memory: Memory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ids = await _fill(memory)
    monkeypatch.setattr(search, "EXACT_MAX", 1)  # force the bit[] KNN + exact rerank
    hits = await memory.search(QUERY, 10)
    assert [h.item.id for h in hits] == [ids["both"], ids["semantic"], ids["keyword"]]


@on_both_engines
async def test_changing_the_model_reembeds_in_the_background(
    memory_settings: Callable[..., Settings],
) -> None:
    async with Running(memory_settings()) as run:
        ids = await _fill(run.memory)
    changed = memory_settings(
        FETCH__MEMORY__EMBEDDING_MODEL="other-model", FETCH__MEMORY__EMBEDDING_DIMENSIONS="256"
    )
    async with Running(changed) as run:
        progress = run.memory.reembed
        for _ in range(200):
            if not progress.running:
                break
            await asyncio.sleep(0.02)
        assert progress.error is None and progress.done == progress.total == 4 + len(FILLER)
        hits = await run.memory.search(QUERY, 10)
        assert [h.item.id for h in hits] == [ids["both"], ids["semantic"], ids["keyword"]]
        assert "other-model/256" in run.memory.status_line()


def test_fts_query_never_passes_syntax_through() -> None:
    assert search.fts_query('the "DROP" OR x* NEAR(a b) -- ') == '"drop" OR "near"'
    assert search.fts_query("the a of") is None
