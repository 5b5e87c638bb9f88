"""Instincts run against their contract alone: a fake context with fake facades, no
application. (The real ``Context`` is checked against the same Protocols by mypy.)"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from core.errors import UnknownHarness
from core.events import Inbound, SendResult, SessionKey
from core.session_data import SessionData
from core.state import State
from instincts import build_registry
from instincts.contract import (
    CommandInfo,
    HarnessInfo,
    InstinctContext,
    ModelOption,
    PausedTask,
    SessionPort,
    StoppedTask,
)
from instincts.router import InstinctRegistry

KEY = SessionKey("terminal", "me")


@dataclass
class FakeSession:
    key: SessionKey = KEY
    state: State = State.ALERT
    data: SessionData = field(default_factory=SessionData)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    persisted: int = 0

    def stop_turn(self, by: str | None) -> bool:
        return False  # no message is being worked out next to the instinct under test

    async def persist(self) -> None:
        self.persisted += 1

    async def answered(self) -> None:
        assert self.state is State.WAITING
        self.state = State.ALERT

    async def pause(self) -> None:
        self.state = State.RESTING

    async def resume(self) -> None:
        self.state = State.ALERT

    async def reset(self) -> None:
        self.state = State.ALERT


class FakeScheduling:
    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    @property
    def enabled(self) -> bool:
        return True

    def usage(self, kind: str) -> str:
        return f"<{kind} example>"

    async def manage(self, verb: str, rest: str, viewer: SessionKey | None) -> str | None:
        self.calls.append(("manage", verb, rest, str(viewer)))
        return "listed" if verb == "list" else None

    async def create(self, kind: str, line: str, home: SessionKey) -> str:
        self.calls.append(("create", kind, line))
        return "created"

    async def create_cron(self, line: str, home: SessionKey) -> str:
        self.calls.append(("cron", line))
        return "cron created"


class FakeMemory:
    async def remember(self, kind: str, text: str, tags: tuple[str, ...]) -> str:
        return f"remembered {kind} {text} {tags}"

    async def overview(self) -> str:
        return "overview"

    async def search(self, query: str) -> str:
        return f"found {query}"

    async def forget(self, item_id: int) -> str:
        return f"forgot {item_id}"


class FakeTasks:
    def __init__(self, running: bool, whose: str = "owner") -> None:
        self.running = running
        self.whose = whose
        self.stopped = False

    def requester(self, key: SessionKey) -> str | None:
        return self.whose if self.running and not self.stopped else None

    async def stop(self, key: SessionKey) -> StoppedTask | None:
        return StoppedTask(3, "demo", 0.25, 1) if self.running else None

    async def pause(self, key: SessionKey) -> PausedTask | None:
        return PausedTask(3, "demo", 2) if self.running else None

    async def resume(self, key: SessionKey) -> PausedTask | None:
        return PausedTask(3, "demo", 0) if self.running else None

    async def drop_question(self, session: SessionPort) -> int | None:
        return None

    async def autonomy(self, session: SessionPort, level: str) -> str:
        return f"autonomy {level or 'supervised'}"

    async def project(self, session: SessionPort) -> str:
        return "project"


class FakeCommits:
    async def undo_last(self, key: SessionKey) -> str:
        return "undone"


class FakeFiles:
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def send(self, args: str) -> str:
        self.asked.append(args)
        return f"📎 Sent {args} of demo."


class FakeWorkspace:
    def listing(self, active: str | None) -> str:
        return f"repos, active {active}"

    async def use(self, session: SessionPort, name: str) -> str:
        session.data.repo = name
        return f"using {name}"


class FakeModels:
    OPTIONS = (
        ModelOption("orchestrator", "gpt-4o-mini", "openai"),
        ModelOption("orchestrator", "qwen2.5", "local"),
        ModelOption("claude-code", "claude-opus-4-8"),
        ModelOption("claude-code", "sonnet"),
    )

    def options(self) -> list[ModelOption]:
        return list(self.OPTIONS)

    def families(self) -> list[str]:
        return ["claude-code"]


class FakeLinking:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def offer(self) -> str:
        self.calls.append("offer")
        return "🔗 Link code: 123456"

    async def redeem(self, code: str) -> str:
        self.calls.append(f"redeem {code}")
        return "🔗 Linked"

    async def unlink(self) -> str:
        self.calls.append("unlink")
        return "🔗 Unlinked"


class FakeHarnesses:
    ALL = (HarnessInfo("demo", True, "no model needed"), HarnessInfo("codex", False, "nope"))

    def default(self) -> str:
        return "demo"

    def all(self) -> list[HarnessInfo]:
        return list(self.ALL)

    def get(self, name: str) -> HarnessInfo:
        for info in self.ALL:
            if info.name == name:
                return info
        raise UnknownHarness(name, [i.name for i in self.ALL])


@dataclass
class FakeSkills:
    calls: list[str] = field(default_factory=list)

    async def listing(self, session: SessionPort) -> str:
        self.calls.append("list")
        return "skills"

    async def show(self, session: SessionPort, name: str) -> str:
        self.calls.append(f"show {name}")
        return f"skill {name}"


class FakeStatus:
    async def report(self, session: SessionPort) -> str:
        return f"status {session.state}"


@dataclass
class FakeImprove:
    refusal: str | None = None
    asked: list[str] = field(default_factory=list)

    async def improve(self, session: SessionPort, request: str) -> str | None:
        self.asked.append(request)
        return self.refusal

    async def pull_requests(self) -> str:
        return "📬 prs"


@dataclass
class FakeCost:
    asked: list[SessionKey] = field(default_factory=list)

    async def report(self, key: SessionKey) -> str:
        self.asked.append(key)
        return "💰 cost"


@dataclass
class FakeGrants:
    """Records what /grants asked for; the wording is the real port's business."""

    for_owner: bool = True
    calls: list[tuple[str, ...]] = field(default_factory=list)
    who: str = ""

    @property
    def subject_id(self) -> str:
        return self.who or ("owner" if self.for_owner else "alice")

    def listing(self) -> str:
        return "no grants"

    async def revoke(self, grant_id: int) -> str:
        self.calls.append(("revoke", str(grant_id)))
        return f"revoked #{grant_id}"

    async def answer(self, nonce: str, yes: bool, scope: str) -> str:
        self.calls.append(("answer", nonce, "yes" if yes else "no", scope))
        return f"answered {nonce}"

    async def grant(self, who: str, action: str, scope: str) -> str:
        self.calls.append(("grant", who, action, scope))
        return f"granted {who} {action}"


