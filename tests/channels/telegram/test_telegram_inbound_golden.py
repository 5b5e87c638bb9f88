"""Golden mapping: ``fixtures/inbound/<case>.update.json`` (real Bot API update shapes)
must become exactly ``<case>.expected.json`` (``null``: nothing is delivered)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from channels.telegram.updates import to_inbound

FIXTURES = Path(__file__).parent / "fixtures" / "inbound"
CASES = sorted(p.name.removesuffix(".update.json") for p in FIXTURES.glob("*.update.json"))
NOW = 1700000500.0  # button presses carry no date: they are stamped on arrival


def test_every_case_has_an_expectation() -> None:
    assert len(CASES) >= 10
    assert {p.name.removesuffix(".expected.json") for p in FIXTURES.glob("*.expected.json")} == set(
        CASES
    )


@pytest.mark.parametrize("case", CASES)
def test_update_maps_to_expected_inbound(case: str) -> None:
    update = json.loads((FIXTURES / f"{case}.update.json").read_text(encoding="utf-8"))
    expected = json.loads((FIXTURES / f"{case}.expected.json").read_text(encoding="utf-8"))
    inbound = to_inbound(update, "42", NOW)
    got = None
    if inbound is not None:
        got = asdict(inbound)
        got["attachments"] = list(got["attachments"])  # JSON has lists, not tuples
    assert got == expected
