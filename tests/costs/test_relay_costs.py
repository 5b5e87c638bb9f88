"""The harnesses' calls in the ledger: the real relay (kennel/relay.py) on a unix socket,
a scripted Anthropic upstream on 127.0.0.1, the app's ledger wired as the app wires it
(``on_call`` records, ``gate`` refuses once the task's budget is spent)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from kennel.relay import ModelRelay
from orchestrator.app import SHIPPED_DATA
from orchestrator.costs.ledger import CostLedger
from orchestrator.costs.prices import PriceTable, load_defaults
from orchestrator.costs.settings import BudgetSettings
from orchestrator.store import Store
from tests.fakes.model_server import ScriptedModelServer, Text

SONNET_IN, SONNET_OUT = 3.00, 15.00
SECRET = "run-secret-of-the-costs-tests"  # the key a run's CLI holds (RelaySpec.secret)


@pytest.fixture
async def vendor() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


async def _ask(sock: Path) -> tuple[int, dict[str, object]]:
    body = {
        "model": "claude-sonnet-4-5-20250929",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "fix the typo"}],
    }
    async with (
        aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=str(sock))) as client,
        client.post("http://relay/v1/messages", json=body, headers={"x-api-key": SECRET}) as resp,
    ):
        return resp.status, await resp.json()


async def test_relayed_calls_are_priced_per_task_and_a_spent_budget_refuses_the_next(
    vendor: ScriptedModelServer, tmp_path: Path
) -> None:
    vendor.script(Text("done"), Text("never sent"))
    said: list[str] = []
    async with Store(tmp_path / "fetch.db") as store:
        prices = PriceTable(load_defaults(SHIPPED_DATA / "prices.yaml"), {})
        ledger = CostLedger(
            store.usage, prices, BudgetSettings(task_usd=0.00001), "UTC", warn=said.append
        )
        relay = ModelRelay(
            socket_path=tmp_path / "r.sock",
            upstream=vendor.url,
            provider="anthropic",
            api_key="sk-real",
            secret=SECRET,
            harness="claude-code",
            task_id=7,
            log_path=tmp_path / "relay.jsonl",
            on_call=ledger.on_relay_call,
            gate=ledger.gate(7),
        )
        async with relay:
            first, _ = await _ask(relay.socket_path)
            second, refusal = await _ask(relay.socket_path)
        rows = list(reversed(await store.usage.recent(10)))
    assert first == 200 and second == 402  # not 429: the CLIs would retry that
    error = refusal["error"]
    assert isinstance(error, dict) and error["type"] == "budget_exceeded"
    assert str(error["message"]).startswith("Fetch: task budget of $0.000010 reached for task #7")
    assert len(vendor.model_requests) == 1  # the refused call never reached the vendor
    paid, refused = rows
    assert (paid.source, paid.task, paid.provider, paid.status) == ("relay", 7, "anthropic", 200)
    assert paid.model == "claude-sonnet-4-5-20250929" and paid.latency_ms > 0
    assert paid.tokens_in > 0 and paid.tokens_out > 0
    assert paid.cost == pytest.approx(
        (paid.tokens_in * SONNET_IN + paid.tokens_out * SONNET_OUT) / 1_000_000
    )
    assert (refused.status, refused.cost, refused.task) == (402, 0.0, 7)
    # relay.jsonl keeps its own record as before
    logged = [json.loads(x) for x in (tmp_path / "relay.jsonl").read_text().splitlines()]
    assert [e["status"] for e in logged] == [200, 402]
    assert len(said) == 1 and "task #7's budget" in said[0] and said[0].startswith("🛑")


async def test_a_ledger_that_fails_never_breaks_the_call(
    vendor: ScriptedModelServer, tmp_path: Path
) -> None:
    def broken(entry: object) -> None:
        raise RuntimeError("disk on fire")

    relay = ModelRelay(
        socket_path=tmp_path / "r.sock",
        upstream=vendor.url,
        provider="anthropic",
        api_key="k",
        secret=SECRET,
        harness="claude-code",
        task_id=1,
        log_path=tmp_path / "relay.jsonl",
        on_call=broken,
    )
    async with relay:
        status, _ = await _ask(relay.socket_path)
    assert status == 200
