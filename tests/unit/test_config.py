"""Config: YAML + env, validated; a bad value names the file, the key and what is expected."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ConfigError
from orchestrator.config import load_settings


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


def test_defaults_without_a_file(tmp_path: Path) -> None:
    s = load_settings(None, {"FETCH_HOME": str(tmp_path)})
    assert s.home_dir == tmp_path.resolve()
    assert s.workspace_dir == (tmp_path / "workspace").resolve()
    assert s.model.base_url is None and s.model.max_iterations == 25
    assert s.kennel.backend == "auto"


def test_file_then_env_overrides(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "model:\n  name: from-file\n  base_url: http://x/v1\napprovals:\n  ttl_seconds: 120\n",
    )
    s = load_settings(path, {"FETCH_MODEL": "from-env", "FETCH__APPROVALS__TTL_SECONDS": "90"})
    assert s.model.name == "from-env" and s.model.base_url == "http://x/v1"
    assert s.approvals.ttl_seconds == 90


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        ("model:\n  max_iterations: lots\n", "model.max_iterations", "valid integer"),
        ("model:\n  max_iterations: 99\n", "model.max_iterations", "less than or equal to 25"),
        ("kennel:\n  backend: vm\n", "kennel.backend", "'local' or 'unsafe-local'"),
        ("gateway:\n  rate_per_minute: -1\n", "gateway.rate_per_minute", "greater than 0"),
        ("surprise: 1\n", "surprise", "Extra inputs are not permitted"),
        ("- just\n- a list\n", "(top level)", "mapping"),
        ("model: [unclosed\n", "line", "not valid YAML"),
    ],
)
def test_bad_file_names_file_key_and_expectation(
    tmp_path: Path, text: str, key: str, words: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_settings(path, {})
    message = str(info.value)
    assert str(path) in message and key in message and words in message


def test_bad_env_value_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(None, {"FETCH_HOME": str(tmp_path), "FETCH_KENNEL": "chroot"})
    assert "environment FETCH_KENNEL" in str(info.value)
    assert "kennel.backend" in str(info.value)


def test_explicit_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_settings(None, {"FETCH_CONFIG": str(tmp_path / "nope.yaml")})
