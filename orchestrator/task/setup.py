"""Setup, then offline work: a repository's own setup script, run once per commit of it.

A repository may commit ``.fetch/setup.sh``. It is read from HEAD (never the working
tree, like committed skills and ``.fetch.yaml``), and before the first task on a commit
of it and of the lock files next to it, it runs in the kennel on a layer of its own, as
the kennel's uid, with one way out: the egress proxy (kennel/egress.py), which reaches
the package registries of ``kennel.setup.registries`` and nothing else. What it adds to
the tree (a ``.venv``, ``node_modules``) is kept as that repository's setup layer
(``Layer.keep_new``) and lies under every later run's layer, read-only, until the
script or a lock file changes; the coding CLI and the tests then work offline, as ever.

Without a script, the common cases are recognised (``requirements*.txt``,
``pyproject.toml``, a ``package.json`` with its lock file) and a script is proposed,
once per repository; an uncommitted one never runs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from core.errors import GitError, KennelError
from kennel.base import EgressSpec, ExecSpec, Kennel, KennelProcess
from kennel.egress import default_registries
from kennel.settings import SetupSettings
from orchestrator.boundary.gitops import Repo
from orchestrator.boundary.layer import Layers

log = logging.getLogger(__name__)

SCRIPT = ".fetch/setup.sh"
STATE_NAME = "setup"  # the kennel's state folder for the setup run
TAIL_LINES = 15
KEEP = 2  # setup layers kept per repository (the newest; a waiting run may use the last)
# Top-level files whose change means the dependencies changed.
LOCKS = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "poetry.lock",
    "uv.lock",
    "Pipfile",
    "Pipfile.lock",
    "package.json",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "pnpm-lock.yaml",
    "yarn.lock",
    ".python-version",
    ".nvmrc",
)


@dataclass(frozen=True, slots=True)
class SetupPlan:
    digest: str  # of the script's and the lock files' blobs at HEAD


@dataclass(frozen=True, slots=True)
class SetupOutcome:
    layer: Path | None  # the setup layer to put under the run (None: none)
    line: str = ""  # for the card: ran, failed, or nothing when it was already there


def _top_entries(repo: Repo, head: str) -> dict[str, str]:
    """HEAD's lock files and the script: name → blob id, from one ``ls-tree`` (the top
    level, where every lock file is, and the script's own path)."""
    raw = repo.run("ls-tree", "-z", "--full-tree", head, "--", ".", SCRIPT, strip=False)
    entries: dict[str, str] = {}
    for record in raw.split("\0"):
        meta, _, name = record.partition("\t")
        fields = meta.split()
        if len(fields) != 3 or fields[1] != "blob":
            continue
        wanted = name == SCRIPT or name in LOCKS
        if wanted or (name.startswith("requirements") and name.endswith(".txt")):
            entries[name] = fields[2]
    return entries


def plan(repo: Repo) -> SetupPlan | None:
    """The setup HEAD asks for, or None when it commits no script."""
    try:
        head = repo.head()
        entries = _top_entries(repo, head)
    except GitError:
        return None
    if SCRIPT not in entries:
        return None
    text = json.dumps(sorted(entries.items()))
    return SetupPlan(hashlib.sha256(text.encode()).hexdigest()[:16])


def proposal(repo: Repo) -> str | None:
    """A setup script for what HEAD shows (None: nothing recognised)."""
    try:
        entries = _top_entries(repo, repo.head())
    except GitError:
        return None
    lines: list[str] = []
    reqs = sorted(n for n in entries if n.startswith("requirements"))
    if reqs or "pyproject.toml" in entries or "setup.py" in entries:
        # The kennel's own packages stay visible: its pytest runs the tests before
        # approval when the project does not install one itself.
        lines.append("python3 -m venv --system-site-packages .venv")
        lines += [f".venv/bin/python -m pip install -r {n}" for n in reqs]
        if "pyproject.toml" in entries or "setup.py" in entries:
            lines.append(".venv/bin/python -m pip install -e .")
    if "package.json" in entries:
        if "pnpm-lock.yaml" in entries:
            lines.append("corepack pnpm install --frozen-lockfile")
        elif "yarn.lock" in entries:
            lines.append("corepack yarn install --frozen-lockfile")
        elif "package-lock.json" in entries or "npm-shrinkwrap.json" in entries:
            lines.append("npm ci")
    if not lines:
        return None
    return "#!/bin/sh\nset -e\n" + "\n".join(lines) + "\n"


def env_for(port: int, home: Path) -> dict[str, str]:
    """The setup run's environment: every package tool pointed at the proxy."""
    proxy = f"http://127.0.0.1:{port}"
    return {
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "CI": "1",
        "HTTP_PROXY": proxy,
        "HTTPS_PROXY": proxy,
        "http_proxy": proxy,
        "https_proxy": proxy,
        "npm_config_proxy": proxy,
        "npm_config_https_proxy": proxy,
        "npm_config_update_notifier": "false",
        "npm_config_fund": "false",
        "npm_config_audit": "false",
        # The host's pip configuration names folders the kennel cannot see.
        "PIP_CONFIG_FILE": "/dev/null",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INPUT": "1",
        "PYTHONUNBUFFERED": "1",
        "COREPACK_ENABLE_DOWNLOAD_PROMPT": "0",
    }


