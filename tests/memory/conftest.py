"""Memory fixtures: a real fetch.db (the store's tables too), the scripted model server
for embeddings and summaries, and a started ``Memory``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from orchestrator.config import Settings, load_settings
from orchestrator.memory import Memory
from orchestrator.store import Store
from orchestrator.supervisor import TaskSupervisor
from tests.fakes.model_server import ScriptedModelServer


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as srv:
        yield srv


# The engines memory's contract runs on: its own SQLite file, and PostgreSQL with pgvector
# (store.url; tests/fakes/postgres.py starts a real server, never skipped under CI).
ENGINES = ("sqlite", "postgresql")
on_both_engines = pytest.mark.parametrize("engine", ENGINES)
on_postgres = pytest.mark.parametrize("engine", ["postgresql"])


@pytest.fixture
def engine() -> str:
    """Overridden by ``on_both_engines``; SQLite for every other test."""
    return "sqlite"


@pytest.fixture
def memory_settings(
    tmp_path: Path, model: ScriptedModelServer, engine: str, request: pytest.FixtureRequest
) -> Callable[..., Settings]:
    url = str(request.getfixturevalue("pg_url")) if engine == "postgresql" else ""

    def make(embeddings: bool = True, summaries: bool = True, **env: str) -> Settings:
        base = {
            "FETCH_HOME": str(tmp_path / "home"),
            "FETCH_WORKSPACE": str(tmp_path),
            "FETCH_HARNESS": "demo",
            "FETCH_KENNEL": "bwrap",
        }
        if url:
            base["FETCH_STORE_URL"] = url
        if embeddings:
            base["FETCH_EMBEDDING_BASE_URL"] = model.url + "/v1"
        if summaries:
            base["FETCH_MODEL_BASE_URL"] = model.url + "/v1"
        base.update(env)
        return load_settings(None, base)

    return make


class Running:
    """A started memory over a started store, stopped in reverse."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store = Store(settings.db_path, settings.store.url)
        self.supervisor = TaskSupervisor()
        self.memory = Memory(settings, self.supervisor)

    async def __aenter__(self) -> Running:
        self.settings.home_dir.mkdir(parents=True, exist_ok=True)
        await self.store.open()
        await self.memory.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.memory.stop()
        await self.supervisor.stop(0)
        await self.store.close()


@pytest.fixture
async def running(memory_settings: Callable[..., Settings]) -> AsyncIterator[Running]:
    async with Running(memory_settings()) as run:
        yield run


@pytest.fixture
def memory(running: Running) -> Memory:
    return running.memory
