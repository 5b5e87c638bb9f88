"""The orchestrator model's chain of OpenAI-compatible endpoints, as configured.

``model.providers`` lists them in the order they are tried::

    model:
      name: gpt-4o-mini              # the default model of every entry
      providers:
        - {name: openai, base_url: https://api.openai.com/v1, api_keys: [sk-a, sk-b]}
        - {name: local, base_url: http://127.0.0.1:11434/v1, model: qwen2.5, timeout: 120}

Today's single endpoint (``model.base_url`` / ``api_key``, or ``FETCH_MODEL_BASE_URL``)
is a one-entry chain named ``default``. Kept free of the openai SDK: reading the config
must not import it.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, field_validator, model_validator

from core.settings import StrictSettings

NAME = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")


class ProviderEntry(StrictSettings):
    """One endpoint of the chain."""

    name: str
    base_url: str
    api_keys: tuple[str, ...] = ()  # tried in turn: a 401 parks one, a 429 moves on
    model: str | None = None  # default: model.name
    timeout: float | None = Field(None, gt=0, le=3600)  # seconds; default model.timeout
    # The model takes image content (a screenshot the owner sent); else it is told in
    # words that an image came (orchestrator/agent/attached.py).
    images: bool = False

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        if not NAME.match(value):
            raise ValueError("1-40 letters, digits, '.', '_' or '-' (e.g. openai, local)")
        return value

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not re.match(r"^https?://[^\s/]+", value):
            raise ValueError("an http:// or https:// URL (e.g. https://api.openai.com/v1)")
        return value

    @field_validator("api_keys")
    @classmethod
    def _keys(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not k.strip() for k in value):
            raise ValueError("an empty key; leave api_keys out for an endpoint without keys")
        if len(set(value)) != len(value):
            raise ValueError("the same key twice")
        return value

    @model_validator(mode="before")
    @classmethod
    def _one_way_to_give_keys(cls, data: Any) -> Any:
        """``api_key: k`` is the same as ``api_keys: [k]``."""
        if isinstance(data, dict) and "api_key" in data:
            data = dict(data)
            key = data.pop("api_key")
            if data.get("api_keys"):
                raise ValueError("give either api_key or api_keys, not both")
            data["api_keys"] = [key] if key else []
        return data


def check_chain(entries: tuple[ProviderEntry, ...], base_url: str | None) -> None:
    """The chain's own rules, raised as ValueError for the settings' validator."""
    if entries and base_url:
        raise ValueError(
            "set either model.base_url (one endpoint) or model.providers (a chain), not "
            "both; put the base_url endpoint in the list"
        )
    names = [e.name for e in entries]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"model.providers names must differ: {', '.join(twice)} twice")
