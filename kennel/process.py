"""A CLI process started in its own process group, with bounded output handling."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import suppress

from core.errors import KennelError
from core.tasks import cancel_and_wait

MAX_LINE = 4 * 1024 * 1024  # one JSON event may carry a whole file; beyond this we cut


def descendants(root: int) -> list[int]:
    """PIDs under ``root`` (from /proc), so children that left the group die too."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        # The command name may contain spaces and parentheses: split after the last ')'.
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    frontier = [root]
    while frontier:
        pid = frontier.pop()
        for child in children.get(pid, []):
            found.append(child)
            frontier.append(child)
    return found


def _group_alive(pgid: int) -> bool:
    """A member of the group still runs. Zombies do not count: an orphan handed to a slow
    init can sit unreaped for a second, and waiting for it would delay every /stop."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in {"Z", "X"}:
            return True
    return False


class GroupProcess:
    """Wraps ``asyncio.subprocess.Process`` started with ``start_new_session=True``.
    Its one task (the stderr drain) is its own: ``wait`` and ``terminate`` end it."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc
        self._stderr: deque[str] = deque(maxlen=60)
        self._stderr_task = asyncio.get_running_loop().create_task(
            self._drain_stderr(), name=f"kennel:stderr:{proc.pid}"
        )

    @property
    def pid(self) -> int:
        return self._proc.pid

    async def _drain_stderr(self) -> None:
        stream = self._proc.stderr
        if stream is None:
            return
        while True:
            try:
                line = await stream.readline()
            except (ValueError, asyncio.LimitOverrunError):
                continue
            if not line:
                return
            self._stderr.append(line.decode("utf-8", "replace").rstrip()[:500])

    async def lines(self) -> AsyncIterator[str]:
        stream = self._proc.stdout
        if stream is None:
            return
        while True:
            try:
                raw = await stream.readuntil(b"\n")
            except asyncio.IncompleteReadError as partial:
                if partial.partial:
                    yield partial.partial.decode("utf-8", "replace")
                return
            except asyncio.LimitOverrunError as over:
                # Flooding output: drop the overlong line, keep reading.
                await stream.readexactly(over.consumed)
                yield '{"type":"fetch_overlong_line"}'
                continue
            yield raw.decode("utf-8", "replace").rstrip("\n")

    async def wait(self) -> int:
        code = await self._proc.wait()
        # A child that outlives the CLI can hold stderr open: the tail gets a second to
        # arrive, then the drain ends (what it read is kept). Not wait_for: its timeout
        # would be raised from here as if the run had hit its time limit.
        await asyncio.wait({self._stderr_task}, timeout=1.0)
        await cancel_and_wait(self._stderr_task)
        self._release_pipes()
        return code

    def _release_pipes(self) -> None:
        """Once the CLI has exited and the drain is over, close our ends of its pipes: a
        child that still holds stderr would otherwise keep the pipe, and asyncio's
        transport with it, open until that child exits — a file descriptor leaked per
        task (asyncio exposes no public close for a finished process's transport)."""
        transport = getattr(self._proc, "_transport", None)
        if transport is not None and self._proc.returncode is not None:
            transport.close()

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)

    async def write_input(self, data: bytes) -> bool:
        stdin = self._proc.stdin
        if stdin is None or stdin.is_closing() or self._proc.returncode is not None:
            return False
        try:
            stdin.write(data)
            # Bounded: a CLI that stopped reading (paused, wedged) must not hold the
            # message's handler; what was written stays in the pipe.
            await asyncio.wait_for(stdin.drain(), 5.0)
        except (ConnectionError, TimeoutError, RuntimeError):
            return False
        return True

    def close_input(self) -> None:
        if self._proc.stdin is not None and not self._proc.stdin.is_closing():
            self._proc.stdin.close()

    def alive_pids(self) -> list[int]:
        pids = [p for p in descendants(self.pid) if _pid_alive(p)]
        if self._proc.returncode is None and _pid_alive(self.pid):
            pids.insert(0, self.pid)
        return pids

    async def pause(self) -> int:
        """SIGSTOP the group and every descendant (a sandbox's processes run in a session
        of their own, outside the group). Twice: a child forked while the first pass ran
        is caught by the second; a stopped process cannot fork again."""
        stopped: set[int] = set()
        for _ in range(2):
            strays = [p for p in descendants(self.pid) if p not in stopped]
            self._signal(self.pid, strays, signal.SIGSTOP)
            stopped.update(strays)
        return len([p for p in {self.pid, *stopped} if _pid_alive(p)])

    async def resume(self) -> None:
        self._signal(self.pid, descendants(self.pid), signal.SIGCONT)

    async def terminate(self, grace: float) -> float:
        started = time.monotonic()
        pgid = self.pid  # start_new_session: the group id is the leader's pid
        strays = descendants(self.pid)
        self._signal(pgid, strays, signal.SIGINT)
        deadline = started + grace
        # No event tells us a process group emptied: poll, briefly.
        while time.monotonic() < deadline and _group_alive(pgid):  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        if _group_alive(pgid) or any(_pid_alive(p) for p in strays):
            strays = sorted(set(strays + descendants(self.pid)))
            self._signal(pgid, strays, signal.SIGKILL)
        with suppress(ProcessLookupError, TimeoutError):
            await asyncio.wait_for(self._proc.wait(), 2.0)
        # SIGKILL is delivered asynchronously: wait until nothing is left running, so
        # "stopped" is only ever said about processes that are really gone.
        while any(_pid_alive(p) for p in strays) and time.monotonic() - started < 3.0:  # noqa: ASYNC110
            await asyncio.sleep(0.02)
        await cancel_and_wait(self._stderr_task)
        self._release_pipes()
        return time.monotonic() - started

    @staticmethod
    def _signal(pgid: int, extra: list[int], sig: signal.Signals) -> None:
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
        for pid in extra:
            with suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)


def _pid_alive(pid: int) -> bool:
    """Running (a zombie has ended: only its exit status waits to be collected)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            state = fh.read().rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in {"Z", "X"}


async def start_group(
    argv: list[str], *, cwd: str, env: dict[str, str], name: str, stdin: bool = False
) -> GroupProcess:
    """Start ``argv`` in a new process group with exactly ``env`` (never Fetch's own), no
    stdin (``stdin``: a pipe Fetch writes, for steering) and piped output; ``name`` is the
    CLI the owner asked for, for the error."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            limit=MAX_LINE,
        )
    except OSError as err:
        raise KennelError(f"could not start {name}: {err.strerror}") from err
    return GroupProcess(proc)
