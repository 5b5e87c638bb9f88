"""A hostile CLI in the real Docker kennel, task after task (issue 10.5): whatever task 1
leaves running or lying around is gone before task 2 starts, whatever it calls itself,
and the real key is nowhere a task can look. Every task runs through the product's exec
path (``DockerKennel.exec``), the way the runner starts a CLI: each on a run of its own
(its layer and fresh state, tests/kennel/runs.py) in the repository's warm container."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kennel.base import RelaySpec
from kennel.docker_backend import DockerKennel
from kennel.settings import DockerKennelSettings
from tests.docker.conftest import docker_client as docker_client  # the fixtures
from tests.docker.conftest import kennel_image as kennel_image
from tests.fakes.relay_servers import KEY, servers
from tests.fakes.relay_servers import SECRET as RUN_SECRET
from tests.kennel.runs import Run, Runs
from tests.kennel.runs import runs as runs

pytestmark = pytest.mark.real
SECRET = "task-two-secret-prompt-5d81c0"
# Lists every live process but this exec's own shell (builtins only: it forks nothing).
LIST = (
    "for d in /proc/[0-9]*; do { read -r l < $d/stat; } 2>/dev/null || continue; "
    'r=${l##*) }; set -- $r; [ "$1" = Z ] && continue; p=${d#/proc/}; '
    "[ $p = $$ ] || echo $p; done"
)


class Kennel:
    def __init__(self, kennel: DockerKennel, runs: Runs) -> None:
        self.kennel = kennel
        self.runs = runs
        self.last: Run | None = None  # the run of the last task

    async def task(
        self,
        script: str,
        env: dict[str, str] | None = None,
        relay: RelaySpec | None = None,
        argv_extra: tuple[str, ...] = (),
        state: dict[str, str] | None = None,
    ) -> tuple[int, list[str]]:
        """``script`` as a task's CLI, on a new run of the repository (``$PWD`` is its
        tree, ``$STATE`` its state folder as the task sees them)."""
        run = self.last = self.runs.open(self.kennel, self.runs.repo("app", {"a.txt": "a\n"}))
        run.put_state(state or {})
        env = {"STATE": str(run.layout.state_seen), **(env or {})}
        proc = await self.kennel.exec(
            run.spec(("bash", "-c", script, "cli", *argv_extra), env, relay)
        )
        lines = [line async for line in proc.lines()]
        return await proc.wait(), lines

    def warm(self) -> Any:
        (warm,) = self.kennel._warm.values()
        return warm

    def others(self) -> set[int]:
        """Live processes in the kennel besides init and the forwarder."""
        warm = self.warm()
        out = warm.container.exec_run(["sh", "-c", LIST]).output.decode()
        return {int(p) for p in out.split()} - set(warm.keep)

    def inside(self, script: str) -> str:
        out: bytes = self.warm().container.exec_run(["bash", "-c", script]).output
        return out.decode("utf-8", "replace")


@pytest.fixture
async def kennel(kennel_image: str, runs: Runs) -> AsyncIterator[Kennel]:
    k = DockerKennel(
        runs.home,
        DockerKennelSettings(memory="256m", pids=128),
        kennel_image,
        secrets=(KEY,),
    )
    try:
        yield Kennel(k, runs)
    finally:
        await k.close()


# Every trick a leftover could use to pass for the forwarder or slip past a sweep.
SURVIVORS = r"""
exec -a "node /opt/kennel/forwarder.js --listen 127.0.0.1:4100 --socket /relay/relay.sock" \
  sleep 1000 &
node -e 'setInterval(()=>{},1000)' /opt/kennel/forwarder.js --listen 127.0.0.1:4101 &
bash -c 'echo -n node > /proc/$$/comm; exec -a forwarder.js sleep 1000' &
setsid bash -c '(sleep 1000 &) ; sleep 1000' < /dev/null > /dev/null 2>&1 &
nohup bash -c 'trap "" TERM INT HUP QUIT; while :; do sleep 1; done' > /dev/null 2>&1 &
bash -c 'sleep 1000 & kill -STOP $!; wait' &
setsid bash -c 'while :; do (sleep 1000 &) ; sleep 0.2; done' < /dev/null > /dev/null 2>&1 &
disown -a
sleep 0.5
echo started $(ps -e --no-headers | wc -l)
"""


async def test_nothing_a_task_leaves_running_survives_the_sweep(kennel: Kennel) -> None:
    code, out = await kennel.task(SURVIVORS)
    assert code == 0 and out[-1].startswith("started")
    assert int(out[-1].split()[1]) >= 10  # the leftovers were really running
    assert kennel.others() == set()  # only init and the forwarder are left
    code, out = await kennel.task("echo alive")
    assert out == ["alive"]  # the same kennel serves the next task (it was swept, not lost)


async def test_a_leftover_cannot_read_the_next_tasks_prompt(kennel: Kennel) -> None:
    # The spy copies every process's argv and environment, every file in /tmp, every
    # state folder it can name (its own run's, the runs folder's, and any task's through
    # its working folder), as fast as it can, into its own run's tree (which outlives the
    # task: the host reads it).
    spy = r"""
setsid bash -c 'exec -a forwarder.js bash -c "
  out=\$PWD/.spy
  echo spy-alive >> \$out
  while :; do
    for p in /proc/[0-9]*; do
      tr \"\\0\" \" \" < \$p/cmdline >> \$out 2>/dev/null
      tr \"\\0\" \" \" < \$p/environ >> \$out 2>/dev/null
      cat \$p/cwd/../state/*/* >> \$out 2>/dev/null
    done
    cat /tmp/*/* /tmp/*/*/* /runs/*/state/*/* \$STATE/../../../*/state/*/* >> \$out 2>/dev/null
  done"' < /dev/null > /dev/null 2>&1 &
