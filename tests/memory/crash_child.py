"""Run by test_archive: archive one session and die (os._exit, no cleanup, as a kill
would) at the point named in argv[2]: "before-commit" or "after-commit"."""

from __future__ import annotations

import asyncio
import os
import sys

from core.events import SessionKey
from orchestrator.config import load_settings
from orchestrator.memory import Memory, archive
from orchestrator.store import Store
from orchestrator.supervisor import TaskSupervisor


async def main(home: str, where: str, url: str) -> None:
    settings = load_settings(
        None,
        {
            "FETCH_HOME": home,
            "FETCH_WORKSPACE": home,
            "FETCH_EMBEDDING_BASE_URL": url + "/v1",
            "FETCH_KENNEL": "bwrap",
            "FETCH_MODEL_BASE_URL": url + "/v1",
            "FETCH__MEMORY__ARCHIVE_TOKENS": "500",
        },
    )
    real = archive.commit_chunk

    def commit(*args: object) -> int | None:
        if where == "before-commit":
            os._exit(137)  # the summary and embedding are done; nothing is recorded yet
        result = real(*args)  # type: ignore[arg-type]
        os._exit(137)  # recorded, and then the process dies before anything else
        return result

    archive.commit_chunk = commit  # type: ignore[assignment]
    async with Store(settings.db_path):
        memory = Memory(settings, TaskSupervisor())
        await memory.start()
        assert memory.archiver is not None
        await memory.archiver.archive(SessionKey("terminal", "owner"))
    raise SystemExit("the crash point was never reached")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3]))
