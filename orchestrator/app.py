"""The one composition root: ``build_app(settings)`` wires everything; ``App`` is an async
context manager whose exit undoes exactly what its entry did, in reverse."""

from __future__ import annotations

import asyncio
import logging
import os
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path

from channels.base import Channel
from channels.http import HttpServer
from channels.http.auth import WebAuth
from channels.http.favicon import add_favicon
from channels.http.health import add_health
from channels.terminal import TerminalChannel
from core.clock import Clock, SystemClock
from core.errors import ConfigError
from core.events import SessionKey
from core.gate import AllowlistGate
from core.state import State
from harnesses import builtin_harnesses
from harnesses.base import HarnessRegistry
from identity import load_identity, load_pack
from instincts import build_registry
from kennel.base import Kennel
from kennel.bwrap import BwrapKennel
from kennel.choice import Choice, choose, docker_image
from kennel.limits import Limits
from kennel.local import LocalKennel
from kennel.remote_engine import Engine, is_remote
from orchestrator.ahead import preload, settle
from orchestrator.alerts import Alerts
from orchestrator.boundary.layer import build_layers
from orchestrator.config import Settings
from orchestrator.costs.wiring import build_ledger, phone_warning
from orchestrator.dashboard import mount as mount_dashboard
from orchestrator.dashboard.render import Renderer
from orchestrator.gateway import Gateway
from orchestrator.hearing.ears import Ears
from orchestrator.hearing.pending import Pending
from orchestrator.hearing.transcriber import Transcriber
from orchestrator.improve.review import keep_review_job
from orchestrator.mcphost.service import McpHost, sandbox_owner
from orchestrator.memory import Memory
from orchestrator.messenger import Messenger
from orchestrator.permissions.service import Permissions
from orchestrator.planner import Planner
from orchestrator.scheduler import Scheduler
from orchestrator.services import Services
from orchestrator.session import Sessions
from orchestrator.shipped import SHIPPED_DATA as SHIPPED_DATA  # re-exported: tests, doctor
from orchestrator.skills.book import SkillBook
from orchestrator.startcheck import check_start
from orchestrator.store import Journal, Store
from orchestrator.store.outbox import ChatKeep
from orchestrator.store.processes import TakeOver
from orchestrator.supervisor import TaskSupervisor
from orchestrator.task.approvals import Approvals
from orchestrator.task.recovery import recover_journal, tell
from orchestrator.task.runner import TaskRunner
from orchestrator.task.waiting import announce_waiting_diffs, restore_kept_diffs
from orchestrator.tools import build_tools
from orchestrator.workspace import Workspace
from skills import discover

log = logging.getLogger(__name__)


def identity_dir(settings: Settings) -> Path:
    own = settings.home_dir / "identity"
    return own if (own / "COLLAR.md").exists() else SHIPPED_DATA / "identity"


def build_kennel(settings: Settings, choice: Choice | None = None) -> Kennel:
    """The backend ``kennel.backend`` names (``auto``: see kennel/choice.py)."""
    choice = choice or choose(settings.kennel)
    path_env = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    if choice.backend == "docker":
        from kennel.docker_backend import DockerKennel

        docker = settings.kennel.docker
        secrets = tuple(p.api_key for p in settings.providers.values() if p.api_key)
        if is_remote(docker.host):  # another engine: the tree travels as data
            from kennel.remote import RemoteDockerKennel
            from orchestrator.boundary.remote_files import RemoteFiles

            engine = Engine.parse(str(docker.host), docker.cert_path, docker.tls_verify)
            image = docker_image(settings.kennel)
            files = RemoteFiles(settings.home_dir)  # the boundary reads what comes back
            return RemoteDockerKennel(
                settings.home_dir, docker, image, engine, secrets, files=files
            )
        return DockerKennel(settings.home_dir, docker, docker_image(settings.kennel), secrets)
    if choice.backend == "unsafe-local":
        return LocalKennel(settings.home_dir, settings.kennel.network_isolation, path_env)
    return BwrapKennel(
        settings.home_dir,
        settings.kennel.bwrap.user,
        path_env,
        limits=Limits.from_settings(settings.kennel.bwrap),
    )


