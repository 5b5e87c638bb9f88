"""Runs one task: a harness in the kennel on the run's own layer over the repository,
then the change read from that layer as data (orchestrator/boundary/) and offered for
approval. The owner's working tree is never the kennel's: a failure, /stop, "no" or a
restart drop the layer and leave the tree as it was. One run per session; ``/stop``
cancels it and ends the whole process group."""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import AbstractContextManager, AsyncExitStack, nullcontext, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from aiohttp import web

from core.errors import FetchError, GitError, HarnessFailed, UnknownHarness
from core.events import Attachment, SessionKey
from core.session_data import SessionData
from harnesses.base import (
    Availability,
    Harness,
    HarnessEvent,
    HarnessRegistry,
    HarnessRequest,
    McpServer,
)
from identity.pack import Agent, Pack, Route
from kennel.base import ExecSpec, Kennel, KennelProcess, RelaySpec
from kennel.credentials import SIGN_IN_NOTES, Credential, credential_for
from kennel.relay import PLACEHOLDER_KEY
from kennel.relay_signin import SignInError
from orchestrator.boundary.gitops import Change, Repo, guard_repo_config
from orchestrator.boundary.layer import Layer, Layers
from orchestrator.config import Settings
from orchestrator.costs.ledger import CostLedger
from orchestrator.mcphost.service import McpHost
from orchestrator.memory import Memory
from orchestrator.memory.mcp_server import SERVER_NAME as MCP_SERVER_NAME
from orchestrator.messenger import Messenger
from orchestrator.session import Session
from orchestrator.skills.book import SkillBook
from orchestrator.store import Store
from orchestrator.store.db import key_str
from orchestrator.supervisor import TaskSupervisor
from orchestrator.task import attachments as attached
from orchestrator.task import testrun
from orchestrator.task.approvals import Approvals
from orchestrator.task.crashpoint import crash_point
from orchestrator.task.progress import Progress
from orchestrator.task.recent import RecentFiles
from orchestrator.task.setup import SCRIPT as SETUP_SCRIPT
from orchestrator.task.setup import Setup
from orchestrator.task.setup import plan as setup_plan
from orchestrator.task.steer import Steering
from orchestrator.workspace import Workspace

if TYPE_CHECKING:
    from kennel.base import McpHandler

log = logging.getLogger(__name__)
EVENT_CHARS = 500  # of a harness event's text kept in the journal for the task page


@dataclass
class RunHandle:
    task_id: int
    harness: str
    repo: str
    prompt: str
    requester: str = "owner"  # whose task: their memories, their commit
    started: float = field(default_factory=time.monotonic)
    task: asyncio.Task[None] | None = None
    proc: KennelProcess | None = None
    stop_requested: bool = False
    kill_seconds: float = 0.0
    events: list[HarnessEvent] = field(default_factory=list)
    progress: Progress | None = None
    paused: bool = False
    # The run's time limit; paused, it does not run (``remaining`` keeps what was left).
    deadline: asyncio.Timeout | None = None
    remaining: float | None = None
    tests: testrun.SuiteResult | None = None  # run in the kennel once the harness is done
    # A turn that answers the CLI's question: the answer, and the CLI session it resumes.
    answer: str | None = None
    resume: str | None = None
    # The pack member that took the task (identity/pack.py): its instructions go to the
    # CLI on every turn of the run, its model when it runs on its own harness.
    agent: Agent | None = None
    model: str | None = None
    # The run's own layer over the repository (orchestrator/boundary/layer.py), kept
    # while a CLI's question waits; the change read from it once the CLI is done.
    layer: Layer | None = None
    layer_name: str | None = None  # a question's layer, to find again on the answer
    # What the owner sent with the task (images, files; orchestrator/task/attachments.py)
    # and the names they were given in the run's attachments/ once copied there.
    attachments: tuple[Attachment, ...] = ()
    attached: list[str] | None = None
    change: Change | None = None
    keep_layer: bool = False
    # The repository's setup layer under the run (orchestrator/task/setup.py), and what
    # the card says of it ("🧰 setup ran (41 s)", a failure and its output's tail).
    setup: Path | None = None
    setup_line: str = ""
    # The CLI's stdin while it reads the owner's messages (orchestrator/task/steer.py).
    steering: Steering | None = None
    # The run is done and its result is being said (a diff, a question, a failure): a
    # /stop now would cut that half way, so it is told the task has finished instead.
    saying: bool = False


@dataclass(frozen=True, slots=True)
class PauseResult:
    task_id: int
    harness: str
    processes: int  # stopped (pause) or continued (resume)


@dataclass(frozen=True, slots=True)
class StopResult:
    task_id: int
    harness: str
    kill_seconds: float
    leftover_pids: list[int]
    finished: bool = False  # the run had ended: its result is being said, nothing stopped