@dataclass
class FakeIdentity:
    """Records which of /identity /whoami /tools asked; the wording is the facade's."""

    calls: list[str] = field(default_factory=list)

    def identity(self) -> str:
        self.calls.append("identity")
        return "who"

    def whoami(self) -> str:
        self.calls.append("whoami")
        return "you"

    def tools(self) -> str:
        self.calls.append("tools")
        return "tools"


@dataclass
class FakeBlocks:
    """Records what /blocks asked for; ``demo`` is the only repository."""

    calls: list[tuple[object, ...]] = field(default_factory=list)

    async def known_repo(self, word: str) -> bool:
        return word == "demo"

    async def listing(self, active: str | None) -> str:
        self.calls.append(("listing", active))
        return "blocks"

    async def show(self, kind: str, repo: str | None) -> str:
        self.calls.append(("show", kind, repo))
        return "shown"

    async def edit(self, kind: str, repo: str | None, mode: str, text: str) -> str:
        self.calls.append(("edit", kind, repo, mode, text))
        return "edited"

    async def history(self, kind: str, repo: str | None) -> str:
        self.calls.append(("history", kind, repo))
        return "history"

    async def revert(self, kind: str, repo: str | None, version: int) -> str:
        self.calls.append(("revert", kind, repo, version))
        return "reverted"


