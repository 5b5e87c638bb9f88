"""A setup script is proposed once per repository, and after that no task pays a git call
to find out: the mark is one stat."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.boundary.gitops import Repo
from orchestrator.boundary.layer import Layers
from orchestrator.config import Settings
from orchestrator.task import setup as setup_mod
from tests.conftest import make_repo


async def test_proposed_once_then_no_git_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make_repo(tmp_path, "app", {"requirements.txt": "six\n", "a.py": "x = 1\n"})
    layers = Layers(tmp_path / "home", lambda: None, overlay=False)
    settings = Settings().kennel.setup
    setup = setup_mod.Setup(None, layers, settings, tmp_path / "logs")  # type: ignore[arg-type]
    repo = Repo(path)

    first = await setup.propose_once(repo)
    assert first is not None and "pip install -r requirements.txt" in first

    calls: list[Repo] = []
    real = setup_mod.proposal

    def counting(r: Repo) -> str | None:
        calls.append(r)
        return real(r)

    monkeypatch.setattr(setup_mod, "proposal", counting)
    assert await setup.propose_once(repo) is None
    assert await setup.propose_once(repo) is None
    assert calls == []
