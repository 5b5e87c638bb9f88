"""Archival memory: chunks past the token threshold, summarized, embedded, kept as JSON,
behind a watermark; under concurrent turns; across a crash at the worst moment."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from core.events import SessionKey
from orchestrator.config import Settings
from orchestrator.memory.archive import thread_of
from tests.fakes.model_server import Delay, ScriptedModelServer, Text
from tests.memory.conftest import Running, on_both_engines

KEY = SessionKey("terminal", "owner")
OTHER = SessionKey("telegram", "42")
LINE = "word " * 80  # ~100 tokens a message
CHILD = Path(__file__).with_name("crash_child.py")
ROOT = Path(__file__).resolve().parents[2]


async def _talk(run: Running, key: SessionKey, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        await run.store.messages.add(
            key, "in" if i % 2 == 0 else "out", f"message {i} about topic{i} {LINE}"
        )


async def _chunks(run: Running, key: SessionKey) -> list[tuple[int, int, int, str]]:
    return await run.memory.db.run(
        lambda c: c.execute(
            "SELECT id, first_msg, last_msg, path FROM memory_items WHERE kind='archive' AND"
            " thread=? ORDER BY first_msg",
            (thread_of(key),),
        ).fetchall()
    )


async def _watermark(run: Running, key: SessionKey) -> int:
    rows = await run.memory.db.run(
        lambda c: c.execute(
            "SELECT last_msg FROM memory_watermarks WHERE thread=?", (thread_of(key),)
        ).fetchall()
    )
    return int(rows[0][0]) if rows else 0


async def _message_ids(run: Running, key: SessionKey) -> list[int]:
    await run.store.messages.flush()
    rows = await run.store.db.conn.execute_fetchall(
        "SELECT id FROM messages WHERE session=? ORDER BY id", (thread_of(key),)
    )
    return [int(r[0]) for r in rows]


async def _check_partition(run: Running, key: SessionKey) -> list[tuple[int, int, int, str]]:
    """Chunks cover every message up to the watermark exactly once, in order."""
    chunks = await _chunks(run, key)
    ids = await _message_ids(run, key)
    mark = await _watermark(run, key)
    covered = [i for _, first, last, _ in chunks for i in ids if first <= i <= last]
    assert covered == [i for i in ids if i <= mark], (chunks, mark)
    assert (chunks[-1][2] if chunks else 0) == mark
    unarchived = [i for i in ids if i > mark]
    assert len(unarchived) * 100 <= 500 + 100  # below the threshold again (±1 message)
    return chunks


def archive_settings(
    memory_settings: Callable[..., Settings], *, summaries: bool = True, **env: str
) -> Settings:
    return memory_settings(summaries=summaries, FETCH__MEMORY__ARCHIVE_TOKENS="500", **env)


@on_both_engines
async def test_chunks_past_the_threshold(
    memory_settings: Callable[..., Settings],
    model: ScriptedModelServer,
) -> None:
    model.default = Text("The owner discussed topic3 and decided to use tabs.")
    async with Running(archive_settings(memory_settings)) as run:
        await _talk(run, KEY, 4)
        assert run.memory.archiver is not None
        assert await run.memory.archiver.archive(KEY) == []  # 400 tokens: nothing yet
        await _talk(run, KEY, 8, start=4)
        made = await run.memory.archiver.archive(KEY)
        assert made
        chunks = await _check_partition(run, KEY)
        _, first, last, rel = chunks[0]
        body = json.loads((run.settings.home_dir / rel).read_text())
        assert rel.startswith(f"memory/archives/{KEY.slug}/chunks/")
        assert [m["id"] for m in body["messages"]] == list(range(first, last + 1))
        assert body["messages"][0]["text"].startswith("message 0 about topic0")
        # The summary went through the chat model with the transcript.
        sent = [r for r in model.requests if r.dialect == "openai_chat"]
        assert "message 0 about topic0" in json.dumps(sent[0].body)
        # Searchable (hybrid), and readable in full (two-phase).
        hits = await run.memory.search("decided tabs topic3")
        assert hits and hits[0].item.kind == "archive"
        shown = hits[0].as_dict()
        assert shown["source"] == "archive" and shown["thread"] == "terminal:owner"
        assert shown["time_range"][0] <= shown["time_range"][1]
        transcript = await run.memory.read(chunks[0][0])
        assert transcript is not None and "message 0 about topic0" in transcript
        assert "owner: message 0" in transcript and "fetch: message 1" in transcript


@on_both_engines
async def test_observe_never_blocks_and_archives_under_concurrent_turns(
    memory_settings: Callable[..., Settings],
    model: ScriptedModelServer,
) -> None:
    model.default = Delay(0.05, Text("summary of a busy stretch"))  # runs overlap turns
    async with Running(archive_settings(memory_settings)) as run:
        memory = run.memory
        slowest = 0.0

        async def chat(key: SessionKey, base: int) -> None:
            nonlocal slowest
            for i in range(60):
                await run.store.messages.add(key, "in", f"turn {base + i} {LINE}")
                started = time.perf_counter()
                memory.observe(key)  # what the gateway does after every reply
                slowest = max(slowest, time.perf_counter() - started)
                await asyncio.sleep(0.003)

        await asyncio.gather(chat(KEY, 0), chat(OTHER, 1000), chat(KEY, 2000))
        assert memory.archiver is not None
        await memory.archiver.idle()
        memory.observe(KEY)
        memory.observe(OTHER)
        await memory.archiver.idle()
        assert slowest < 0.02, f"observe took {slowest * 1000:.2f} ms"  # a summary takes 50
        for key in (KEY, OTHER):
            chunks = await _check_partition(run, key)
            assert len(chunks) >= 5
        assert memory.archiver.last_error is None


async def test_a_failing_summary_model_is_logged_not_raised(
    memory_settings: Callable[..., Settings],
    model: ScriptedModelServer,
) -> None:
    from tests.fakes.model_server import Error

    model.default = Error(500, "summaries are down")
    async with Running(archive_settings(memory_settings)) as run:
        await _talk(run, KEY, 12)
        run.memory.observe(KEY)
        assert run.memory.archiver is not None
        await run.memory.archiver.idle()
        assert await _chunks(run, KEY) == [] and await _watermark(run, KEY) == 0
        assert "summary model failed" in (run.memory.archiver.last_error or "")
        assert "last archive error" in run.memory.status_line()


@on_both_engines
async def test_no_model_archives_with_an_extract(
    memory_settings: Callable[..., Settings],
) -> None:
    async with Running(archive_settings(memory_settings, summaries=False)) as run:
        await _talk(run, KEY, 12)
        assert run.memory.archiver is not None
        assert await run.memory.archiver.archive(KEY)
        (chunk, *_) = await _check_partition(run, KEY)
        item = await run.memory.get(chunk[0])
        assert item is not None and item.content.startswith("(extract, no model configured)")


async def _crash(home: Path, where: str, url: str) -> int:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(CHILD),
        str(home),
        where,
        url,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 137, (out, err)
    return proc.returncode


async def test_crash_between_summary_and_watermark_loses_and_duplicates_nothing(
    memory_settings: Callable[..., Settings],
    model: ScriptedModelServer,
) -> None:
    model.default = Text("summary")
    settings = archive_settings(memory_settings)
    async with Running(settings) as run:
        await _talk(run, KEY, 12)
    # A real process, killed after the summary and the embedding, before the commit.
    await _crash(settings.home_dir, "before-commit", model.url)
    folder = settings.home_dir / "memory" / "archives" / KEY.slug / "chunks"
    orphans = sorted(p.name for p in folder.glob("*.json"))
    assert len(orphans) == 1  # the transcript was written; nothing else was recorded
    async with Running(settings) as run:
        assert await _chunks(run, KEY) == [] and await _watermark(run, KEY) == 0
        assert run.memory.archiver is not None
        await run.memory.archiver.archive(KEY)
        chunks = await _check_partition(run, KEY)
        assert chunks[0][3].endswith(orphans[0])  # the same chunk, planned again
        files = sorted(p.name for p in folder.glob("*.json"))
        assert files == sorted(Path(c[3]).name for c in chunks)  # no stray transcript


async def test_crash_right_after_the_commit_does_not_archive_twice(
    memory_settings: Callable[..., Settings],
    model: ScriptedModelServer,
) -> None:
    model.default = Text("summary")
    settings = archive_settings(memory_settings)
    async with Running(settings) as run:
        await _talk(run, KEY, 12)
    await _crash(settings.home_dir, "after-commit", model.url)
    async with Running(settings) as run:
        first = await _chunks(run, KEY)
        assert len(first) == 1 and await _watermark(run, KEY) == first[0][2]
        assert run.memory.archiver is not None
        await run.memory.archiver.archive(KEY)
        chunks = await _check_partition(run, KEY)
        assert chunks[0] == first[0] and len({c[1] for c in chunks}) == len(chunks)