@dataclass
class FakeContext:
    inbound: Inbound
    session: FakeSession
    registry: InstinctRegistry
    scheduling: FakeScheduling = field(default_factory=FakeScheduling)
    memory: FakeMemory = field(default_factory=FakeMemory)
    tasks: FakeTasks = field(default_factory=lambda: FakeTasks(False))
    commits: FakeCommits = field(default_factory=FakeCommits)
    workspace: FakeWorkspace = field(default_factory=FakeWorkspace)
    files: FakeFiles = field(default_factory=FakeFiles)
    harnesses: FakeHarnesses = field(default_factory=FakeHarnesses)
    models: FakeModels = field(default_factory=FakeModels)
    linking: FakeLinking = field(default_factory=FakeLinking)
    status: FakeStatus = field(default_factory=FakeStatus)
    skills: FakeSkills = field(default_factory=FakeSkills)
    grants: FakeGrants = field(default_factory=FakeGrants)
    identity: FakeIdentity = field(default_factory=FakeIdentity)
    blocks: FakeBlocks = field(default_factory=FakeBlocks)
    cost: FakeCost = field(default_factory=FakeCost)
    improve: FakeImprove = field(default_factory=FakeImprove)
    said: list[str] = field(default_factory=list)

    @property
    def commands(self) -> InstinctRegistry:
        return self.registry

    async def reply(self, text: str) -> SendResult:
        self.said.append(text)
        return SendResult(str(len(self.said)))


REGISTRY = build_registry()


async def run(
    line: str,
    session: FakeSession | None = None,
    *,
    owner: bool = True,
    ctx: FakeContext | None = None,
) -> FakeContext:
    word, _, args = line.lstrip("/").partition(" ")
    inbound = Inbound(
        channel="terminal",
        chat="me",
        sender="me",
        message_id="1",
        text=line,
        from_owner=owner,
        command=word,
        args=args,
    )
    if ctx is None:
        ctx = FakeContext(inbound, session or FakeSession(), REGISTRY)
    else:
        ctx.inbound = inbound
    instinct = REGISTRY.get(word)
    assert instinct is not None
    typed: InstinctContext = ctx  # the fake satisfies the same contract as the app
    await instinct.handler(typed, args)
    return ctx


async def test_pause_resume_clear_move_the_session() -> None:
    session = FakeSession()
    assert (await run("/pause", session)).said == ["😴 Paused. /resume when you want me back."]
    assert session.state is State.RESTING
    assert (await run("/resume", session)).said == ["🐕 Back. What's next?"]
    session.data.repo, session.data.harness = "demo", "codex"
    session.data.active_skills = [{"name": "commit-style", "body": "..."}]
    await run("/clear", session)
    assert session.data == SessionData()


async def test_stop_forgets_a_question_or_reports_the_stopped_task() -> None:
    session = FakeSession(state=State.WAITING, data=SessionData(question="Which repo?"))
    assert (await run("/stop", session)).said == ["⏹ OK, forget that question."]
    assert session.state is State.ALERT and session.data.question is None
    ctx = FakeContext(
        Inbound("terminal", "me", "me", "1", "/stop"),
        FakeSession(),
        REGISTRY,
        tasks=FakeTasks(True),
    )
    said = (await run("/stop", ctx=ctx)).said[0]
    assert "Stopped task #3: demo ended in 0.25 s" in said and "1 process(es)" in said


async def test_a_member_cannot_stop_or_pause_someone_elses_task() -> None:
    """In a shared chat the running task is stopped, paused or resumed only by whom it
    is for, or by the owner (a member's /stop used to end the owner's work)."""
    for word in ("/stop", "/pause", "/resume"):
        ctx = FakeContext(
            Inbound("terminal", "g", "alice", "1", word),
            FakeSession(state=State.WORKING),
            REGISTRY,
            tasks=FakeTasks(True, whose="owner"),
        )
        ctx.grants = FakeGrants(for_owner=False, who="alice")
        said = (await run(word, ctx=ctx)).said
        assert said == [
            "🔒 The running task is owner's: only they or the owner can stop or pause it."
        ]
    # Their own task, yes; and the owner may stop a member's.
    for who, owner in (("alice", False), ("owner", True)):
        ctx = FakeContext(
            Inbound("terminal", "g", who, "1", "/stop"),
            FakeSession(state=State.WORKING),
            REGISTRY,
            tasks=FakeTasks(True, whose="alice"),
        )
        ctx.grants = FakeGrants(for_owner=owner, who=who)
        assert "Stopped task #3" in (await run("/stop", ctx=ctx)).said[0]