class Setup:
    """Runs and keeps setup layers, one at a time per repository."""

    def __init__(
        self, kennel: Kennel, layers: Layers, settings: SetupSettings, log_dir: Path
    ) -> None:
        self._kennel = kennel
        self._layers = layers
        self._settings = settings
        self._log_dir = log_dir
        self._locks: dict[str, asyncio.Lock] = {}

    @property
    def enabled(self) -> bool:
        return self._settings.enabled

    def registries(self) -> tuple[str, ...]:
        if self._settings.registries is not None:
            return self._settings.registries
        return default_registries()

    async def propose_once(self, repo: Repo) -> str | None:
        """The proposal's text the first time a repository without a script is seen."""
        # Every task without a script asks; after the one proposal the answer is a stat,
        # not a git call.
        if await asyncio.to_thread(self._layers.proposed, repo.path):
            return None
        text = await asyncio.to_thread(proposal, repo)
        if text is None or not await asyncio.to_thread(self._layers.first_proposal, repo.path):
            return None
        return text

    async def ensure(
        self,
        repo: Repo,
        setup: SetupPlan,
        *,
        on_start: Callable[[KennelProcess, asyncio.Timeout], Awaitable[None]] | None = None,
        grace: float = 2.0,
    ) -> SetupOutcome:
        """The setup layer for ``setup``: kept from before, or made now."""
        lock = self._locks.setdefault(str(repo.path), asyncio.Lock())
        async with lock:
            ready = await asyncio.to_thread(self._layers.setup_ready, repo.path, setup.digest)
            if ready is not None:
                return SetupOutcome(ready)
            return await self._run(repo, setup, on_start, grace)

    async def _run(
        self,
        repo: Repo,
        setup: SetupPlan,
        on_start: Callable[[KennelProcess, asyncio.Timeout], Awaitable[None]] | None,
        grace: float,
    ) -> SetupOutcome:
        kennel = self._kennel
        started = time.monotonic()
        layer = await asyncio.to_thread(
            self._layers.open, repo, STATE_NAME, host_mounts=kennel.host_mounts
        )
        tail: deque[str] = deque(maxlen=TAIL_LINES)
        try:
            await asyncio.to_thread(layer.fresh_state, STATE_NAME)
            layout = await asyncio.to_thread(kennel.layout, layer.tree, STATE_NAME, repo.path)
            env = {"PATH": layout.path_env, **env_for(layout.relay_port, layout.state_seen)}
            await asyncio.to_thread(layer.prepared)
            self._log_dir.mkdir(parents=True, exist_ok=True)
            spec = ExecSpec(
                ("bash", "-c", f"exec bash -e ./{SCRIPT} 2>&1"),
                env,
                layer.tree,
                layout,
                egress=EgressSpec(self.registries(), self._log_dir / "setup-egress.jsonl"),
            )
            try:
                proc = await kennel.exec(spec)
            except KennelError as err:
                return SetupOutcome(None, f"🧰 setup could not start: {err}")
            try:
                async with asyncio.timeout(self._settings.timeout_seconds) as deadline:
                    if on_start is not None:
                        await on_start(proc, deadline)
                    async for line in proc.lines():
                        tail.append(line[:300])
                    code = await proc.wait()
            except KennelError as err:
                # A kennel on another engine hands its tree back as data, which may be
                # refused (over a bound); the kennel may also have been lost meanwhile.
                return SetupOutcome(
                    None,
                    f"🧰 setup's result could not be taken: {err}; the task goes on "
                    "without it" + _tail(tail),
                )
            except TimeoutError:
                await proc.terminate(grace)
                return SetupOutcome(
                    None,
                    f"🧰 setup still running after {self._settings.timeout_seconds:.0f} s, "
                    "stopped; the task goes on without it" + _tail(tail),
                )
            finally:
                await proc.terminate(grace)  # whatever the script left running
            seconds = time.monotonic() - started
            if code != 0:
                return SetupOutcome(
                    None,
                    f"🧰 setup failed (exit code {code}, {seconds:.0f} s); the task goes on "
                    "without it" + _tail(tail),
                )
            folder = await asyncio.to_thread(self._layers.keep_setup, layer, setup.digest, KEEP)
            return SetupOutcome(folder, f"🧰 setup ran ({seconds:.0f} s)")
        finally:
            with suppress(OSError, GitError):
                await asyncio.to_thread(layer.drop)


def _tail(lines: deque[str]) -> str:
    if not lines:
        return "."
    return ":\n```\n" + "\n".join(list(lines)[-8:]) + "\n```"


__all__ = ["SCRIPT", "Setup", "SetupOutcome", "SetupPlan", "plan", "proposal"]