class TaskRunner:
    def __init__(
        self,
        *,
        settings: Settings,
        store: Store,
        messenger: Messenger,
        workspace: Workspace,
        harnesses: HarnessRegistry,
        kennel: Kennel,
        supervisor: TaskSupervisor,
        approvals: Approvals,
        layers: Layers,
        memory: Memory | None = None,
        pack: Pack | None = None,
        skills: SkillBook | None = None,
    ) -> None:
        self.layers = layers
        self._skills = skills  # what the CLI is handed (orchestrator/skills/book.py)
        self._memory = memory
        self.pack = pack or Pack.empty()
        self._settings = settings
        self._store = store
        self._messenger = messenger
        self._workspace = workspace
        self._harnesses = harnesses
        self._kennel = kennel
        self._supervisor = supervisor
        self._approvals = approvals
        self._runs: dict[SessionKey, RunHandle] = {}
        self.setup = Setup(kennel, layers, settings.kennel.setup, settings.home_dir)
        # What each chat's people sent lately, for their next task (task/recent.py).
        self.recent = RecentFiles(settings.home_dir / "sessions")
        # The cost ledger (orchestrator/costs/): set by the app; each relayed call is
        # recorded in it, and a spent budget refuses the task's further vendor calls.
        self.costs: CostLedger | None = None
        # The owner's MCP servers (orchestrator/mcphost/): set by the app when configured.
        self.mcphost: McpHost | None = None

    # -- choosing a harness ------------------------------------------------------------
    def availability(self, harness: Harness) -> Availability:
        installed = harness.executable() is not None
        if harness.provider is None:
            return Availability(installed, True, "no model needed")
        cred = self._credential(harness.provider, harness.name)
        has_key = cred is not None
        detail = (
            # Which kind of credential (API key, subscription token, ChatGPT sign-in),
            # never its value.
            (f"ready ({cred.shown})" if cred is not None else "ready")
            if installed and has_key
            else (
                f"`{harness.binary}` not installed"
                if not installed
                else f"no {harness.provider} API key configured"
                + (
                    f" ({SIGN_IN_NOTES[harness.name]})"
                    if harness.name in SIGN_IN_NOTES
                    else f" (or a sign-in: fetch login {harness.name})"
                )
            )
        )
        return Availability(installed, has_key, detail)

    def _credential(self, vendor: str, harness: str) -> Credential | None:
        """The owner's key, subscription token or sign-in for ``vendor`` as ``harness``
        uses it (kennel/credentials.py)."""
        provider = self._settings.providers.get(vendor)
        return credential_for(
            self._settings.home_dir, vendor, provider, harness, self._settings.providers
        )

    def default_harness(self) -> str:
        wanted = self._settings.harness.default
        if wanted != "auto":
            return wanted
        for name in ("claude-code", "codex", "gemini-cli", "copilot"):
            if (
                name in self._harnesses.names()
                and self.availability(self._harnesses.get(name)).usable
            ):
                return name
        return "demo"

    def running(self, key: SessionKey) -> RunHandle | None:
        return self._runs.get(key)

    def route(self, prompt: str, agent: str | None = None) -> Route:
        """The pack member for a task: the one asked for (checked by the caller against
        the pack), else ROUTING.md's rules."""
        chosen = self.pack.get(agent) if agent else None
        return Route(chosen, "asked for") if chosen is not None else self.pack.route(prompt)

    def _harness_for(self, session: Session, member: Agent) -> tuple[Harness, str]:
        """The harness this run uses and a note when the member's preference can't be
        met. The chat's own /harness choice wins over a member's preference."""
        if session.data.harness:
            return self._harnesses.get(session.data.harness), ""
        default = self._harnesses.get(self.default_harness())
        wanted = member.harness
        if wanted == "auto" or wanted == default.name:
            return default, ""
        if wanted not in self._harnesses.names():
            why = "no such harness"
        else:
            preferred = self._harnesses.get(wanted)
            avail = self.availability(preferred)
            if avail.usable:
                return preferred, ""
            why = avail.detail
        return (
            default,
            # What is used first: a long reason is what a cut line loses.
            f"ℹ️ {member.name} prefers {wanted}, which can't run here; "
            f"using {default.name} ({why}).",
        )

    # -- starting ----------------------------------------------------------------------
    async def start(
        self,
        session: Session,
        repo_name: str,
        prompt: str,
        requester: str = "owner",
        agent: str | None = None,
        attachments: tuple[Attachment, ...] = (),
    ) -> None:
        """Start a run; the caller holds ``session.lock`` and has checked that
        ``requester`` may work in ``repo_name``. Replies on every refusal. ``agent``: the
        pack member asked for (else ROUTING.md picks one)."""
        key = session.key
        send = self._messenger.send
        if _stopped(session):  # a /stop came while this message was worked out
            return
        if key in self._runs:  # a run adopted from elsewhere (/improve) holds this chat
            await send(key, "⏳ Another run is going on in this chat; /stop ends it.")
            return
        route = self.route(prompt, agent)
        member = route.agent
        harness, note = self._harness_for(session, member)
        avail = self.availability(harness)
        if not avail.usable:
            await send(
                key,
                f"❌ {harness.name} can't run: {avail.detail}.\n/harness shows what is available.",
            )
            return
        try:
            repo = await asyncio.to_thread(self._workspace.repo, repo_name)
            if not await asyncio.to_thread(repo.has_commits):
                raise GitError(f"{repo_name} has no commits yet; commit once by hand first")
            dirty = await asyncio.to_thread(repo.status_lines)
        except GitError as err:
            await send(key, f"❌ {err}")
            return
        busy = next((h for h in self._runs.values() if h.repo == repo_name), None)
        if busy is not None:
            await send(
                key,
                f"⏳ {repo_name} is busy with task #{busy.task_id} from another "
                "chat; try again when it is done.",
            )
            return
        if dirty:
            shown = "\n".join(f"  {line}" for line in dirty[:5])
            await send(
                key,
                f"❌ {repo_name} has uncommitted changes:\n{shown}\n"
                "Commit or stash them first, so I only ever show you my diff.",
            )
            return
        if _stopped(session):
            return
        task_id = await self._store.work.create_task(
            key, repo_name, prompt, harness.name, requester
        )
        crash_point("task:row")  # the row is written, the chat not yet WORKING
        session.data.task_id, session.data.repo, session.data.task_prompt = (
            task_id,
            repo_name,
            prompt,
        )
        session.data.task_agent = member.name  # the task's pack member (/status)
        await session.start_task()
        handle = RunHandle(task_id, harness.name, repo_name, prompt, requester, agent=member)
        # Files the requester sent just before (or while the last task ran) come too.
        earlier = await asyncio.to_thread(self.recent.take, key, requester, attachments)
        handle.attachments = attached.usable(attachments + earlier)
        if member.model and member.harness == harness.name:
            handle.model = member.model
        # The chat's /model choice for this CLI wins, as its /harness choice does.
        handle.model = session.data.cli_models.get(harness.name) or handle.model
        if harness.steerable and self._kennel.steerable:
            # From now on: what the owner says before the CLI runs waits for it.
            handle.steering = Steering(harness)
        self._runs[key] = handle
        log.info("task %s: %s (%s) on %s", task_id, member.name, route.reason, harness.name)
        handle.progress = Progress(
            self._messenger,
            key,
            harness.name,
            title=f"Task #{task_id} · {repo_name} · {member.name} on {harness.name}",
        )
        first = await send(
            key,
            f"⏳ On it (task #{task_id}): {_short(prompt)}\n"
            + (f"{note}\n" if note else "")
            + (f"{attached.earlier_line(earlier)}\n" if earlier else "")
            + "\n"
            + handle.progress.render("coding"),
        )
        handle.progress.attach(first.message_id)
        if handle.stop_requested or _stopped(session):  # a /stop while "On it" was sent
            await self._unstarted(session, handle, repo)
            return
        # The run is the chat's before the typing indicator's request (a phone's: a
        # network call): a /stop or /pause arriving meanwhile reaches it.
        handle.task = self._supervisor.spawn(
            self._run(session, handle, harness, repo), name=f"run:{key.slug}:{task_id}"
        )
        await self._messenger.typing(key, True)

    # -- runs driven elsewhere (self-improvement: orchestrator/improve/) ---------------
    def adopt(self, key: SessionKey, handle: RunHandle) -> bool:
        """Hold ``handle`` as this chat's run, so /stop, /pause and /resume reach it like
        a task's. False (nothing held) when the chat already has a run."""
        if key in self._runs:
            return False
        self._runs[key] = handle
        return True

    def release(self, key: SessionKey, handle: RunHandle) -> None:
        if self._runs.get(key) is handle:
            del self._runs[key]

    async def execute(
        self, session: Session, handle: RunHandle, harness: Harness, repo: Repo
    ) -> Change:
        """One harness run in the kennel exactly as a task's (relay with the key on the
        host, memory, progress, time limit) on a layer over ``repo``, for a run adopted
        with ``adopt``: the change it made. The layer stays in ``handle.layer`` (for the
        tests) until ``drop_layer``. Raises ``HarnessFailed``, ``FetchError`` or
        ``TimeoutError``."""
        await self._open_layer(handle, repo)
        await self._execute(session, handle, harness, repo)
        assert handle.layer is not None
        return await asyncio.to_thread(handle.layer.read, repo)

    async def drop_layer(self, handle: RunHandle) -> None:
        layer, handle.layer = handle.layer, None
        if layer is not None:
            await asyncio.to_thread(layer.drop)

    async def _open_layer(self, handle: RunHandle, repo: Repo) -> None:
        if handle.layer is not None:
            return
        if handle.layer_name:
            handle.layer = await asyncio.to_thread(self.layers.find, repo.path, handle.layer_name)
            if handle.layer is None:
                raise FetchError(
                    "the run's copy of the repository is gone (Fetch restarted?); "
                    "send the task again"
                )
            return
        opening = asyncio.ensure_future(
            asyncio.to_thread(
                self.layers.open,
                repo,
                handle.task_id,
                host_mounts=self._kennel.host_mounts,
                setup=handle.setup,
            )
        )
        try:
            handle.layer = await asyncio.shield(opening)
        except asyncio.CancelledError:
            # The thread goes on: keep what it makes, so the run's end drops it (a mount
            # must never be left behind by a /stop or a shutdown that came meanwhile).
            with suppress(FetchError, OSError):
                handle.layer = await opening
            raise

    # -- pausing -----------------------------------------------------------------------
    async def pause(self, key: SessionKey) -> PauseResult | None:
        """SIGSTOP the run's whole process tree and hold its time limit; None when this
        chat has no running task. A run not started yet is stopped as soon as it starts."""
        handle = self._runs.get(key)
        if handle is None or handle.task is None or handle.saying:
            return None
        if handle.paused:
            return PauseResult(handle.task_id, handle.harness, 0)
        handle.paused = True
        _hold(handle)
        stopped = await handle.proc.pause() if handle.proc is not None else 0
        return PauseResult(handle.task_id, handle.harness, stopped)

    async def resume(self, key: SessionKey) -> PauseResult | None:
        """Continue a paused run; None when this chat has no paused task."""
        handle = self._runs.get(key)
        if handle is None or not handle.paused:
            return None
        handle.paused = False
        if handle.proc is not None:
            await handle.proc.resume()
        _release(handle)
        return PauseResult(handle.task_id, handle.harness, 0)

    # -- steering ----------------------------------------------------------------------
    async def steer(self, key: SessionKey, text: str) -> str | None:
        """Pass ``text`` to the chat's running CLI; the harness's name when it was
        written, None when the CLI reads nothing now (not steerable, paused, between
        turns, ended): the caller keeps the message for after the task."""
        handle = self._runs.get(key)
        if handle is None or handle.paused or handle.steering is None:
            return None
        if not await handle.steering.send(text):
            return None
        self._messenger.record(
            key, "harness", text[:EVENT_CHARS], task=handle.task_id, kind="steer"
        )
        return handle.harness

    def cannot_steer(self, handle: RunHandle) -> str | None:
        """Why the run's CLI takes no message mid-run at all, in words for the owner
        ("gemini-cli can't take input mid-run"); None when it can (its stdin may still have
        closed for this turn, or the task be paused: the caller says that)."""
        if handle.steering is not None:
            return None
        try:
            steerable = self._harnesses.get(handle.harness).steerable
        except UnknownHarness:
            steerable = False
        if not steerable:
            return f"{handle.harness} can't take input mid-run"
        if not self._kennel.steerable:
            kennel = self._kennel.name
            return f"{handle.harness} can't take input mid-run in the {kennel} kennel here"
        return None

    # -- stopping ----------------------------------------------------------------------
    async def stop(self, key: SessionKey) -> StopResult | None:
        handle = self._runs.get(key)
        if handle is None:
            return None
        if handle.task is None:  # being started ("On it" on its way): it will not run
            handle.stop_requested = True
            return StopResult(handle.task_id, handle.harness, 0.0, [])
        if handle.saying:
            return StopResult(handle.task_id, handle.harness, 0.0, [], finished=True)
        if handle.paused and handle.proc is not None:
            # Continued first, so the CLI sees its SIGINT and ends tidily.
            handle.paused = False
            await handle.proc.resume()
        handle.stop_requested = True
        handle.task.cancel()
        with suppress(asyncio.CancelledError):
            await handle.task
        leftovers = handle.proc.alive_pids() if handle.proc is not None else []
        return StopResult(handle.task_id, handle.harness, handle.kill_seconds, leftovers)

    # -- the run -----------------------------------------------------------------------
    async def _run(self, session: Session, handle: RunHandle, harness: Harness, repo: Repo) -> None:
        key = session.key
        try:
            failure: str | None = None
            try:
                if handle.layer is None and not handle.layer_name:
                    await self._set_up(session, handle, repo)
                await self._open_layer(handle, repo)
                # unsafe-local hides no host file: its CLI could write the owner's .git
                # or tree by absolute path. Put back what it touched there, and say so.
                unsafe = self._kennel.name == "unsafe-local"
                nothing: list[str] = []
                guard: AbstractContextManager[list[str]] = (
                    guard_repo_config(repo.path) if unsafe else nullcontext(nothing)
                )
                with guard as restored:
                    await self._execute(session, handle, harness, repo)
                if unsafe and not await asyncio.to_thread(repo.is_clean):
                    await asyncio.to_thread(repo.discard)
                    restored.append("files in your working tree")
                if restored:
                    await self._messenger.send(
                        key,
                        "⚠️ The harness changed "
                        + ", ".join(restored)
                        + " outside its own copy; I put it back.",
                    )
                assert handle.layer is not None
                if _question(handle) is None:
                    # Read before the tests run: what they write is never part of it.
                    handle.change = await asyncio.to_thread(handle.layer.read, repo)
                    if _question(handle, allow_guess=handle.change.empty) is None:
                        handle.tests = await self._test(session, handle, repo)
            except TimeoutError:
                failure = (
                    f"{harness.name} took longer than "
                    f"{self._settings.harness.timeout_seconds:.0f} s and was stopped"
                )
            except (HarnessFailed, FetchError) as err:
                failure = str(err)
            except Exception as err:  # a broken layer or state: the owner must hear back
                log.exception("task %s could not run", handle.task_id)
                failure = f"the run could not go on ({type(err).__name__}: {err})"
            async with session.lock:
                handle.saying = True
                try:
                    if failure is None:
                        await self._propose(session, handle, repo)
                except Exception as err:  # the owner must hear back, whatever broke
                    log.exception("reading the result of task %s failed", handle.task_id)
                    failure = f"reading the result failed ({err})"
                if failure is not None:
                    await self._fail(session, handle, repo, failure)
        except asyncio.CancelledError:
            if not handle.stop_requested:
                # Shutdown: leave state and layer for the restart to report and drop.
                handle.keep_layer = True
                raise
            async with session.lock:
                await self._store.work.finish_task(handle.task_id, "stopped", "stopped by owner")
                await self._end(session)
        finally:
            self._runs.pop(key, None)
            if handle.steering is not None:  # the CLI never ran (a failed setup, say)
                await self._unsteer(key, handle, handle.steering)
            await self._settle_layer(handle)
            await self._messenger.typing(key, False)

    async def _set_up(self, session: Session, handle: RunHandle, repo: Repo) -> None:
        """The repository's setup layer for a new run: kept from before, or its committed
        script run now (registries only); without a script, a proposal, once."""
        if not self.setup.enabled or self._kennel.name == "unsafe-local":
            return
        wanted = await asyncio.to_thread(setup_plan, repo)
        if wanted is None:
            text = await self.setup.propose_once(repo)
            if text is not None:
                await self._messenger.send(
                    session.key,
                    f"💡 {handle.repo} has no {SETUP_SCRIPT}, so the kennel (which has no "
                    "network) has none of its dependencies. Commit this as "
                    f"{SETUP_SCRIPT} and it runs once before the next task, with package "
                    f"registries only; its result is kept for every task after:\n```\n"
                    f"{text}```",
                )
            return
        if await asyncio.to_thread(self.layers.setup_ready, repo.path, wanted.digest) is None:
            await self._messenger.send(
                session.key,
                f"🧰 Running {SETUP_SCRIPT} first (package registries only; once for "
                "this commit of it).",
            )

        async def started(proc: KennelProcess, deadline: asyncio.Timeout) -> None:
            handle.proc, handle.deadline, handle.remaining = proc, deadline, None
            if handle.paused:
                await proc.pause()
                _hold(handle)

        outcome = await self.setup.ensure(
            repo, wanted, on_start=started, grace=self._settings.harness.stop_grace_seconds
        )
        handle.proc = None
        handle.setup, handle.setup_line = outcome.layer, outcome.line

    async def _settle_layer(self, handle: RunHandle) -> None:
        """After a run: its layer is dropped (the change is in git objects by now), or,
        while a question waits on it, unmounted and kept."""
        layer = handle.layer
        if layer is None:
            return
        with suppress(FetchError, OSError):
            if handle.keep_layer:
                await asyncio.to_thread(layer.release)
            else:
                await asyncio.to_thread(layer.drop)

    async def _execute(
        self, session: Session, handle: RunHandle, harness: Harness, repo: Repo
    ) -> None:
        settings = self._settings
        layer = handle.layer
        assert layer is not None
        # Asked before the mount: the Docker kennel makes the runs folder a shared mount
        # the first time (after a restart, an answer's turn is the first), and a mount
        # made before that would not reach its containers.
        await asyncio.to_thread(lambda: self._kennel.host_mounts)
        await asyncio.to_thread(layer.mount)
        await asyncio.to_thread(layer.fresh_state, harness.name)
        layout = await asyncio.to_thread(self._kennel.layout, layer.tree, harness.name, repo.path)
        async with AsyncExitStack() as stack:
            relay: RelaySpec | None = None
            mcp: McpServer | None = None
            more_mcp: tuple[McpServer, ...] = ()
            subscription = False
            signin = None  # a ChatGPT sign-in (codex): its account and plan for the CLI
            relay_url = f"http://127.0.0.1:{layout.relay_port}"
            if harness.provider is not None:
                # Memory rides on the relay's socket (/mcp): only runs with a relay get it.
                handler = None
                if self._memory is not None:
                    await self._memory.mcp_ready()
                    # Scoped to this task's chat and subject (orchestrator/memory/scope.py).
                    handler = self._memory.mcp_handler(
                        f"harness:{harness.name}", handle.requester, chat=key_str(session.key)
                    )
                if handler is not None:
                    mcp = McpServer(MCP_SERVER_NAME, f"{relay_url}/mcp")
                # The owner's MCP servers ride on it too (/mcp/<name>), decided per call
                # for this task's subject (orchestrator/mcphost/).
                if self.mcphost is not None and self.mcphost.up():
                    owners = self.mcphost.handler(handle.requester, session.key, handle.task_id)
                    more_mcp = tuple(
                        McpServer(name, f"{relay_url}/mcp/{name}") for name in self.mcphost.up()
                    )
                    handler = _both(handler, owners)
                provider = settings.providers[harness.provider]
                cred = self._credential(harness.provider, harness.name)
                subscription = cred is not None and cred.kind != "api_key"
                signin = cred.signin if cred is not None else None
                if signin is not None:
                    try:  # read now: an unreadable sign-in is said before any kennel starts
                        await asyncio.to_thread(signin.load)
                    except SignInError as err:
                        raise HarnessFailed(f"{harness.name}: {err}") from err
                relay = RelaySpec(
                    upstream=(cred.upstream if cred is not None else None) or provider.base_url,
                    provider=harness.provider,
                    api_key=cred.value if cred is not None else None,
                    auth=cred.kind if cred is not None else "api_key",
                    harness=harness.name,
                    task_id=handle.task_id,
                    log_path=settings.home_dir / "relay.jsonl",
                    token_budget=settings.kennel.token_budget,
                    mcp=handler,
                    on_call=self.costs.relay_hook(key_str(session.key)) if self.costs else None,
                    gate=self.costs.gate(handle.task_id) if self.costs else None,
                    allow_server_tools=settings.kennel.relay_server_tools,
                    signin=signin,
                )
                if cred is not None and (shaped := cred.run_secret()):
                    relay = replace(relay, secret=shaped)
            # Remembered context goes with the task, not with an answer to the CLI's
            # question (the resumed session has it already).
            remembered = (
                await self._memory.context_for(
                    handle.prompt, handle.requester, chat=key_str(session.key)
                )
                if self._memory and handle.answer is None
                else ""
            )
            prompt = handle.answer if handle.answer is not None else handle.prompt
            shown: tuple[Path, ...] = ()
            seen = layout.attachments_seen
            if handle.attachments and seen is not None:
                if handle.attached is None:  # the first turn: copied once, named once
                    handle.attached = await asyncio.to_thread(
                        attached.copy_in, layer, handle.attachments
                    )
                    if handle.attached:
                        note = attached.prompt_note(seen, handle.attached, handle.attachments)
                        prompt = f"{prompt}\n\n{note}"
                shown = tuple(seen / name for name in handle.attached)
            # The owner's messages reach the CLI while it runs when both it and the
            # kennel can take them (orchestrator/task/steer.py).
            steer = harness.steerable and self._kennel.steerable
            handed = (
                await asyncio.to_thread(
                    self._skills.for_cli, session.data.active_skills, handle.repo
                )
                if self._skills is not None
                else ()
            )
            req = HarnessRequest(
                prompt=f"{prompt}\n\n{remembered}" if remembered else prompt,
                resume=handle.resume,
                workdir=layout.workdir,
                state_dir=layout.state_seen,
                model_url=relay_url if relay is not None else None,
                # The CLI's "key" is the run's own secret, which only this run's relay
                # accepts; the real key never leaves the host.
                placeholder_key=relay.secret if relay is not None else PLACEHOLDER_KEY,
                path_env=_with_setup(layout.path_env, layout.workdir, handle.setup),
                model=handle.model or settings.harness.model,
                max_retries=settings.harness.max_retries,
                confined=layout.confined,
                kennel=self._kennel.name,
                mcp=mcp,
                more_mcp=more_mcp,
                subscription=subscription,
                signin_account=signin.tokens.account_id if signin is not None else "",
                signin_plan=signin.tokens.plan if signin is not None else "",
                instructions=instructions_for(handle.agent),
                skills=handed,
                steer=steer,
                attachments=shown,
            )
            # A fresh state folder the host just made: prepare writes where no kennel
            # has been, then the folder is handed to the kennel's uid.
            await asyncio.to_thread(harness.prepare, req, layout.state_host)
            await asyncio.to_thread(layer.prepared)
            argv, env = harness.command(req)
            # The kennel starts the relay with the process and stops it when it ends.
            spec = ExecSpec(
                tuple(argv),
                env,
                layer.tree,
                layout,
                relay=relay,
                git=repo.path / ".git",
                steer=steer,
            )
            proc = await self._kennel.exec(spec)
            handle.proc = proc
            if steer:
                steering = handle.steering
                if steering is None or steering.attached:  # an answer's turn: a new one
                    steering = handle.steering = Steering(harness)
                stack.push_async_callback(self._unsteer, session.key, handle, steering)
                await steering.attach(proc, req.prompt)
            # What the CLI must keep to resume (its transcript) comes back as data, into
            # Fetch's own folder, once the process is gone (callbacks run last first).
            stack.push_async_callback(asyncio.to_thread, layer.keep_state)
            stack.push_async_callback(self._reap, handle)
            if handle.paused:  # /pause came while the kennel was starting
                await proc.pause()
            progress = handle.progress or Progress(self._messenger, session.key, handle.harness)
            first_event = len(handle.events)  # this process's events start here
            async with asyncio.timeout(settings.harness.timeout_seconds) as handle.deadline:
                if handle.paused:
                    _hold(handle)
                async for line in proc.lines():
                    for event in harness.parse(line):
                        handle.events.append(event)
                        if handle.steering is not None:
                            handle.steering.on_event(event)
                        # The task's event timeline (the dashboard's task page).
                        self._messenger.record(
                            session.key,
                            "harness",
                            event.text[:EVENT_CHARS],
                            task=handle.task_id,
                            kind=event.kind,
                        )
                        await progress.on_event(event)
                code = await proc.wait()
            final = next(
                (e for e in reversed(handle.events) if e.kind in {"done", "error", "question"}),
                None,
            )
            usage = next((e for e in reversed(handle.events) if e.kind == "usage"), None)
            # Every turn of this process: a steered CLI may run more than one (each with
            # its own counts); its cost is the session's running total.
            turns = [e for e in handle.events[first_event:] if e.kind == "usage"]
            tokens = (
                sum(int(e.data.get("tokens_in", 0)) for e in turns),
                sum(int(e.data.get("tokens_out", 0)) for e in turns),
            )
            if tokens == (0, 0):
                # Some CLIs (copilot BYOK) report no usage; the relay saw every call.
                tokens = proc.relay_tokens()
            await self._store.work.finish_task(
                handle.task_id,
                "running",
                tokens_in=tokens[0],
                tokens_out=tokens[1],
                cost_usd=float(usage.data.get("cost_usd", 0.0)) if usage else 0.0,
            )
            if signin is not None and signin.expired and (final is None or final.kind != "done"):
                # The one thing the owner can do about it.
                raise HarnessFailed(signin.expired_line)
            refused = self.costs.refusal(handle.task_id) if self.costs else None
            if refused and (final is None or final.kind != "done"):
                # The relay refused its vendor calls: say why, not the CLI's echo of it.
                raise HarnessFailed(f"{harness.name} was stopped: {refused}")
            if final is None:
                tail = proc.stderr_tail().strip().splitlines()[-3:]
                detail = ("\n" + "\n".join(t[:200] for t in tail)) if tail else ""
                why = {
                    137: " — killed: it hit the kennel's memory limit",
                    139: " — it crashed (segfault)",
                }.get(code, "")
                raise HarnessFailed(
                    f"{harness.name} ended (exit code {code}{why}) without a result{detail}"
                )
            if final.kind == "error":
                raise HarnessFailed(f"{harness.name} reported an error: {final.text[:500]}")

    async def _unsteer(self, key: SessionKey, handle: RunHandle, steering: Steering) -> None:
        """The CLI has ended (or was stopped): nothing more reaches it, and a message it
        never took is said, so the owner can send it again (not on /stop or shutdown)."""
        steering.close()
        if handle.steering is steering:
            handle.steering = None
        missed = steering.untaken()
        current = asyncio.current_task()
        if missed and not handle.stop_requested and not (current and current.cancelling()):
            shown = "\n".join(f"• {_short(m)}" for m in missed)
            try:
                await self._messenger.send(
                    key, f"📭 {handle.harness} ended before reading:\n{shown}\nSend it again."
                )
            except FetchError as err:  # the run's own end must not fail on a notice
                log.warning("task %s: unread messages not said: %s", handle.task_id, err)

    async def _test(
        self, session: Session, handle: RunHandle, repo: Repo
    ) -> testrun.SuiteResult | None:
        """The repository's tests, run in the kennel on what the harness left (None: not
        wanted, or nothing changed). Never raises for the tests' sake: a run that cannot
        happen is a line on the card, not a failed task."""
        if not self._settings.approvals.run_tests:
            return None
        change, layer = handle.change, handle.layer
        if change is None or change.empty or layer is None:
            return None
        try:
            policy = await self._approvals.policy(session.key, handle.repo)
            # Which tests, from the owner's tree (at the base, never the kennel's layer:
            # the host reads nothing a kennel wrote to decide what to run).
            plan = await asyncio.to_thread(
                testrun.detect, repo.path, policy.test_command or None, self._kennel.name
            )
            if plan is None:
                return testrun.SuiteResult(None, note="no tests found")

            async def started(proc: KennelProcess, deadline: asyncio.Timeout) -> None:
                # /pause and /stop reach the tests like the harness, and a pause holds
                # the tests' own time limit as it holds the harness's.
                handle.proc, handle.deadline, handle.remaining = proc, deadline, None
                if handle.paused:
                    await proc.pause()
                    _hold(handle)

            # The tests get a fresh state folder too: nothing of the CLI's turn is theirs.
            await asyncio.to_thread(layer.fresh_state, testrun.STATE_NAME)
            return await testrun.run(
                self._kennel,
                layer.tree,
                plan,
                on_start=started,
                limit_seconds=self._settings.approvals.test_timeout_seconds,
                grace=self._settings.harness.stop_grace_seconds,
                shown_at=repo.path,
            )
        except (FetchError, OSError) as err:
            log.warning("tests for task %s could not run: %s", handle.task_id, err)
            return testrun.SuiteResult(None, note=f"could not start: {err}")

    async def _reap(self, handle: RunHandle) -> None:
        if handle.proc is not None:
            handle.kill_seconds = await handle.proc.terminate(
                self._settings.harness.stop_grace_seconds
            )

    # -- outcomes ------------------------------------------------------------------------
    async def _propose(self, session: Session, handle: RunHandle, repo: Repo) -> None:
        change = handle.change
        final = next((e for e in reversed(handle.events) if e.kind == "done"), None)
        said = f"\n{harness_said(final.text)}" if final and final.text else ""
        if handle.setup_line:
            said = f"\n{handle.setup_line}{said}"
        asked = _question(handle, allow_guess=change is None or change.empty)
        if asked is not None:
            await self._ask_owner(session, handle, *asked)
            return
        if change is None or change.empty:
            await self._store.work.finish_task(handle.task_id, "empty", final.text if final else "")
            await self._end(session)
            await self._messenger.send(
                session.key, f"✅ {handle.harness} finished without changing any file.{said}"
            )
            return
        await self._store.work.finish_task(handle.task_id, "proposed", final.text if final else "")
        checks = list(handle.progress.tests) if handle.progress is not None else []
        if handle.tests is not None:
            checks.insert(0, handle.tests.line())
        if handle.setup_line:
            checks.insert(0, handle.setup_line.split("\n", 1)[0])
        await self._store.work.set_task_checks(handle.task_id, checks)
        if handle.progress is not None:
            await handle.progress.finish("review")
            session.data.checklist = handle.progress.answer_marks()
        await self._approvals.propose(
            session, handle.task_id, handle.repo, change, said, tests=handle.tests
        )

    # -- a CLI's question mid-task ------------------------------------------------------
    async def _ask_owner(
        self, session: Session, handle: RunHandle, question: str, resume: str
    ) -> None:
        """The CLI ended its turn with a question: the session WAITS for the owner, the
        run's layer keeps what the CLI did so far, and the answer resumes the same CLI
        session on it (``answer``). Caller holds the lock."""
        handle.keep_layer = True
        layer = handle.layer
        if handle.layer is not None:
            # Unmounted before the question goes out: the answer may come at once, and
            # its turn mounts the layer again (a later unmount would pull it away).
            layer, handle.layer = handle.layer, None
            with suppress(FetchError, OSError):
                await asyncio.to_thread(layer.release)
        await self._store.work.set_task_status(handle.task_id, "question")
        session.data.question = f"{handle.harness} asks: {_short(question, 200)}"
        session.data.question_context = {
            "kind": TASK_QUESTION,
            "task_id": handle.task_id,
            "repo": handle.repo,
            "harness": handle.harness,
            "resume": resume,
            "prompt": handle.prompt,
            "requester": handle.requester,
            "layer": layer.name if layer is not None else "",
        }
        await session.settle(session.ask)
        await self._messenger.send(
            session.key,
            f"❓ {handle.harness} asks (task #{handle.task_id}):\n"
            f"{question.strip()[:1500]}\n\nAnswer here and it goes on; /stop "
            "drops the task.",
        )

    async def answer(self, session: Session, context: dict[str, object], text: str) -> bool:
        """Hand the owner's answer to the CLI that asked: a new turn of the same task,
        resuming its session. False when ``context`` is not a task's question. The
        caller holds ``session.lock`` and has taken the session out of WAITING."""
        if context.get("kind") != TASK_QUESTION:
            return False
        task_id, repo_name = int(str(context["task_id"])), str(context["repo"])
        harness = self._harnesses.get(str(context["harness"]))
        repo = await asyncio.to_thread(self._workspace.repo, repo_name)
        busy = next((h for h in self._runs.values() if h.repo == repo_name), None)
        if busy is not None:  # cannot happen while our partial work sits in the tree
            await self._messenger.send(session.key, f"⏳ {repo_name} is busy; try again.")
            return True
        prompt = str(context.get("prompt", ""))
        session.data.task_id, session.data.repo, session.data.task_prompt = (
            task_id,
            repo_name,
            prompt,
        )
        await session.start_task()
        await self._store.work.set_task_status(task_id, "running")
        handle = RunHandle(
            task_id, harness.name, repo_name, prompt, str(context.get("requester", "owner"))
        )
        handle.answer, handle.resume = text, str(context.get("resume") or "") or None
        handle.layer_name = str(context.get("layer") or "") or None
        self._runs[session.key] = handle
        handle.progress = Progress(
            self._messenger,
            session.key,
            harness.name,
            title=f"Task #{task_id} · {repo_name} · {harness.name}",
        )
        first = await self._messenger.send(
            session.key,
            f"▶️ Passed your answer to {harness.name} (task #{task_id}).\n\n"
            + handle.progress.render("coding"),
        )
        handle.progress.attach(first.message_id)
        if handle.stop_requested or _stopped(session):  # a /stop while this was set up
            await self._unstarted(session, handle, repo)
            return True
        handle.task = self._supervisor.spawn(
            self._run(session, handle, harness, repo), name=f"run:{session.key.slug}:{task_id}"
        )
        return True

    async def _unstarted(self, session: Session, handle: RunHandle, repo: Repo) -> None:
        """A run /stop reached before it was spawned: the chat is free, its task says
        stopped, and the layer a question kept for it goes. Caller holds the lock."""
        self._runs.pop(session.key, None)
        if handle.layer_name:
            await self._drop_kept(repo.path, handle.layer_name)
        await self._store.work.finish_task(handle.task_id, "stopped", "stopped by owner")
        await self._end(session)

    async def drop_question(self, data: SessionData) -> int | None:
        """/stop while a task's question waits: the task ends and its partial work is
        discarded. The task's id, or None when the question was not a task's."""
        context = data.question_context or {}
        if context.get("kind") != TASK_QUESTION:
            return None
        task_id = int(str(context["task_id"]))
        with suppress(FetchError, KeyError, ValueError, OSError):
            path = self._workspace.path(str(context["repo"]))
            await self._drop_kept(path, str(context.get("layer")))
        await self._store.work.finish_task(task_id, "stopped", "stopped by owner")
        data.task_id = None
        data.task_prompt = None
        return task_id

    async def _drop_kept(self, repo: Path, name: str) -> None:
        """The layer a CLI's question kept for its run, dropped (gone already: nothing)."""
        with suppress(FetchError, OSError):
            layer = await asyncio.to_thread(self.layers.find, repo, name)
            if layer is not None:
                await asyncio.to_thread(layer.drop)

    async def _fail(self, session: Session, handle: RunHandle, repo: Repo, why: str) -> None:
        handle.keep_layer = False  # whatever a question kept: the task is over
        await self._store.work.finish_task(handle.task_id, "failed", why)
        if handle.progress is not None:
            await handle.progress.finish("failed")
        await self._end(session)
        await self._messenger.send(
            session.key,
            f"❌ Task #{handle.task_id} failed: {why}\n"
            f"{handle.repo} is unchanged. Try again or rephrase.",
        )

    async def _end(self, session: Session) -> None:
        session.data.task_id = None
        session.data.task_prompt = None
        await session.settle(session.finish)

    async def recover(self, session: Session) -> None:
        """After a restart: a WORKING session lost its harness; clean up and say so."""
        task_id = session.data.task_id
        repo_name = session.data.repo
        async with session.lock:
            if repo_name and task_id is not None:
                with suppress(FetchError, OSError):
                    path = self._workspace.path(repo_name)
                    await asyncio.to_thread(self.layers.drop_task, path, task_id)
            if task_id is not None:
                await self._store.work.finish_task(task_id, "interrupted", "Fetch restarted")
            await self._end(session)
        # Held in the durable outbox until the chat's channel has started (recovery runs
        # before any channel does): start-up never waits on a channel.
        await self._messenger.notify(
            session.key,
            f"⚠️ Fetch restarted while task #{task_id} was running; it was stopped and "
            f"{repo_name or 'the repo'} is unchanged. Send it again to retry.",
        )