async def test_cron_talks_to_its_facade_only() -> None:
    ctx = await run("/jobs")
    assert ctx.said == ["listed"] and ctx.scheduling.calls[0][:2] == ("manage", "list")
    ctx = await run("/cron 0 9 * * 1-5 check the build", owner=False)
    assert ctx.said == ["cron created"]
    assert ctx.scheduling.calls[0] == ("manage", "0", "9 * * 1-5 check the build", str(KEY))
    ctx = await run("/cron every weekday at 9 check the build")
    assert ctx.scheduling.calls[-1] == ("create", "prompt", "every weekday at 9 check the build")
    assert "<cron example>" in (await run("/cron")).said[0]


async def test_harness_memory_workspace_status_help() -> None:
    session = FakeSession()
    assert "This chat now uses codex" in (await run("/harness codex", session)).said[0]
    assert session.data.harness == "codex" and session.persisted == 1
    listed = (await run("/harness", session)).said[0]
    assert "▶ codex: nope" in listed and "✅ demo" in listed
    assert "🤔 unknown harness 'x'; valid: demo, codex" in (await run("/harness x")).said[0]
    assert (await run("/remember pref: tabs #style")).said == [
        "remembered preference tabs ('style',)"
    ]
    assert (await run("/forget #4")).said == ["forgot 4"]
    huge = "99999999999999999999"  # past any id SQLite holds: one line, no crash
    assert (await run(f"/forget {huge}")).said == [
        f"There is no memory #{huge}. /memory lists them with their ids."
    ]
    assert (await run("/memory tabs")).said == ["found tabs"]
    assert (await run("/workspace demo", session)).said == ["using demo"]
    assert (await run("/repos", session)).said == ["repos, active demo"]
    assert (await run("/status")).said == ["status ALERT"]
    commands: Sequence[CommandInfo] = REGISTRY.all()
    listed = (await run("/commands")).said[0]
    assert all(f"/{c.name}" in listed for c in commands)


async def test_identity_whoami_tools_answer_from_their_port() -> None:
    for word, alias in (("identity", "pack"), ("whoami", "whoami"), ("tools", "tools")):
        ctx = await run(f"/{word}")
        assert ctx.identity.calls == [word]
        assert ctx.said == [{"identity": "who", "whoami": "you", "tools": "tools"}[word]]
        assert (await run(f"/{alias}")).identity.calls == [word]


async def test_skills_lists_or_shows_one_through_its_port() -> None:
    ctx = await run("/skills")
    assert ctx.said == ["skills"] and ctx.skills.calls == ["list"]
    ctx = await run("/skills  python-testing ")
    assert ctx.said == ["skill python-testing"] and ctx.skills.calls == ["show python-testing"]