def build_harnesses() -> HarnessRegistry:
    registry = HarnessRegistry()
    for harness in builtin_harnesses():
        registry.add(harness)
    return registry


def build_channels(
    settings: Settings, http: HttpServer, auth: WebAuth | None = None
) -> list[Channel]:
    """The phone-facing channels the settings enable (the terminal is added by the CLI);
    the web chat needs the web token's ``auth`` (no auth, no web chat)."""
    channels: list[Channel] = []
    if settings.whatsapp.enabled:
        from channels.whatsapp import WhatsAppChannel

        channels.append(
            WhatsAppChannel(
                settings.whatsapp,
                settings.home_dir,
                trigger=settings.gateway.trigger,
                gate=AllowlistGate(settings.allowlist),
                max_audio_seconds=settings.transcription.max_seconds,
            )
        )
    if settings.telegram.enabled:
        from channels.telegram import TelegramChannel

        channels.append(
            TelegramChannel(
                settings.telegram,
                http=http,
                public_url=settings.telegram.webhook_url,
                gate=AllowlistGate(settings.allowlist),
                home=settings.home_dir,
                max_audio_seconds=settings.transcription.max_seconds,
            )
        )
    if settings.webhook.enabled:
        from channels.webhook import WebhookChannel

        channels.append(WebhookChannel(settings.webhook, http))
    if settings.webchat.enabled and auth is not None:
        from channels.web import WebChatChannel

        channels.append(WebChatChannel(settings.webchat, http, auth, settings.home_dir))
    return channels


def owner_chats(settings: Settings, channels: list[Channel]) -> dict[str, str]:
    """Where the owner can be reached on each channel (for alerts), in channel order."""
    wa_owner = settings.whatsapp.owner
    known = {
        "terminal": settings.terminal.chat,
        "telegram": settings.telegram.owner_id,
        "web": settings.webchat.chat,
        "whatsapp": f"{wa_owner}@s.whatsapp.net" if wa_owner else None,
    }
    return {c.name: str(known[c.name]) for c in channels if known.get(c.name)}


