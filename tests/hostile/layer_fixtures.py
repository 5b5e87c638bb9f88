"""Fixtures for the layer tests (test_layer_*.py): one Fetch per backend and module, a
scratch repository, victim folder and marks folder per test, and the checks every test
makes after each step.

What is checked, and how far (``Case.check``):

* the victim folder under the test's ``tmp_path``: every entry's type, mode, owner,
  bytes or link target, byte- and mode-identical (links never followed);
* FETCH_HOME: every entry but ``runs/`` and ``kennel/`` (the runs' layers, bases, kept CLI
  state and the repo's shared cache: the places a run may write), the SQLite files
  (``*.db`` and their ``-wal``/``-shm``/``-journal``), the chat journals and their
  folders (``sessions/<chat>/session.jsonl``), the relay's log (``relay.jsonl``) and ``*.log``; the
  rest (decoys the test plants included) is hashed before and after;
* the owner's repository: its working tree (ignored files included) identical after
  "no"; in ``.git`` the files that steer git (config, hooks, info, HEAD, description)
  identical always, and refs, logs and the index identical after "no" (objects may only
  be added: the change's blobs are written for the card);
* the canary string nowhere in the working tree nor in ``.git`` outside ``objects``
  (blobs of a shown change are compressed there by design), and nowhere in HEAD's tree;
* the real key nowhere in the repository: working tree, every ``.git`` file, and every
  object decompressed (``git cat-file --batch-all-objects``);
* the marks folder, which a planted hook or script would touch if the host ran it, empty.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import stat
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import pytest_asyncio

from orchestrator.boundary.layer import Layers
from orchestrator.config import load_settings
from tests.conftest import Driver, git, make_repo, start_driver
from tests.fakes.hostile_cli import ADAPTERS, HostileCli
from tests.fakes.require import missing

REAL_KEY = "sk-ant-layer-real-key-4c2e9d7a1b"
CANARY = "layer-canary-5f0b7e31"
README = "# demo\n\nTeh quick brown fox.\n"
GITIGNORE = "__pycache__/\nnode_modules/\n*.log\n"
PROMPT = "fix the typo in README.md of {name}"
BACKENDS = ["bwrap", "docker"]
# FETCH_HOME entries Fetch itself writes during a task (see the module's text).
WRITTEN = re.compile(
    r"^(runs|kennel)(/|$)|\.db(-wal|-shm|-journal)?$"
    r"|^sessions(/[^/]+)?$|^sessions/[^/]+/session\.jsonl$|^relay\.jsonl$|\.log$"
)
# .git entries that steer git: never changed by a task, a "no" or a "yes".
STEERING = re.compile(r"^(config|config\.worktree|hooks(/.*)?|info(/.*)?|HEAD|description)$")
Entry = tuple[str, ...]


def entries(root: Path, skip: re.Pattern[str] | None = None) -> dict[str, Entry]:
    """Every entry below ``root``: type, mode, owner and bytes (sha256) or link target;
    links never followed, an explicit stack (no recursion), ``skip`` matched on the
    relative path (a skipped folder is not entered)."""
    out: dict[str, Entry] = {}
    stack = [""]
    while stack:
        rel = stack.pop()
        for name in sorted(os.listdir(root / rel)):
            path = f"{rel}{name}"
            if skip is not None and skip.search(path):
                continue
            full = root / path
            st = os.lstat(full)
            owner = (oct(st.st_mode), str(st.st_uid), str(st.st_gid))
            if stat.S_ISLNK(st.st_mode):
                out[path] = ("link", *owner, os.readlink(full))
            elif stat.S_ISDIR(st.st_mode):
                out[path] = ("dir", *owner)
                stack.append(path + "/")
            elif stat.S_ISREG(st.st_mode):
                out[path] = ("file", *owner, hashlib.sha256(full.read_bytes()).hexdigest())
            else:
                out[path] = ("other", *owner)
    return out


def changed(before: dict[str, Entry], after: dict[str, Entry]) -> list[str]:
    keys = sorted(set(before) | set(after))
    return [
        f"{k}: {before.get(k)} -> {after.get(k)}" for k in keys if before.get(k) != after.get(k)
    ]


def holding(root: Path, needle: bytes, skip: re.Pattern[str] | None = None) -> list[str]:
    """Paths below ``root`` whose bytes (or link target) hold ``needle``."""
    found = []
    stack = [""]
    while stack:
        rel = stack.pop()
        for name in os.listdir(root / rel):
            path = f"{rel}{name}"
            if skip is not None and skip.search(path):
                continue
            full = root / path
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                if needle in os.fsencode(os.readlink(full)):
                    found.append(path)
            elif stat.S_ISDIR(st.st_mode):
                stack.append(path + "/")
            elif stat.S_ISREG(st.st_mode) and needle in full.read_bytes():
                found.append(path)
    return sorted(found)


def objects_holding(repo: Path, needle: bytes) -> bool:
    """Whether any object of ``repo`` (loose or packed, decompressed) holds ``needle``."""
    out = subprocess.run(
        ["git", "-c", "safe.directory=*", "cat-file", "--batch-all-objects", "--batch"],
        cwd=repo,
        capture_output=True,
        check=True,
    ).stdout
    return needle in out


def setuid_bits(root: Path) -> list[str]:
    return [
        f"{path}: {entry[1]}"
        for path, entry in entries(root, re.compile(r"^\.git$")).items()
        if int(entry[1], 8) & (stat.S_ISUID | stat.S_ISGID)
    ]


@dataclass
class World:
    """One Fetch on one backend, shared by a module's tests."""

    backend: str
    driver: Driver
    home: Path
    workspace: Path
    harnesses: dict[str, HostileCli]

    async def use(self, adapter: str, vector: str, case: Case) -> HostileCli:
        """The chat's harness becomes the hostile CLI in ``adapter``'s clothes."""
        harness = self.harnesses[adapter]
        harness.vector = vector
        harness.facts = case.facts(harness)
        session = await self.driver.services.sessions.get(self.driver.terminal_key())
        session.data.harness = harness.name
        return harness

    async def settle(self) -> None:
        """Back to an idle chat: a card or question a failed test left is answered, and
        everything said is read."""
        session = await self.driver.services.sessions.get(self.driver.terminal_key())
        for _ in range(20):
            if self.driver.services.runner.running(self.driver.terminal_key()) is None:
                break
            await asyncio.sleep(0.5)
        if session.state == "GUARDING":
            await self.driver.push("no")
        elif session.state in {"WAITING", "WORKING"}:
            await self.driver.push("/stop")
        await self.driver.quiet(0.5)

    async def until(self, *needles: str, timeout: float = 120) -> str:
        """The next reply holding any of ``needles`` (fails with everything seen)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            left = deadline - loop.time()
            try:
                text = await self.driver.pop(max(left, 0.01))
            except TimeoutError:
                raise AssertionError(
                    f"no reply holding any of {needles!r} within {timeout} s; "
                    f"seen: {self.driver.seen[-6:]!r}"
                ) from None
            if any(n in text for n in needles):
                return text

    async def task(self, case: Case, timeout: float = 120) -> str:
        """Send the task; the card, the question or the failure (whichever comes)."""
        await self.driver.push(PROMPT.format(name=case.name))
        return await self.until("Apply?", "asks (task", "failed:", timeout=timeout)

    async def answer(self, text: str, needle: str, timeout: float = 60) -> str:
        await self.driver.push(text)
        return await self.until(needle, "failed:", timeout=timeout)

    async def state(self) -> str:
        session = await self.driver.services.sessions.get(self.driver.terminal_key())
        return str(session.state)


@dataclass
class Case:
    """One test's scratch repository, victim and marks folders, and what they were."""

    world: World
    name: str
    repo: Path
    victim: Path
    marks: Path
    victim_before: dict[str, Entry] = field(default_factory=dict)
    home_before: dict[str, Entry] = field(default_factory=dict)
    tree_before: dict[str, Entry] = field(default_factory=dict)
    git_before: dict[str, Entry] = field(default_factory=dict)
    objects_before: set[str] = field(default_factory=set)

    def facts(self, harness: HostileCli) -> dict[str, str]:
        home = self.world.home
        # The host side of the run's state folder, as deep as the real one (the run's
        # name is not known yet): a relative link is made to land on the victim there.
        state = home / "runs" / Layers.key(self.repo) / "1-0123456789abcdef" / "state"
        return {
            "victim": str(self.victim),
            "fetch_home": str(home),
            "rel": os.path.relpath(self.victim, state / harness.name),
            "canary": CANARY,
            "marks": str(self.marks),
        }

    def snapshot(self) -> None:
        """What must hold from now on (taken before the first task)."""
        self.victim_before = entries(self.victim)
        self.home_before = entries(self.world.home, WRITTEN)
        self.tree_before = entries(self.repo, re.compile(r"^\.git$"))
        self.git_before = self._git()
        self.objects_before = self._objects()

    def _git(self) -> dict[str, Entry]:
        gitdir = self.repo / ".git"
        found = entries(gitdir, re.compile(r"^objects$"))
        found.pop("index", None)  # git status may rewrite it with the same entries
        found["index-entries"] = ("ls-files", git(self.repo, "ls-files", "-s"))
        return found

    def _objects(self) -> set[str]:
        out = subprocess.run(
            [
                "git",
                "-c",
                "safe.directory=*",
                "cat-file",
                "--batch-all-objects",
                "--batch-check=%(objectname)",
            ],
            cwd=self.repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return set(out.split())

    def check(self, *, tree: bool = True, committed: bool = False) -> None:
        """Everything that must hold after any step (see the module's text). ``tree``:
        the owner's working tree is as it was (before a yes, and after a no);
        ``committed``: a yes was said (refs, logs and the index moved)."""
        victim = changed(self.victim_before, entries(self.victim))
        assert victim == [], f"the victim folder changed: {victim}"
        home = changed(self.home_before, entries(self.world.home, WRITTEN))
        assert home == [], f"FETCH_HOME changed outside runs/ and kennel/: {home}"
        marks = sorted(os.listdir(self.marks))
        assert marks == [], f"a planted program ran on the host: {marks}"
        git_now = self._git()
        steering = changed(_steering(self.git_before), _steering(git_now))
        assert steering == [], f"what steers the owner's git changed: {steering}"
        if not committed:
            moved = changed(self.git_before, git_now)
            assert moved == [], f"the owner's .git changed: {moved}"
        assert self.objects_before <= self._objects(), "objects of the owner's repo went away"
        tree_now = entries(self.repo, re.compile(r"^\.git$"))
        if tree:
            diff = changed(self.tree_before, tree_now)
            assert diff == [], f"the owner's working tree changed: {diff}"
        odd = [f"{k}: {v[0]}" for k, v in tree_now.items() if v[0] not in {"file", "dir"}]
        assert odd == [], f"links or special files in the owner's tree: {odd}"
        canary = holding(self.repo, CANARY.encode(), re.compile(r"^\.git/objects$"))
        assert canary == [], f"the canary is in the repository: {canary}"
        committed_files = committed_holding(self.repo, CANARY)
        assert committed_files == "", f"the canary is committed: {committed_files}"
        keys = holding(self.repo, REAL_KEY.encode())
        assert keys == [], f"the real key is in the repository: {keys}"
        assert not objects_holding(self.repo, REAL_KEY.encode()), "the real key is in .git"


def _steering(found: dict[str, Entry]) -> dict[str, Entry]:
    return {k: v for k, v in found.items() if STEERING.search(k)}


def committed_holding(repo: Path, needle: str) -> str:
    """The files of HEAD's tree holding ``needle`` (git grep's list)."""
    proc = subprocess.run(
        ["git", "-c", "safe.directory=*", "grep", "-l", "-F", "-e", needle, "HEAD", "--", "."],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip()


def new_case(world: World, tmp_path: Path, name: str) -> Case:
    """A repository of the owner's (tracked files, an ignore file, ignored files of the
    owner's own) and a victim folder, both scratch; snapshotted."""
    repo = make_repo(
        world.workspace,
        name,
        {
            "README.md": README,
            "app.py": "print('hi')\n",
            "src/util.py": "X = 1\n",
            ".gitignore": GITIGNORE,
        },
    )
    (repo / "run.sh").write_text("#!/bin/sh\necho run\n")
    (repo / "run.sh").chmod(0o755)
    git(repo, "add", "run.sh")
    git(repo, "commit", "-qm", "a script")
    (repo / "debug.log").write_text("the owner's own log, ignored\n")
    (repo / "node_modules" / "owner").mkdir(parents=True)
    (repo / "node_modules" / "owner" / "index.js").write_text("module.exports = 1\n")
    victim = tmp_path / "victim"
    (victim / "dir" / "sub").mkdir(parents=True)
    (victim / "notes.txt").write_text("the owner's precious notes\n")
    (victim / "secret.txt").write_text("only mine\n")
    (victim / "secret.txt").chmod(0o600)
    (victim / "dir" / "keep.md").write_text("keep me\n")
    (victim / "dir" / "sub" / "deeper.txt").write_text("and me\n")
    (victim / "dir" / "sub").chmod(0o700)
    marks = tmp_path / "marks"
    marks.mkdir()
    case = Case(world, name, repo, victim, marks)
    case.snapshot()
    return case


def home_decoys(home: Path) -> None:
    """Files of FETCH_HOME a planted link may point at (they must stay as they are)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "owner-notes.txt").write_text("FETCH_HOME notes\n")
    (home / "owner-notes.txt").chmod(0o600)
    (home / "keep").mkdir(exist_ok=True)
    (home / "keep" / "precious.txt").write_text("precious\n")


def require_backend(backend: str, request: pytest.FixtureRequest) -> None:
    if backend == "bwrap":
        from kennel.bwrap import probe

        why = probe()
        if why is not None:
            missing(f"the bwrap sandbox cannot run: {why}")
    else:
        request.getfixturevalue("kennel_image")  # the engine and the image, or missing()


@asynccontextmanager
async def open_world(
    backend: str, request: pytest.FixtureRequest, root: Path, **env: str
) -> AsyncIterator[World]:
    """A Fetch on ``backend`` under ``root`` (FETCH_HOME with decoys, a workspace), the
    hostile harnesses registered."""
    require_backend(backend, request)
    home, workspace = root / "home", root / "ws"
    home_decoys(home)
    make_repo(workspace, "demo", {"README.md": README})
    settings = load_settings(
        None,
        {
            "FETCH_HOME": str(home),
            "FETCH_WORKSPACE": str(workspace),
            "FETCH_HARNESS": "demo",
            "FETCH_KENNEL": backend,
            "ANTHROPIC_API_KEY": REAL_KEY,
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",  # nothing listens: no call leaves
            **env,
        },
    )
    app, driver = await start_driver(settings)
    harnesses = {name: cls() for name, cls in ADAPTERS.items()}
    for harness in harnesses.values():
        driver.services.harnesses.add(harness)
    try:
        yield World(backend, driver, home, workspace, harnesses)
    finally:
        await app.__aexit__(None, None, None)


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=BACKENDS)
async def world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[World]:
    """One Fetch per backend for a whole module."""
    backend: str = request.param
    async with open_world(backend, request, tmp_path_factory.mktemp(f"layer-{backend}")) as made:
        yield made


__all__ = [
    "BACKENDS",
    "CANARY",
    "PROMPT",
    "REAL_KEY",
    "Case",
    "World",
    "entries",
    "home_decoys",
    "new_case",
    "open_world",
    "require_backend",
    "setuid_bits",
    "world",
]