TASK_QUESTION = "task"  # question_context kind: a CLI's question mid-task


def _question(handle: RunHandle, allow_guess: bool = False) -> tuple[str, str] | None:
    """(question, CLI session to resume) when the run ended asking the owner: an explicit
    ``question`` event, or (``allow_guess``: nothing was changed) a final answer that is a
    question from a CLI whose session can be resumed."""
    final = next(
        (e for e in reversed(handle.events) if e.kind in {"done", "error", "question"}), None
    )
    session = next(
        (
            str(e.data.get("session_id") or "")
            for e in reversed(handle.events)
            if e.data.get("session_id")
        ),
        "",
    )
    if final is None:
        return None
    if final.kind == "question":
        return final.text, str(final.data.get("session_id") or session)
    if final.kind == "done" and allow_guess and session and final.text.rstrip().endswith("?"):
        return final.text, session
    return None


def _stopped(session: Session) -> bool:
    """A /stop came for the message the chat's worker is handling (``Session.turn``)."""
    return session.turn is not None and session.turn.stopped


def _hold(handle: RunHandle) -> None:
    """Stop the run's clock: what was left is kept for ``_release``."""
    deadline = handle.deadline
    when = deadline.when() if deadline is not None else None
    if deadline is None or when is None:
        return
    with suppress(RuntimeError):  # the limit's block has already ended
        deadline.reschedule(None)
        handle.remaining = max(0.0, when - asyncio.get_running_loop().time())


