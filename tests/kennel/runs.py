"""Real runs for the kennel tests, made the way the runner makes them
(orchestrator/task/runner.py): a run's own layer over the owner's repository
(``build_layers(home, kennel).open``: an overlay where the kennel sees host mounts and
Fetch is root, else a copy), a fresh state folder for the harness
(``layer.fresh_state``), the kennel's layout for that tree, and an ``ExecSpec`` whose
repo is the run's tree and whose ``git`` is the owner's ``.git`` (bwrap shows it
read-only; the other backends show none).

The ``runs`` fixture drops every layer it opened at teardown: an overlay left mounted
would break the removal of the test's tmp folder. Import it in a test module with
``from tests.kennel.runs import runs as runs``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kennel.base import ExecSpec, Kennel, Layout, RelaySpec
from orchestrator.boundary.gitops import Repo
from orchestrator.boundary.layer import Layer, build_layers
from tests.conftest import make_repo

_OWNERS_GIT = Path(".git")  # the default of ``Run.spec``'s git: the owner's own


@dataclass
class Run:
    """One run of a CLI in a kennel: its layer, its layout, and the owner's repository
    (which the kennel never gets)."""

    layer: Layer
    layout: Layout
    repo: Path
    harness: str

    @property
    def tree(self) -> Path:
        """The run's tree as the host sees it (what the kennel binds as the repo)."""
        return self.layer.tree

    @property
    def runs(self) -> Path:
        """The folder of the repository's runs (a warm Docker container binds it)."""
        return self.layer.root.parent

    @property
    def state(self) -> Path:
        """The CLI's fresh state folder on the host (``<run>/state/<harness>``)."""
        return self.layout.state_host

    @property
    def writes(self) -> Path:
        """Where the CLI's writes land on the host: the overlay's upper folder, or the
        copied tree itself."""
        return self.layer.root / "upper" if self.layer.kind == "overlay" else self.layer.tree

    def spec(
        self,
        argv: tuple[str, ...],
        env: dict[str, str] | None = None,
        relay: RelaySpec | None = None,
        git: Path | None = _OWNERS_GIT,
    ) -> ExecSpec:
        """What the runner hands the kennel: ``argv`` on the run's tree, the owner's
        ``.git`` (or ``git``; None: none) to show read-only."""
        shown = self.repo / ".git" if git is _OWNERS_GIT else git
        return ExecSpec(
            argv, env or {"PATH": "/usr/bin"}, self.layer.tree, self.layout, relay=relay, git=shown
        )

    def put_state(self, files: dict[str, str]) -> None:
        """Write ``files`` into the fresh state folder as a harness's ``prepare`` does
        (as Fetch, before any kennel saw it), then hand it to the kennel's uid."""
        for name, text in files.items():
            path = self.layout.state_host / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        self.layer.prepared()


class Runs:
    """Opens runs below one test's tmp folder and drops them all at the end."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"  # FETCH_HOME: the kennels of the tests use the same
        self._layers: list[Layer] = []
        self._count = 0

    def repo(self, name: str = "demo", files: dict[str, str] | None = None) -> Path:
        """An owner's repository with one commit (made once per name)."""
        path = self.root / "ws" / name
        if (path / ".git").is_dir():
            return path
        return make_repo(self.root / "ws", name, files or {"README.md": "# demo\n"})

    def open(
        self,
        kennel: Kennel,
        repo: Path | None = None,
        harness: str = "probe",
        *,
        home: Path | None = None,
        shown_at_repo: bool = True,
    ) -> Run:
        """A new run of ``repo`` (default: ``self.repo()``) on ``kennel``, at the
        repository's HEAD, with a fresh state folder for ``harness``. With
        ``shown_at_repo`` the layout is asked to show the tree at the repo's path (what
        the runner does)."""
        repo = repo if repo is not None else self.repo()
        self._count += 1
        layers = build_layers(home or self.home, kennel)
        layer = layers.open(Repo(repo), self._count, host_mounts=kennel.host_mounts)
        self._layers.append(layer)
        layer.fresh_state(harness)
        layout = kennel.layout(layer.tree, harness, repo if shown_at_repo else None)
        return Run(layer, layout, repo, harness)

    def drop(self) -> None:
        """Drop every run opened (unmount, remove), the last first; every one is tried."""
        errors: list[BaseException] = []
        while self._layers:
            layer = self._layers.pop()
            try:
                layer.drop()
            except Exception as err:  # the others still go
                errors.append(err)
        if errors:
            raise errors[0]


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[Runs]:
    made = Runs(tmp_path)
    try:
        yield made
    finally:
        made.drop()


__all__ = ["Run", "Runs", "runs"]
