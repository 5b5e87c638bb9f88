"""``FETCH__SECTION__KEY`` overrides: a scalar stays the text it is and the field's type
converts it, so a word YAML would turn into a boolean (off, no, yes, on) reaches a text
field as that word; lists and mappings are YAML."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ConfigError
from orchestrator.config import load_settings


@pytest.mark.parametrize("word", ["off", "auto", "required"])
def test_a_word_yaml_calls_boolean_stays_a_word(tmp_path: Path, word: str) -> None:
    settings = load_settings(
        None, {"FETCH_HOME": str(tmp_path), "FETCH__KENNEL__NETWORK_ISOLATION": word}
    )
    assert settings.kennel.network_isolation == word


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("false", False), ("no", False), ("off", False), ("true", True), ("1", True)],
)
def test_booleans_still_convert(tmp_path: Path, raw: str, expected: bool) -> None:
    settings = load_settings(None, {"FETCH_HOME": str(tmp_path), "FETCH__SCHEDULER__ENABLED": raw})
    assert settings.scheduler.enabled is expected


def test_numbers_lists_and_bad_values(tmp_path: Path) -> None:
    settings = load_settings(
        None,
        {
            "FETCH_HOME": str(tmp_path),
            "FETCH__HTTP__PORT": "8799",
            "FETCH__ALLOWLIST": "[whatsapp:4915100000001]",
        },
    )
    assert settings.http.port == 8799
    assert settings.allowlist == ("whatsapp:4915100000001",)
    with pytest.raises(ConfigError) as info:
        load_settings(None, {"FETCH_HOME": str(tmp_path), "FETCH__HTTP__PORT": "lots"})
    assert "FETCH__HTTP__PORT" in str(info.value)
