"""Everything an instinct handler may use: the kernel's types and the ports below.

Instincts import only ``core`` and ``instincts``. The application's ``Context``
(orchestrator/context.py) satisfies ``InstinctContext`` structurally and hands each
family ONE facade; whatever needs application internals (job listings, memory items,
the status report, git) is rendered behind that facade, so it comes back as text or as
the plain data defined here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from core.events import Inbound, SendResult, SessionKey
from core.session_data import SessionData
from core.state import State


class SessionPort(Protocol):
    """The conversation the message belongs to: read its state and data, adjust the
    data, and move it only through the named transitions."""

    @property
    def key(self) -> SessionKey: ...
    @property
    def state(self) -> State: ...
    @property
    def data(self) -> SessionData: ...
    @property
    def lock(self) -> asyncio.Lock: ...

    def stop_turn(self, by: str | None) -> bool:
        """Mark the message the chat is working out now so it starts no task; ``by``:
        the asker's subject id, None for the owner's (anyone's message). False when none
        is being worked out, or it is someone else's."""
        ...

    async def persist(self) -> None: ...
    async def answered(self) -> None: ...
    async def pause(self) -> None: ...
    async def resume(self) -> None: ...
    async def reset(self) -> None: ...


class Scheduling(Protocol):
    """/remind /schedule /cron. ``viewer`` None: the owner, who sees every job; otherwise
    only the jobs of that chat. Every method answers in the words the phone shows."""

    @property
    def enabled(self) -> bool: ...
    def usage(self, kind: str) -> str: ...
    async def manage(self, verb: str, rest: str, viewer: SessionKey | None) -> str | None:
        """list / cancel / pause / resume / missed; None when ``verb`` is none of them."""
        ...

    async def create(self, kind: str, line: str, home: SessionKey) -> str: ...
    async def create_cron(self, line: str, home: SessionKey) -> str: ...


class Memory(Protocol):
    """/remember /memory /forget, answered in words: the sender's own memories only."""

    async def remember(self, kind: str, text: str, tags: tuple[str, ...]) -> str: ...
    async def overview(self) -> str: ...
    async def search(self, query: str) -> str: ...
    async def forget(self, item_id: int) -> str: ...


@dataclass(frozen=True, slots=True)
class StoppedTask:
    task_id: int
    harness: str
    kill_seconds: float
    leftover_processes: int
    finished: bool = False  # it had ended on its own: its result is being said


@dataclass(frozen=True, slots=True)
class PausedTask:
    task_id: int
    harness: str
    processes: int  # how many processes /pause stopped (0 for /resume)


class Tasks(Protocol):
    """/stop /pause /resume: end, hold or continue this chat's running task, if there
    is one; /autonomy and /project: how this chat's tasks are committed, and where."""

    def requester(self, key: SessionKey) -> str | None:
        """Whose task runs in this chat (its subject id), or None."""

    async def stop(self, key: SessionKey) -> StoppedTask | None: ...
    async def pause(self, key: SessionKey) -> PausedTask | None: ...
    async def resume(self, key: SessionKey) -> PausedTask | None: ...
    async def drop_question(self, session: SessionPort) -> int | None:
        """/stop while a CLI's question waits: end that task, discard its partial work;
        its id, or None when the waiting question is not a task's."""
        ...

    async def autonomy(self, session: SessionPort, level: str) -> str:
        """Show (``level`` empty) or set this chat's autonomy level; phone text."""
        ...

    async def project(self, session: SessionPort) -> str:
        """Type, branch, status and active task of the chat's repository; phone text."""
        ...


class Commits(Protocol):
    """/undo: revert the last commit made in this chat, if it was made for the sender
    (or the sender may undo others'); the answer is the phone text."""

    async def undo_last(self, key: SessionKey) -> str: ...


class Workspace(Protocol):
    """/workspace: the repos, or this chat's choice of one."""

    def listing(self, active: str | None) -> str: ...
    async def use(self, session: SessionPort, name: str) -> str: ...


class Files(Protocol):
    """/send: a repository file back to this chat (an image as an image); the answer is
    the phone text, a refusal raises with one line."""

    async def send(self, args: str) -> str: ...


@dataclass(frozen=True, slots=True)
class HarnessInfo:
    name: str
    usable: bool
    detail: str


class Harnesses(Protocol):
    """/harness: the coding CLIs and whether each can run here."""

    def default(self) -> str: ...
    def all(self) -> list[HarnessInfo]: ...
    def get(self, name: str) -> HarnessInfo:
        """Raises ``core.errors.UnknownHarness``."""
        ...


@dataclass(frozen=True, slots=True)
class ModelOption:
    """One model /model offers: the orchestrator's (``family`` "orchestrator", on the
    chain entry ``where``) or a coding CLI's (``family`` is the harness's name)."""

    family: str
    name: str
    where: str = ""


class Models(Protocol):
    """/model: the orchestrator's chain and each CLI's models; the chat's choice lives in
    its session data (``model``: a chain entry's name, ``cli_models``: per harness)."""

    def options(self) -> list[ModelOption]:
        """The orchestrator's first (in the chain's order), then each CLI's (its own
        default first)."""
        ...

    def families(self) -> list[str]:
        """The coding CLIs that take a model (harness names)."""
        ...


class Linking(Protocol):
    """/link: one conversation across the owner's devices (the web chat or the terminal
    with their WhatsApp or Telegram chat); each answer is the phone text."""

    async def offer(self) -> str: ...
    async def redeem(self, code: str) -> str: ...
    async def unlink(self) -> str: ...


class Status(Protocol):
    """/status: the report is built by the application (it knows every part)."""

    async def report(self, session: SessionPort) -> str: ...


class Blocks(Protocol):
    """/blocks: the memory blocks always in the model's prompt (persona, owner, one per
    project), each change a version with its author and time. ``repo`` names a project
    block (None: persona and owner). Every method answers in the words the phone shows."""

    async def known_repo(self, word: str) -> bool:
        """Whether ``word`` names a repository (to tell it from the start of a text)."""
        ...

    async def listing(self, active: str | None) -> str: ...
    async def show(self, kind: str, repo: str | None) -> str: ...
    async def edit(self, kind: str, repo: str | None, mode: str, text: str) -> str:
        """``mode``: set | append | clear."""
        ...

    async def history(self, kind: str, repo: str | None) -> str: ...
    async def revert(self, kind: str, repo: str | None, version: int) -> str: ...


class Improve(Protocol):
    """/improve /prs: Fetch proposes changes to itself as pull requests; a person merges."""

    async def improve(self, session: SessionPort, request: str) -> str | None:
        """Start a run in the background (None: started, progress follows), or the
        refusal to show."""
        ...

    async def pull_requests(self) -> str:
        """/prs: Fetch's pull requests with their state refreshed from GitHub."""
        ...


class Skills(Protocol):
    """/skills: the skills this chat can use and one skill's instructions (phone text)."""

    async def listing(self, session: SessionPort) -> str: ...
    async def show(self, session: SessionPort, name: str) -> str: ...


class CommandInfo(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def aliases(self) -> tuple[str, ...]: ...
    @property
    def help(self) -> str: ...


class Commands(Protocol):
    """/help /commands: the instincts the sender may use, in the order they were
    included (what they may not use is never listed)."""

    def all(self) -> Sequence[CommandInfo]: ...


class Grants(Protocol):
    """/grants: the owner's view of who may do what beyond their profile."""

    @property
    def for_owner(self) -> bool: ...
    @property
    def subject_id(self) -> str:
        """Who sent this message (``owner``, a member's name, an allowlist entry)."""

    def listing(self) -> str: ...
    async def revoke(self, grant_id: int) -> str: ...
    async def answer(self, nonce: str, yes: bool, scope: str) -> str:
        """The owner's yes/no to an ask; ``scope`` once | session | always."""
        ...

    async def grant(self, who: str, action: str, scope: str) -> str: ...


class Identity(Protocol):
    """/identity /whoami /tools, bound to the sender; each answer is the phone text."""

    def identity(self) -> str:
        """Who Fetch is (COLLAR), the owner (ALPHA), the pack, in sections."""
        ...

    def whoami(self) -> str:
        """The sender as the permission model sees them and what they may do."""
        ...

    def tools(self) -> str:
        """The orchestrator tools the sender may use, one line each."""
        ...


class Cost(Protocol):
    """/cost: spend today (by model and source), this week, the chat's running task,
    the budgets as bars and the unpriced models, in the words the phone shows."""

    async def report(self, key: SessionKey) -> str: ...


class InstinctContext(Protocol):
    """What one handler call receives."""

    @property
    def inbound(self) -> Inbound: ...
    @property
    def session(self) -> SessionPort: ...

    async def reply(self, text: str) -> SendResult: ...

    @property
    def scheduling(self) -> Scheduling: ...
    @property
    def memory(self) -> Memory: ...
    @property
    def tasks(self) -> Tasks: ...
    @property
    def commits(self) -> Commits: ...
    @property
    def workspace(self) -> Workspace: ...
    @property
    def files(self) -> Files: ...
    @property
    def harnesses(self) -> Harnesses: ...
    @property
    def models(self) -> Models: ...
    @property
    def linking(self) -> Linking: ...
    @property
    def status(self) -> Status: ...
    @property
    def blocks(self) -> Blocks: ...
    @property
    def improve(self) -> Improve: ...
    @property
    def skills(self) -> Skills: ...
    @property
    def commands(self) -> Commands: ...
    @property
    def grants(self) -> Grants: ...
    @property
    def identity(self) -> Identity: ...
    @property
    def cost(self) -> Cost: ...


Handler = Callable[[InstinctContext, str], Awaitable[None]]