class App:
    def __init__(
        self,
        settings: Settings,
        channels: list[Channel],
        http: HttpServer | None = None,
        clock: Clock | None = None,
        web_auth: WebAuth | None = None,
    ) -> None:
        self.clock: Clock = clock or SystemClock()
        self.settings = settings
        self.channels = channels
        self.http = http
        # The web token's keeper (login link, cookie, CSRF) when the web pages are served.
        self.web_auth = web_auth
        self._stack: AsyncExitStack | None = None
        self.services: Services | None = None
        self.gateway: Gateway | None = None
        self.ears: Ears | None = None  # the channels' sink: voice notes heard, then the gateway
        self.serving = False
        # Why the web pages are off although they were wanted (the default port taken).
        self.web_off: str | None = None

    async def __aenter__(self) -> App:
        if self._stack is not None:
            raise RuntimeError("app already started")
        stack = AsyncExitStack()
        await stack.__aenter__()
        try:
            await self._start(stack)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._stack is not None:
            stack, self._stack = self._stack, None
            await stack.aclose()

    async def _start(self, stack: AsyncExitStack) -> None:
        settings = self.settings
        home = settings.home_dir
        home.mkdir(parents=True, exist_ok=True)
        os.chmod(home, 0o700)  # the home holds keys' logs, the DB and (later) WhatsApp
        # Which kennel, and the kennel itself: with kennel.backend auto the Docker engine
        # is asked (a ping and the image looked up over its socket), and the Docker
        # backend imports the Docker library (~0.15 s): in a thread, while the loop opens
        # the store and memory; taken where the runner needs it.
        choosing = asyncio.ensure_future(
            asyncio.to_thread(lambda: build_kennel(settings, choose(settings.kennel)))
        )

        async def close_kennel() -> None:
            # Here in the exit order (after everything that uses the kennel), and always
            # awaited and closed, even when the start failed before it was taken.
            try:
                built = await choosing
            except Exception:
                return
            await built.close()

        stack.push_async_callback(close_kennel)
        harnesses = build_harnesses()
        check_start(settings)  # what `fetch` and `fetch doctor` checked already (tests: not)
        identity = load_identity(identity_dir(settings))
        skills = discover(home / "skills", SHIPPED_DATA / "skills")
        # The pack: the owner's agents/ over the shipped one (a bad owner's file skipped).
        pack = load_pack(SHIPPED_DATA / "agents", home / "agents")
        workspace = Workspace(settings.workspace_dir)
        if settings.workspace is None:
            workspace.ensure_demo()
        elif not settings.workspace_dir.is_dir():
            raise ConfigError("workspace", str(settings.workspace_dir), "an existing folder")
        # A bad skill file is skipped, never fatal: /status and `fetch doctor` name it.
        skill_book = SkillBook(skills, workspace)
        for problem in skills.problems:
            log.warning("%s", problem.line())

        store = await stack.enter_async_context(Store(settings.db_path, settings.store.url))
        journal = Journal(home / "sessions")
        stack.callback(journal.close)
        messenger = Messenger(store, journal)
        supervisor = TaskSupervisor()
        # Runs and queues are cancelled before the store closes (exit runs in reverse).
        stack.push_async_callback(supervisor.stop, 0.0)
        sessions = Sessions(store.sessions)
        permissions = Permissions(
            settings, store, messenger, workspace, owner_chats(settings, self.channels)
        )
        await permissions.start()
        approvals = Approvals(settings, store, messenger, workspace, permissions, sessions)
        memory = Memory(settings, supervisor)
        await memory.start()
        stack.push_async_callback(memory.stop)
        kennel = await choosing
        runner = TaskRunner(
            settings=settings,
            store=store,
            messenger=messenger,
            workspace=workspace,
            harnesses=harnesses,
            kennel=kennel,
            supervisor=supervisor,
            approvals=approvals,
            layers=build_layers(settings.home_dir, kennel),
            memory=memory,
            pack=pack,
            skills=skill_book,
        )
        # Every paid model call priced and recorded, budgets kept (orchestrator/costs/).
        costs = await build_ledger(
            settings,
            store.usage,
            SHIPPED_DATA,
            phone_warning(messenger, supervisor, owner_chats(settings, self.channels)),
            self.clock.now,
        )
        runner.costs = costs
        if settings.mcp.servers:
            # The owner's MCP servers, on the host, offered to every task through its
            # relay (orchestrator/mcphost/); one that cannot start is named, not fatal.
            mcphost = McpHost(
                settings.mcp,
                permissions,
                messenger,
                home=home,
                owner=sandbox_owner(home, settings.kennel.bwrap.user),
                user=settings.kennel.bwrap.user,
            )
            await mcphost.start()
            stack.push_async_callback(mcphost.stop)
            runner.mcphost = mcphost
        memory.record_costs(costs.recorder)
        planner = Planner(settings.model, build_tools(), costs=costs)
        stack.push_async_callback(planner.close)
        alerts = Alerts(messenger, supervisor, owner_chats(settings, self.channels))
        for channel in self.channels:
            if hasattr(channel, "on_alert"):
                channel.on_alert = partial(alerts.raise_, channel.name)
        services = Services(
            settings=settings,
            store=store,
            journal=journal,
            messenger=messenger,
            sessions=sessions,
            workspace=workspace,
            harnesses=harnesses,
            kennel=kennel,
            instincts=build_registry(),
            identity=identity,
            skills=skill_book,
            supervisor=supervisor,
            runner=runner,
            approvals=approvals,
            planner=planner,
            alerts=alerts,
            memory=memory,
            permissions=permissions,
            scheduler=None,
            costs=costs,
        )
        await services.blocks.load()  # the memory blocks, read once (/identity reads them)
        await services.links.load()  # chats that share one session (/link)
        messenger.device = services.links.route  # a pair's replies: where the owner wrote
        # The start-up's recoveries are about work a stopped Fetch left: on a database
        # another live process uses (PostgreSQL), that work may be its, still running.
        alone = store.db.alone
        if alone:
            await services.improver.start()  # /improve runs a restart cut short: marked so
        gateway = Gateway(services)
        self.services, self.gateway = services, gateway
        # Voice notes become typed text in front of the gateway (orchestrator/hearing/).
        transcriber = Transcriber(settings.transcription, record=costs.record)
        stack.push_async_callback(transcriber.close)
        ears = Ears(
            gateway.receive,
            gateway.allowed,
            messenger,
            supervisor,
            transcriber,
            settings.transcription,
            refusal=costs.refusal,
            member_rate=settings.gateway.rate_per_minute,
            # Kept until the gateway has the words: a kill mid-transcription loses none.
            pending=Pending(settings.home_dir / "hearing" / "pending"),
            seen=store.inbox.seen,
        )
        self.ears = ears
        if settings.scheduler.enabled:
            scheduler = Scheduler(
                settings, store, gateway.receive, messenger, supervisor, self.clock
            )
            services.scheduler = scheduler
        for channel in self.channels:
            messenger.add_channel(channel)

        # A commit or undo a kill interrupted is settled from git before anything reads
        # the commits or the approvals (the chats are told once their channels are up).
        async def ttl(key: SessionKey, repo: str) -> float:
            return float((await permissions.policy(key, repo)).ttl_seconds)

        recovered = (
            await recover_journal(store, workspace, sessions, settings.owner, ttl) if alone else []
        )
        # A restart: sessions that were WORKING lost their harness; say so and clean up.
        for row in await store.sessions.in_states((State.WORKING.value,)) if alone else []:
            await runner.recover(await sessions.get(row.key))
        # A task row no chat works on has no run either (its message is replayed below).
        if alone and (orphans := await store.work.interrupt_orphans()):
            log.info("marked %d task(s) a stopped Fetch left without a run", orphans)
        # What a killed run left of its layers (overlay mounts, copies) goes, but for
        # the layer a CLI's question still waits on.
        waiting = [
            (await sessions.get(row.key)).data.question_context or {}
            for row in await store.sessions.in_states((State.WAITING.value,))
        ]
        keep = frozenset(str(c.get("layer") or "") for c in waiting) - {""}
        dropped = await asyncio.to_thread(runner.layers.sweep_all, keep)
        if dropped:
            log.info("dropped %d run layer(s) a stopped Fetch left", len(dropped))
        # What the last run accepted but never handled, read before anything can accept
        # more: only these are replayed (a message accepted live from here on is queued
        # by receive itself).
        unfinished = await store.inbox.queued()
        from channels.web import WebChatChannel  # here: only a served page needs aiohttp

        for channel in self.channels:
            if isinstance(channel, WebChatChannel):  # its page's replies outlive a restart
                channel.outbox.keep = ChatKeep(
                    store.outbox, channel.name, settings.webchat.outbox_size
                )
            await channel.start(ears.receive, supervisor)  # its tasks are ours too
            stack.push_async_callback(channel.stop)
            messenger.opened(channel.name)
            stack.callback(messenger.closed, channel.name)
        pages: Renderer | None = None
        if self.http is not None and self.web_auth is not None:
            # The dashboard (orchestrator/dashboard/): the token holder's pages.
            dash = mount_dashboard(
                self.http, self.web_auth, services, self.channels, gateway.receive
            )
            pages = dash.render
        if self.http is not None and self.http.routes:  # polling-only: no listener at all
            add_health(self.http, lambda: self.serving)
            add_favicon(self.http)  # browsers ask on every page: no 404 in their console
            try:
                await self.http.start()
            except ConfigError as err:
                if self._listener_required():
                    raise
                # Only the web pages wanted it, on the default port: a second program
                # (or a second Fetch with its own home) on 8787 must not stop the phone
                # and terminal channels from working. Said in the banner and /status.
                self.web_off = f"{err}; set http.port to serve the web pages"
                log.warning("web pages off: %s", self.web_off)
            else:
                stack.push_async_callback(self.http.stop)
        stack.callback(gateway.close)
        if services.scheduler is not None:
            # Started last and stopped first: a fired job needs every other part running.
            await services.scheduler.start()
            stack.push_async_callback(services.scheduler.stop)
            # improve.schedule: the self-review job (it only ever proposes a PR).
            owner = next(iter(owner_chats(settings, self.channels).items()), None)
            owner_key = SessionKey(*owner) if owner else None
            log.info("%s", await keep_review_job(services.scheduler, settings, owner_key))
        # What a crash left, held in the durable outbox until the channels were up.
        await messenger.deliver_held()
        await tell(messenger, recovered)
        await announce_waiting_diffs(store, sessions, approvals, workspace, messenger, permissions)
        # Members' diffs kept for the owner's busy chat wait again (offered where it rests).
        await restore_kept_diffs(store, sessions, approvals, permissions, supervisor)
        replayed = await gateway.replay_unfinished(unfinished)
        if replayed:
            log.info("replaying %d message(s) accepted before the restart", replayed)
        if store.db.dialect == "postgresql":
            # Other processes share the database: what one that dies leaves (its running
            # tasks, queued messages, held notices) is taken over while this one runs,
            # not only at a start alone. Its open intents and /improve runs still wait
            # for a start alone (they carry no holder).
            async def recover_gone() -> int:
                """Tasks a process that died left running: this process's now, once."""
                taken = await store.work.adopt_tasks()
                for task_id, key in taken:
                    session = await sessions.get(key)
                    if session.data.task_id == task_id:
                        await runner.recover(session)
                    else:  # the chat has moved on since: only the task's row is left
                        await store.work.finish_task(task_id, "interrupted", "its Fetch stopped")
                return len(taken)

            takeover = TakeOver(
                store.inbox.adopt,
                gateway.replay_unfinished,
                messenger.deliver_held,
                supervisor,
                recover=recover_gone,
            )
            await takeover.start()
            stack.push_async_callback(takeover.stop)
        # Voice notes a stopped Fetch was still hearing: heard again (or said lost).
        await ears.recover()
        self.serving = True  # /healthz: 200 from here; the first step down makes it 503
        if pages is not None:
            pages.prepare()  # the pages' templates, in a thread now that Fetch is up
        # The model's connection (TCP, TLS) opened now, not by the first message: an owned
        # task, ended with the supervisor; nothing is sent to the provider.
        supervisor.spawn(planner.warm(), name="model:warm")
        # What the first message would otherwise pay for (orchestrator/ahead.py).
        owners = [SessionKey(*chat) for chat in owner_chats(settings, self.channels).items()]
        supervisor.spawn(preload(sessions, owners), name="ahead:sessions")
        settle(services.identity)
        stack.callback(setattr, self, "serving", False)

    def _listener_required(self) -> bool:
        """The listener must come up (or Fetch not start) when a channel receives through
        it or the owner chose its port."""
        s = self.settings
        return bool(
            s.webhook.enabled
            or (s.telegram.enabled and s.telegram.webhook_url)
            or "port" in s.http.model_fields_set
            or "host" in s.http.model_fields_set
        )

    async def drain(self) -> None:
        """Wait until every accepted message is handled and no harness runs."""
        assert self.gateway is not None and self.services is not None
        supervisor = self.services.supervisor
        while (  # noqa: ASYNC110
            not self.gateway.idle() or supervisor.running("run:") or supervisor.running("hear:")
        ):
            await asyncio.sleep(0.05)


def build_app(
    settings: Settings,
    *,
    channels: list[Channel] | None = None,
    terminal: TerminalChannel | None = None,
    clock: Clock | None = None,
) -> App:
    """``channels`` given: exactly those (tests). Otherwise the enabled phone channels,
    plus ``terminal`` when the CLI runs interactively."""
    if channels is not None:
        return App(settings, channels, clock=clock)
    http = HttpServer(settings.http)
    # The web pages (web chat, dashboard) are the token holder's only: /login sets the
    # cookie. The token is made on first start in the home and reused after.
    web_auth = WebAuth.from_home(settings.home_dir)
    web_auth.install(http)
    built = build_channels(settings, http, web_auth)
    if terminal is not None:
        built.insert(0, terminal)
    return App(settings, built, http, clock=clock, web_auth=web_auth)
