"""Memory's own model calls in the ledger: an archive summary (through the provider
chain) and embeddings, against scripted endpoints on 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from orchestrator.app import SHIPPED_DATA
from orchestrator.config import Settings
from orchestrator.costs.ledger import CostLedger
from orchestrator.costs.prices import PriceTable, load_defaults
from orchestrator.costs.settings import BudgetSettings
from orchestrator.memory.embed import Embedder
from orchestrator.memory.summarize import Summarizer
from orchestrator.store import Store
from tests.fakes.model_server import Error, ScriptedModelServer, Text


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


async def test_summaries_and_embeddings_are_recorded_and_priced(
    model: ScriptedModelServer, make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    settings = make_settings(
        FETCH_MODEL_BASE_URL=model.url + "/v1",
        FETCH_MODEL="gpt-4o-mini",
        FETCH_EMBEDDING_BASE_URL=model.url + "/v1",
    )
    model.script(Error(503, "busy"), Text("They fixed a typo in README.md."))
    async with Store(tmp_path / "fetch.db") as store:
        prices = PriceTable(load_defaults(SHIPPED_DATA / "prices.yaml"), {})
        ledger = CostLedger(store.usage, prices, BudgetSettings(), "UTC")
        summarizer = Summarizer(settings)
        embedder = Embedder(settings.memory)
        summarizer.record = ledger.recorder("summarize")
        embedder.record = ledger.recorder("embed")
        try:
            said = await summarizer.summarize(
                [{"ts": 1.0, "direction": "in", "text": "fix the typo in README.md"}]
            )
            await embedder.embed(["fix the typo", "in README.md"])
        finally:
            await summarizer.close()
            await embedder.close()
        rows = list(reversed(await store.usage.recent(10)))
    assert said == "They fixed a typo in README.md."  # the chain's second round
    assert [(r.source, r.status, r.model) for r in rows] == [
        ("summarize", 503, "gpt-4o-mini"),
        ("summarize", 200, "gpt-4o-mini"),
        ("embed", 200, "text-embedding-3-small"),
    ]
    summary, embedded = rows[1], rows[2]
    assert summary.cost == pytest.approx(
        (summary.tokens_in * 0.15 + summary.tokens_out * 0.60) / 1_000_000
    )
    assert embedded.tokens_in > 0 and embedded.tokens_out == 0
    assert embedded.cost == pytest.approx(embedded.tokens_in * 0.02 / 1_000_000)
