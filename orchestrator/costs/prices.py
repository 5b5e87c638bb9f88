"""The price table: the shipped defaults (data/prices.yaml) under the
owner's ``prices:``, and what a call cost.

A model is found by its exact name, else by the longest known name it starts with at a
boundary (``-``, ``.``, ``:``, ``@``), so dated versions (``gpt-4o-2024-08-06``) find
their family without ``o1`` pricing ``o1x``. A ``vendor/`` prefix (OpenRouter,
``models/`` for Gemini) is dropped first. A model found nowhere costs 0, is warned about
once, and ``/cost`` names it as unpriced.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import yaml

from core import yamlload
from orchestrator.costs.settings import Price

log = logging.getLogger(__name__)
PER = 1_000_000
BOUNDARY = "-.:@"
UNPRICED = (
    "no price for model %r: its calls count as $0; add it under prices: "
    "in fetch.yaml (USD per 1M input and output tokens)"
)


def load_defaults(path: Path) -> dict[str, Price]:
    """The shipped table; a broken file is a bug of ours, said clearly."""
    try:
        raw = yamlload.safe_load(path.read_text(encoding="utf-8")) or {}
        return {str(k).lower(): Price.model_validate(v) for k, v in raw.items()}
    except (OSError, ValueError, AttributeError, yaml.YAMLError) as err:
        log.error("price table %s cannot be read (%s): every model is unpriced", path, err)
        return {}


def _bare(model: str) -> str:
    return model.strip().lower().rsplit("/", 1)[-1]


class PriceTable:
    def __init__(self, defaults: Mapping[str, Price], overrides: Mapping[str, Price]) -> None:
        self._prices = {**defaults, **{k.lower(): v for k, v in overrides.items()}}
        # Longest first, so the most specific family wins.
        self._names = sorted(self._prices, key=len, reverse=True)
        self._warned: set[str] = set()

    def price(self, model: str) -> Price | None:
        name = _bare(model)
        if not name:
            return None
        exact = self._prices.get(name) or self._prices.get(model.strip().lower())
        if exact is not None:
            return exact
        for known in self._names:
            if name.startswith(known) and name[len(known)] in BOUNDARY:
                return self._prices[known]
        return None

    def priced(self, model: str) -> bool:
        return self.price(model) is not None

    def warn_unpriced(self, models: list[str]) -> None:
        """The configured models without a price, warned about at start (once each):
        not by the first message, which should not pay for a log line."""
        for model in models:
            if model and not self.priced(model) and model not in self._warned:
                self._warned.add(model)
                log.warning(UNPRICED, model)

    def cost(self, model: str, tokens_in: int, tokens_out: int) -> float:
        """USD for one call; 0 (warned once per model) when the model has no price."""
        price = self.price(model)
        if price is None:
            if (tokens_in or tokens_out) and model not in self._warned:
                self._warned.add(model)
                log.warning(UNPRICED, model)
            return 0.0
        return (tokens_in * price.input + tokens_out * price.output) / PER
