"""Bad input in files a person or a repository wrote gets one clear line: a key written
twice, nesting deep enough to exhaust the parser, an id past any SQLite can hold."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from core import yamlload
from core.errors import ConfigError
from orchestrator.config import load_settings


def test_a_key_written_twice_is_an_error() -> None:
    with pytest.raises(yaml.YAMLError, match="'owner' is written twice"):
        yamlload.safe_load("owner: me\nowner: you\n")
    assert yamlload.safe_load("a: {b: 1}\nc: [1, 2]\n") == {"a": {"b": 1}, "c": [1, 2]}


def test_a_deep_nesting_is_an_error_not_a_traceback() -> None:
    deep = "a: " + "[" * 5000 + "]" * 5000 + "\n"
    with pytest.raises(yaml.YAMLError, match="nested too deeply"):
        yamlload.safe_load(deep)


def test_the_config_file_names_the_problem(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("timezone: UTC\ntimezone: Europe/Berlin\n")
    with pytest.raises(ConfigError) as err:
        load_settings(config, env={"FETCH_HOME": str(tmp_path / "home")})
    assert "written twice" in str(err.value) and str(config) in str(err.value)


def test_bwrap_installed_later_is_seen_without_a_restart(monkeypatch: pytest.MonkeyPatch) -> None:
    from kennel import bwrap

    monkeypatch.setattr(bwrap, "_STARTS", [])
    monkeypatch.setattr(bwrap, "bwrap_path", lambda: None)
    assert bwrap.probe() is not None and "not installed" in str(bwrap.probe())
    monkeypatch.setattr(bwrap, "_probe", lambda: None)  # now it is, and starts
    assert bwrap.probe() is None and bwrap._STARTS == [True]
