"""Memory without working embeddings, through the whole app (issue 12): with no
endpoint configured, and with one that answers HTTP 200 without vectors (an error
object, an HTML page), /remember, /memory, /memory <words> and /forget N all work on
keyword search — never "Something went wrong"."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from orchestrator.config import Settings
from tests.conftest import Driver, start_driver
from tests.fakes.model_server import ScriptedModelServer


async def _round_trip(fetch: Driver) -> None:
    assert "Remembered #1" in await fetch.ask(
        "/remember the staging db listens on 5433", "Remembered"
    )
    assert "Remembered #2" in await fetch.ask("/remember pref: tabs over spaces", "Remembered")
    overview = await fetch.ask("/memory", "🧠")
    assert "2 memories" in overview and "#1 fact: the staging db" in overview
    found = await fetch.ask("/memory staging", "match")
    assert "#1 fact: the staging db listens on 5433" in found
    assert "Forgot #1" in await fetch.ask("/forget 1", "Forgot")
    assert "No memory #1" in await fetch.ask("/forget 1", "No memory")
    assert "1 memories" in await fetch.ask("/memory", "🧠")
    assert not any("Something went wrong" in said for said in fetch.seen), fetch.seen


async def test_forget_works_without_an_embedding_endpoint(fetch: Driver) -> None:
    await _round_trip(fetch)


@pytest.fixture
async def bad_embeddings(
    make_settings: Callable[..., Settings],
) -> AsyncIterator[tuple[Driver, ScriptedModelServer]]:
    async with ScriptedModelServer() as model:
        app, driver = await start_driver(make_settings(FETCH_EMBEDDING_BASE_URL=model.url + "/v1"))
        try:
            yield driver, model
        finally:
            await app.__aexit__(None, None, None)


@pytest.mark.parametrize("answer", ["error", "html"])
async def test_an_embedding_endpoint_answering_200_without_vectors_falls_back(
    bad_embeddings: tuple[Driver, ScriptedModelServer],
    answer: str,
) -> None:
    fetch, model = bad_embeddings
    model.embeddings.bad_200 = answer
    await _round_trip(fetch)
    assert model.embeddings.requests, "the endpoint was asked (and its answer refused)"