sleep 0.5
"""
    await kennel.task(spy)
    first = kennel.last
    assert first is not None
    code, out = await kennel.task(
        'sleep 1; cat "$STATE/prompt.txt"; echo "$FETCH_PROMPT" "$1"',
        env={"FETCH_PROMPT": SECRET},
        argv_extra=(SECRET,),
        state={"prompt.txt": SECRET + "\n"},
    )
    assert code == 0 and out == [SECRET, f"{SECRET} {SECRET}"]  # task 2 had its prompt
    seen = (first.tree / ".spy").read_text(errors="replace")
    assert seen.startswith("spy-alive")  # the spy did run during task 1
    assert SECRET not in seen


async def test_temporary_files_do_not_outlive_a_task(kennel: Kennel) -> None:
    code, out = await kennel.task(
        "echo one > /tmp/leak; echo two > /tmp/.hidden; mkdir -p /tmp/d/e; "
        "echo three > /dev/shm/leak; mkfifo /tmp/fifo; ipcmk -M 4096 >/dev/null; "
        "ln -s /runs /tmp/link; mkdir -p /tmp/locked/in; echo x > /tmp/locked/in/f; "
        "chmod 000 /tmp/locked/in /tmp/locked; echo planted"
    )
    assert code == 0 and out == ["planted"]
    container = kennel.warm().container.id
    code, out = await kennel.task(
        "ls -A /tmp | grep -v '^fetch-task-.*\\.pid$'; ls -A /dev/shm; "
        "ipcs -m | grep -c '^0x' ; true"
    )
    assert code == 0 and out == ["0"], out  # nothing of task 1 in /tmp, /dev/shm, SysV IPC
    assert kennel.warm().container.id == container  # cleaned, not replaced


async def test_the_real_key_is_nowhere_inside(kennel: Kennel, tmp_path: Path) -> None:
    async with servers() as (upstream, thief):
        relay = RelaySpec(
            upstream=upstream.url,
            provider="anthropic",
            api_key=KEY,
            secret=RUN_SECRET,
            harness="probe",
            task_id=1,
            log_path=tmp_path / "relay.jsonl",
        )
        call = (
            "node -e \"fetch('http://127.0.0.1:4100/v1/messages',{method:'POST',"
            f"headers:{{'x-api-key':'{RUN_SECRET}'}},body:'{{}}'}})"
            ".then(r=>r.text()).then(t=>console.log('relay', t.length))\""
        )
        # The key in two halves, joined by a builtin into a pipe: no command line of the
        # hunt itself (nor any file) holds it.
        half = len(KEY) // 2
        pattern = f"<(printf %s%s '{KEY[:half]}' '{KEY[half:]}')"
        hunt = (
            f"grep -rIlF --exclude-dir=proc --exclude-dir=sys -s -f {pattern} / "
            "2>/dev/null; cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | "
            f"grep -acF -f {pattern}; env | grep -cF -f {pattern}; true"
        )
        code, out = await kennel.task(f"{call}; {hunt}", relay=relay)
    assert code == 0 and out[0].startswith("relay "), out
    assert out[1:] == ["0", "0"], out  # no file, no process environment, no variable
    assert upstream.keys_seen() == ["/v1/messages"] and thief.seen == []


async def test_a_fork_bomb_left_behind_costs_only_its_kennel(kennel: Kennel) -> None:
    code, _ = await kennel.task(
        "setsid bash -c ':(){ :|:& };:' < /dev/null > /dev/null 2>&1 & sleep 2; echo lit"
    )
    await asyncio.sleep(0.5)
    # Swept, or replaced when even the sweep could not start: either way the next task
    # runs alone.
    code, out = await kennel.task(f"sh -c '{LIST}' | wc -l")
    assert code == 0 and int(out[0]) <= 4, out  # init, the forwarder, this bash and wc
    assert kennel.others() == set()


async def test_a_task_cannot_take_over_the_processes_the_sweep_keeps(kennel: Kennel) -> None:
    """Init and the forwarder survive every sweep, so a task must not be able to stop,
    kill or ptrace them (a hijacked keeper would read every later prompt)."""
    await kennel.task("true")
    keep = kennel.warm().keep
    probe = " ".join(
        f"kill -STOP {pid} 2>/dev/null && echo stopped-{pid}; "
        f"kill -KILL {pid} 2>/dev/null && echo killed-{pid}; "
        f"cat /proc/{pid}/environ > /dev/null 2>&1 && echo environ-{pid}; "
        # PTRACE_ATTACH (16) by raw syscall (ptrace is 101 on x86_64, 117 on arm64).
        f"perl -e 'exit(syscall($ENV{{NR}}, 16, {pid}, 0, 0) == 0 ? 0 : 1)' "
        f"&& echo traced-{pid};"
        for pid in keep
    )
    nr = 'export NR=$([ "$(uname -m)" = aarch64 ] && echo 117 || echo 101); '
    code, out = await kennel.task(nr + probe + " echo done")
    assert code == 0 and out == ["done"], out
    code, out = await kennel.task("echo alive")
    assert out == ["alive"] and kennel.warm().keep == keep  # the same keepers, unharmed


def test_keepers_sharing_the_tasks_uid_are_refused() -> None:
    from kennel.docker_backend import hardening_problems

    attrs = {
        "HostConfig": {},
        "Config": {"User": "1000:1000", "Labels": {"fetch.kennel.user": "1000:1000"}},
    }
    assert any("share the tasks' uid" in p for p in hardening_problems(attrs, Path("/ws/app"), ()))
