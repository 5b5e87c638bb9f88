"""Memory as the app sees it: start/stop, write/search/read/forget, the archival
observer, the context for a new task, the MCP handler for the relay, and /status."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import threading
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from core.errors import FetchError
from core.events import SessionKey
from orchestrator.config import Settings
from orchestrator.memory import items
from orchestrator.memory.archive import Archiver, read_transcript, summaries_before, thread_of
from orchestrator.memory.db import MemoryDB
from orchestrator.memory.embed import Embedder, EmbeddingError
from orchestrator.memory.models import KINDS, Hit, Item, Progress, WriteResult
from orchestrator.memory.schema import ensure_vec_index, meta, set_meta
from orchestrator.memory.scope import archive_threads
from orchestrator.memory.search import hybrid
from orchestrator.memory.summarize import Summarizer
from orchestrator.providers.chain import Attempt
from orchestrator.supervisor import TaskSupervisor

if TYPE_CHECKING:
    from orchestrator.memory.mcp_server import Handler, MemoryMcp

log = logging.getLogger(__name__)
MCP_START_SECONDS = 10.0  # bound on waiting for the background MCP start
MAX_CONTENT = 2000  # characters in one memory: a memory is a sentence or three
CONTEXT_LIMIT = 5
CONTEXT_MIN_SCORE = 0.3  # stricter than search: injected text costs every task tokens
CONTEXT_TIMEOUT = 3.0  # a slow embedding endpoint must not hold a task back
REEMBED_BATCH = 64
# What the MCP server imports, read in a thread before it is built: the package itself,
# and what building and running its session manager would otherwise import on the loop.
MCP_MODULES = (
    "mcp.server.mcpserver",
    "mcp.server.transport_security",
    "anyio._backends._asyncio",
    "anyio.streams.stapled",
    "anyio.streams.tls",
    "email.policy",
    "concurrent.futures.thread",
)


class MemoryRefused(FetchError):
    """Memory is off, or a write was refused (empty, too long, unknown type)."""


class Memory:
    def __init__(self, settings: Settings, supervisor: TaskSupervisor) -> None:
        self.settings = settings
        self.config = settings.memory
        self.supervisor = supervisor
        self.db = MemoryDB(
            settings.home_dir / "memory" / "memory.db", settings.db_path, settings.store.url
        )
        self.embedder: Embedder | None = None
        self.summarizer: Summarizer | None = None
        self.archiver: Archiver | None = None
        self.reembed = Progress()
        self.embed_error: str | None = None
        self._mcp: MemoryMcp | None = None
        self._mcp_task: asyncio.Task[None] | None = None
        self._reembed_task: asyncio.Task[None] | None = None
        self._started = False
        self.start_error: str | None = None

    @property
    def enabled(self) -> bool:
        return self.config.enabled and self._started

    def record_costs(self, recorder: Callable[[str], Callable[[Attempt], None]]) -> None:
        """The cost ledger: each summary and embedding call is recorded under its source."""
        if self.summarizer is not None:
            self.summarizer.record = recorder("summarize")
        if self.embedder is not None:
            self.embedder.record = recorder("embed")

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self) -> None:
        """Start memory; a failure here is logged and shown in /status, never fatal:
        Fetch without memory is still Fetch."""
        if not self.config.enabled:
            return
        try:
            await self._start()
        except Exception as err:
            self.start_error = f"{type(err).__name__}: {err}"[:200]
            log.exception("memory: could not start; running without it")

    async def _start(self) -> None:
        await self.db.open()
        try:
            if self.config.embedding_base_url:
                self.embedder = Embedder(self.config)
            self.summarizer = Summarizer(self.settings)
            self.archiver = Archiver(
                self.db,
                self.settings.home_dir,
                self.config.archive_tokens,
                self.summarizer,
                self._embed_or_none,
                self.supervisor,
            )
            await self._check_model()
            # The MCP server (mcp, starlette, uvicorn, rich: ~0.5 s of CPU and ~40 MiB) is
            # started by the first task that can use it (mcp_ready), not here: a Fetch
            # that only chats never pays for it.
        except BaseException:
            await self.stop()
            raise
        self._started = True

    async def mcp_ready(self) -> None:
        """Start the MCP server on the first call (its imports run in a thread, off the
        loop) and wait for it, bounded: past the bound the task runs without memory over
        MCP while the start goes on for the next one. A failed start is not retried."""
        if not self.enabled:
            return
        if self._mcp_task is None:
            try:
                self._mcp_task = self.supervisor.spawn(self._start_mcp(), name="memory:mcp-start")
            except RuntimeError:  # shutting down
                return
        task = self._mcp_task
        if not task.done():
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(task), MCP_START_SECONDS)

    async def _start_mcp(self) -> None:
        try:
            await _import_abandonable(MCP_MODULES)
            from orchestrator.memory.mcp_server import MemoryMcp

            mcp = MemoryMcp(self)
            await mcp.start()
            self._mcp = mcp
        except Exception:
            log.exception("memory MCP server did not start; tasks run without it")

    async def stop(self) -> None:
        self._started = False
        if self._mcp_task is not None:
            self._mcp_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._mcp_task
            self._mcp_task = None
        if self.archiver is not None:
            await self.archiver.stop()
        if self._reembed_task is not None:
            self._reembed_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reembed_task
            self._reembed_task = None
        if self._mcp is not None:
            await self._mcp.stop()
            self._mcp = None
        for client in (self.embedder, self.summarizer):
            if client is not None:
                await client.close()
        self.embedder = self.summarizer = None
        await self.db.close()

    async def _check_model(self) -> None:
        """A new embedding model or dimension: re-embed everything in the background."""
        if self.embedder is None:
            return
        signature = self.embedder.signature
        vec_ok = self.db.vec_ok

        def check(conn: object) -> bool:
            changed = meta(conn, "embedding") not in (None, signature)
            if vec_ok:
                ensure_vec_index(conn, self.embedder.dims if self.embedder else 0)
            set_meta(conn, "embedding", signature)
            return changed

        if await self.db.run(check):
            log.warning("memory: embedding model is now %s; re-embedding", signature)
            await self.db.run(items.drop_vectors, vec_ok)
        self._start_reembed()

    def _start_reembed(self) -> None:
        if self.embedder is None or self.reembed.running:
            return
        self.reembed.running = True
        try:
            self._reembed_task = self.supervisor.spawn(self._reembed(), name="memory:reembed")
        except RuntimeError:  # shutting down
            self.reembed.running = False

    async def _reembed(self) -> None:
        """Embed every item without a vector for the current model, in batches."""
        assert self.embedder is not None
        embedder = self.embedder
        progress = self.reembed
        expected: tuple[type[Exception], ...] = (EmbeddingError, *self.db.errors)
        try:
            _, left = await self.db.run(items.unembedded, embedder.signature, 0)
            progress.total, progress.done, progress.error = left, 0, None
            while True:
                batch, left = await self.db.run(items.unembedded, embedder.signature, REEMBED_BATCH)
                if not batch:
                    break
                vectors = await embedder.embed([text for _, _, text in batch])
                await self.db.run(
                    items.store_vectors,
                    [(i, k, v) for (i, k, _), v in zip(batch, vectors, strict=True)],
                    embedder.signature,
                    self.db.vec_ok,
                )
                progress.done += len(batch)
                progress.total = max(progress.total, progress.done + left - len(batch))
        except expected as err:
            progress.error = str(err)
            log.warning("memory: re-embedding stopped: %s", err)
        finally:
            progress.running = False

    # -- embeddings, tolerant --------------------------------------------------------------
    async def _embed_or_none(self, text: str) -> tuple[bytes, str] | None:
        """A vector for ``text``, or None (no endpoint, or it failed: keyword search and
        the background catch-up still work)."""
        if self.embedder is None:
            return None
        try:
            (vec,) = await self.embedder.embed([text])
        except EmbeddingError as err:
            self.embed_error = str(err)
            log.warning("memory: %s", err)
            return None
        self._endpoint_back()
        return vec, self.embedder.signature

    async def _query_vector(self, text: str) -> bytes | None:
        if self.embedder is None:
            return None
        try:
            vec = await self.embedder.query(text)
        except EmbeddingError as err:
            self.embed_error = str(err)
            log.warning("memory: %s", err)
            return None
        self._endpoint_back()
        return vec

    def _endpoint_back(self) -> None:
        """The endpoint answers again: catch up on what was written while it did not."""
        self.embed_error = None
        if self.reembed.error is not None:
            self.reembed.error = None
            self._start_reembed()

    # -- the two layers ----------------------------------------------------------------
    def _require(self) -> None:
        if not self.enabled:
            why = (
                f"it failed to start: {self.start_error}"
                if self.start_error
                else "memory.enabled: false"
            )
            raise MemoryRefused(f"memory is off ({why})")

    async def write(
        self,
        content: str,
        kind: str = "fact",
        tags: tuple[str, ...] = (),
        source: str = "owner",
        subject: str = "owner",
        *,
        chat: str | None = None,
    ) -> WriteResult:
        """``subject``: whose memory (the owner's, or a member's own). ``chat``: the
        session of the task a kennel writes from; a kennel's write (``source``
        harness:…) merges only into its own rows of that chat (items.remember)."""
        self._require()
        content = " ".join(content.split())
        if not content:
            raise MemoryRefused("nothing to remember: the text is empty")
        if len(content) > MAX_CONTENT:
            raise MemoryRefused(
                f"a memory is at most {MAX_CONTENT} characters (this one has {len(content)})"
            )
        if kind not in KINDS:
            raise MemoryRefused(f"type must be one of {', '.join(KINDS)}")
        clean_tags = tuple(t.strip().lower().lstrip("#") for t in tags if t.strip())[:10]
        embedded = await self._embed_or_none(content)
        vec, signature = embedded if embedded else (None, "")
        result = await self.db.run(
            lambda conn: items.remember(
                conn,
                kind=kind,
                content=content,
                tags=clean_tags,
                source=source,
                vec=vec,
                signature=signature,
                threshold=self.config.dedup_threshold,
                vec_ok=self.db.vec_ok,
                subject=subject,
                chat=chat,
            )
        )
        if embedded is None and self.embedder is not None:
            self._start_reembed()  # catches this one up once the endpoint is back
        return result

    async def search(
        self,
        query: str,
        limit: int = 5,
        min_score: float | None = None,
        subject: str = "owner",
        *,
        threads: Collection[str] | None = None,
    ) -> list[Hit]:
        """``threads`` given: archived conversations only of those (a kennel's chat,
        scope.archive_threads); None: of every chat (the owner's own views)."""
        self._require()
        qvec = await self._query_vector(query)
        threshold = self.config.min_score if min_score is None else min_score
        return await self.db.run(
            lambda conn: hybrid(
                conn,
                query,
                qvec,
                limit=limit,
                vector_weight=self.config.vector_weight,
                min_score=threshold,
                vec_ok=self.db.vec_ok,
                subject=subject,
                threads=threads,
            )
        )

    async def read(self, chunk_id: int, *, threads: Collection[str] | None = None) -> str | None:
        """``threads`` given: only a chunk of one of them (another's reads as absent)."""
        self._require()
        home = self.settings.home_dir
        return await self.db.run_with_log(
            lambda conn, log_conn: read_transcript(conn, log_conn, home, chunk_id, threads)
        )

    async def summaries_before(
        self, key: SessionKey, before: int, limit: int = 3
    ) -> list[tuple[int, int, str]]:
        """Summaries of this chat's archived turns older than message ``before`` (first id,
        last id, summary; oldest first); [] when memory is off or fails: a model turn
        never waits on memory's problems."""
        if not self.enabled:
            return []
        try:
            return await self.db.run(summaries_before, thread_of(key), before, limit)
        except Exception:
            log.exception("memory: reading archive summaries failed")
            return []

    async def get(self, item_id: int) -> Item | None:
        self._require()
        return await self.db.run(items.get, item_id)

    async def forget(self, item_id: int, subject: str | None = None) -> Item | None:
        """``subject`` given: only that subject's memory can go."""
        self._require()
        return await self.db.run(items.forget, item_id, self.db.vec_ok, subject)

    async def overview(
        self, newest: int = 5, subject: str = "owner"
    ) -> tuple[dict[str, int], list[Item]]:
        self._require()
        counts = await self.db.run(items.counts, subject)
        return counts, await self.db.run(items.newest, newest, subject)

    # -- the app's hooks -----------------------------------------------------------------
    def observe(self, key: SessionKey) -> None:
        """After every turn: archive old messages in the background, never blocking."""
        try:
            if self._started and self.archiver is not None:
                self.archiver.observe(key)
        except Exception:  # the reply path must never see memory's problems
            log.exception("memory: observe failed")

    async def context_for(
        self, prompt: str, subject: str = "owner", *, chat: str | None = None
    ) -> str:
        """Relevant memories of ``subject`` (whose task it is) for a new task ("" when
        none, off, or anything fails). It goes into the kennel's prompt, so it is scoped
        as /mcp is: archived conversations only of ``chat`` (the task's session,
        ``key_str``), none without it."""
        if not self.enabled:
            return ""
        try:
            async with asyncio.timeout(CONTEXT_TIMEOUT):
                hits = await self.search(
                    prompt,
                    CONTEXT_LIMIT,
                    max(CONTEXT_MIN_SCORE, self.config.min_score),
                    subject,
                    threads=archive_threads(chat),
                )
        except Exception as err:  # a task runs without memory rather than not at all
            log.warning("memory: no context for the task: %s", err)
            return ""
        if not hits:
            return ""
        lines = [
            "Fetch remembers (may be outdated; the memory_search / memory_read tools have more):"
        ]
        for hit in hits:
            item = hit.item
            if item.kind == "archive":
                lines.append(f"- [past conversation #{item.id}] {item.content[:400]}")
            else:
                # Who wrote it matters: a harness may have been steered by repo content.
                origin = "" if item.source == "owner" else f", written by {item.source}"
                lines.append(f"- [{item.kind} #{item.id}{origin}] {item.content}")
        return "\n".join(lines)

    @property
    def serves_mcp(self) -> bool:
        return self.enabled and self._mcp is not None

    @property
    def mcp(self) -> MemoryMcp | None:
        return self._mcp

    def mcp_handler(
        self, caller: str, subject: str = "owner", *, chat: str | None = None
    ) -> Handler | None:
        """The relay's ``/mcp`` route for one task; ``caller`` (harness:<name>) marks what
        it writes, ``subject`` (whose task) whose memories it sees and writes, ``chat``
        (the task's session, ``key_str(session.key)``) whose archived conversations it
        may read: none without it (scope.py)."""
        if not (self.serves_mcp and self._mcp):
            return None
        return self._mcp.handler(caller, subject, chat=chat)

    def mode(self) -> str:
        if self.embedder is None:
            return "keyword-only (no embedding endpoint configured)"
        if not self.db.vec_ok:
            return f"keyword-only (sqlite-vec unavailable: {self.db.vec_problem})"
        if self.embed_error:
            return f"keyword-only for now ({self.embed_error})"
        return f"hybrid ({self.embedder.signature})"

    def status_line(self) -> str:
        if not self.config.enabled:
            return "memory: off"
        if not self._started:
            return (
                f"memory: off, it failed to start ({self.start_error})"
                if self.start_error
                else "memory: not started"
            )
        parts = [f"memory: {self.mode()}"]
        if self.db.url:
            from orchestrator.store.pg import where  # asyncpg: only with a PostgreSQL store

            parts.append(f"on PostgreSQL {where(self.db.url)}")
        progress = self.reembed
        if progress.running and progress.total:
            parts.append(f"re-embedding {progress.done}/{progress.total}")
        elif progress.error:
            parts.append(f"re-embedding stopped: {progress.error[:80]}")
        if self.archiver is not None and self.archiver.last_error:
            parts.append(f"last archive error: {self.archiver.last_error[:80]}")
        return " · ".join(parts)


async def _import_abandonable(names: tuple[str, ...]) -> None:
    """Import ``names`` in a daemon thread of its own. Not ``to_thread``: asyncio.run and
    the interpreter join the default executor at exit, so a stop right after start-up
    would wait for the import to finish. Cancelled, this returns at once and the thread
    is abandoned (it dies with the process)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def settle(err: Exception | None) -> None:
        if done.done():
            return
        if err is None:
            done.set_result(None)
        else:
            done.set_exception(err)

    def work() -> None:
        err: Exception | None = None
        try:
            for name in names:
                importlib.import_module(name)
        except Exception as exc:
            err = exc
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits anymore
            loop.call_soon_threadsafe(settle, err)

    threading.Thread(target=work, name=f"import:{names[0]}", daemon=True).start()
    await done
