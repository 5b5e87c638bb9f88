"""require_binary: skip locally, fail under CI=true."""

from __future__ import annotations

import pytest

from tests.fakes.require import require_binary


def test_found_binary_is_returned() -> None:
    assert require_binary("sh").endswith("/sh")


def test_missing_binary_skips_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no-such-cli"):
        require_binary("no-such-cli")


def test_missing_binary_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must install it"):
        require_binary("no-such-cli")