async def test_blocks_parses_the_words_and_asks_its_port() -> None:
    ctx = await run("/blocks")
    for line in (
        "/blocks persona",
        "/blocks project demo",
        "/blocks set persona Be brief.\nNo tables.",
        "/blocks append project demo Uses Flask.",
        "/blocks clear owner",
        "/blocks history project demo",
        "/blocks revert persona v3",
    ):
        ctx = await run(line, ctx=ctx)
    assert ctx.blocks.calls == [
        ("listing", None),
        ("show", "persona", None),
        ("show", "project", "demo"),
        ("edit", "persona", None, "set", "Be brief.\nNo tables."),
        ("edit", "project", "demo", "append", "Uses Flask."),
        ("edit", "owner", None, "clear", ""),
        ("history", "project", "demo"),
        ("revert", "persona", None, 3),
    ]
    # The chat's active repo stands in for a left-out one; a word that is no repo is text.
    session = FakeSession()
    session.data.repo = "demo"
    ctx = await run("/blocks set project fix tests first", session)
    assert ctx.blocks.calls == [("edit", "project", "demo", "set", "fix tests first")]
    # Refused before the port: no repo to name, no kind, no text, no version.
    for line in (
        "/blocks history project",
        "/blocks set mood x",
        "/blocks set persona",
        "/blocks revert owner latest",
        "/blocks clear persona now",
        "/blocks nonsense",
    ):
        ctx = await run(line)
        assert ctx.blocks.calls == [] and len(ctx.said) == 1, (line, ctx.said)


async def test_improve_needs_words_and_relays_a_refusal() -> None:
    ctx = await run("/improve")
    assert ctx.improve.asked == [] and "Usage: /improve" in ctx.said[0]
    ctx = await run("/improve   make  /status   clearer ")
    assert ctx.improve.asked == ["make /status clearer"] and ctx.said == []  # it reports
    ctx.improve = FakeImprove(refusal="❌ No GitHub token")
    ctx = await run("/improve x", ctx=ctx)
    assert ctx.said[-1] == "❌ No GitHub token"
    for word in ("prs", "pulls"):
        assert (await run(f"/{word}")).said == ["📬 prs"]


async def test_cost_reports_for_the_asking_chat_under_its_aliases() -> None:
    for word in ("cost", "costs", "spend"):
        ctx = await run(f"/{word}")
        assert ctx.cost.asked == [ctx.session.key] and ctx.said == ["💰 cost"]


async def test_model_lists_and_sets_per_chat() -> None:
    listing = (await run("/model")).said[-1]
    assert "▶ gpt-4o-mini on openai" in listing and "• qwen2.5 on local" in listing
    assert "claude-code: ▶ claude-opus-4-8 · sonnet" in listing
    session = FakeSession()
    said = (await run("/model qwen2.5", session)).said[-1]
    assert "qwen2.5 on local" in said and session.data.model == "local"
    await run("/model local", session)  # by the chain entry's name too
    assert session.data.model == "local" and session.persisted == 2
    assert "▶ qwen2.5 on local" in (await run("/model", session)).said[-1]
    said = (await run("/model claude-code sonnet", session)).said[-1]
    assert session.data.cli_models == {"claude-code": "sonnet"} and "sonnet" in said
    assert "claude-code: claude-opus-4-8 · ▶ sonnet" in (await run("/model", session)).said[-1]
    # A name the CLI was not offered: kept, with a note; a bad one: refused.
    said = (await run("/model claude-code my-model", session)).said[-1]
    assert "not one I know" in said and session.data.cli_models["claude-code"] == "my-model"
    said = (await run("/model claude-code --dangerously-skip-permissions", session)).said[-1]
    assert "letters, digits" in said and session.data.cli_models["claude-code"] == "my-model"
    await run("/model claude-code default", session)
    await run("/model default", session)
    assert session.data.cli_models == {} and session.data.model is None


async def test_model_refuses_what_it_does_not_know() -> None:
    session = FakeSession()
    said = (await run("/model gpt-9", session)).said[-1]
    assert "not in the orchestrator's chain" in said and session.data.model is None
    assert "No coding CLI called 'nosuch'" in (await run("/model nosuch x", session)).said[-1]
    assert "Too many words" in (await run("/model a b c", session)).said[-1]
    assert session.persisted == 0


async def test_link_offers_pairs_and_undoes() -> None:
    ctx = await run("/link")
    assert ctx.said[-1].startswith("🔗 Link code")
    await run("/link 123456", ctx=ctx)
    await run("/link off", ctx=ctx)
    await run("/link 1 2", ctx=ctx)
    assert ctx.linking.calls == ["offer", "redeem 123456", "unlink"]
    assert "/link off undoes it" in ctx.said[-1]