def _release(handle: RunHandle) -> None:
    if handle.deadline is not None and handle.remaining is not None:
        with suppress(RuntimeError):
            handle.deadline.reschedule(asyncio.get_running_loop().time() + handle.remaining)
        handle.remaining = None


def _both(memory: McpHandler | None, owners: McpHandler) -> McpHandler:
    """The relay's /mcp route: Fetch's memory at /mcp, the owner's servers below it."""

    async def handle(request: web.Request) -> web.StreamResponse:
        if request.path.rstrip("/") == "/mcp":
            if memory is None:
                return web.json_response({"error": "memory is off"}, status=404)
            return await memory(request)
        return await owners(request)

    return handle


def _with_setup(path_env: str, workdir: Path, setup: Path | None) -> str:
    """The CLI's PATH: what the repository's setup installed comes first (its venv's
    tools, ``node_modules/.bin``), so the CLI checks its work with the project's own."""
    if setup is None:
        return path_env
    return f"{workdir}/.venv/bin:{workdir}/node_modules/.bin:{path_env}"


def harness_said(text: str) -> str:
    text = text.strip()
    return "💬 " + (text if len(text) <= 300 else text[:299] + "…")


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["PauseResult", "RunHandle", "StopResult", "TaskRunner"]


def instructions_for(member: Agent | None) -> str:
    """What the CLI reads as its user-level instructions: who it is, then the member's."""
    if member is None or not member.instructions:
        return ""
    return f"# Fetch pack member: {member.name} ({member.role})\n\n{member.instructions}\n"
