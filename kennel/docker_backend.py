"""The Docker kennel: one warm, hardened container per repository.

The container has no network (``--network none``), drops every capability, cannot gain
privileges, has a read-only root with a tmpfs for /tmp, pids/memory/CPU limits and a
non-root user. The only writable mount is the repository's runs folder (``/runs``; each
run's own copy of the repository and fresh CLI state, made by the host:
orchestrator/boundary/layer.py), never the owner's working tree or its ``.git``. The runs
folder itself belongs to Fetch (0711): a task can write only in its own run, and cannot
list the others. The relay socket folder is mounted read-only. The main
process is the forwarder (``127.0.0.1:4100`` → ``/relay/relay.sock``); each task is a
``docker exec`` in it, as another uid than init and the forwarder (``KEEPER_USER``).
Before every exec the container is inspected and refused if any of that does not hold:
there is no silent fallback to the host.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import re
import shlex
import socket
import subprocess
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests.exceptions
from docker.types import Mount

from core.errors import KennelError
from core.tasks import cancel_and_wait
from kennel.base import ExecSpec, Layout
from kennel.compose import MARK as COMPOSE
from kennel.compose import compose_image
from kennel.docker_sweep import FORWARDER_SCRIPT, parse_forwarder, sweep_script
from kennel.exec_stream import frames
from kennel.limits import parse_size
from kennel.owner import parse_user, user_for
from kennel.paths import admit, run_dir
from kennel.relayed import RelayedProcess, start_relayed
from kennel.remote_engine import keep_alive
from kennel.settings import DockerKennelSettings

log = logging.getLogger(__name__)
RELAY_PORT = 4100
RUNS = Path("/runs")  # + /<run>/tree, /<run>/state/<harness>
PATH_ENV = "/opt/node/bin:/usr/local/bin:/usr/bin:/bin"
LABEL = "fetch.kennel"
# Init and the forwarder run as this uid, tasks as the repository's: a task can neither
# signal them nor ptrace them (same-uid ptrace is open in a container without Yama), so
# the two processes every sweep keeps cannot be taken over to spy on the next task.
KEEPER_USER = "65533:65533"
SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.IGNORECASE)


@dataclass
class _Warm:
    name: str
    container: Any
    repo: Path
    relay_dir: Path
    last_used: float
    keep: tuple[int, ...]  # init and the forwarder, by PID (kennel/docker_sweep.py)
    user: str  # uid:gid every task (and its sweep) runs as; not the keepers'
    # A task lost it (vanished, its engine stopped answering): the next task gets a new one.
    broken: bool = False


# What the Docker SDK raises when the engine is away: its own errors, and requests'
# (a refused or dropped socket is a requests ConnectionError, not a DockerException).
ENGINE_ERRORS: tuple[type[BaseException], ...] = (
    docker.errors.DockerException,
    requests.exceptions.RequestException,
    ConnectionError,
)


def engine_fault(err: BaseException) -> str:
    """One line for the owner: what happened to the kennel, from what the SDK raised."""
    if isinstance(err, docker.errors.NotFound):
        return "its kennel container disappeared (removed or stopped from outside)"
    if isinstance(err, docker.errors.APIError):
        return f"the Docker engine refused: {str(err.explanation or err)[:160]}"
    return "the Docker engine stopped answering (stopped, restarted or its socket closed)"


class HostPaths:
    """Bind-mount sources must be paths on the Docker host. When Fetch itself runs in a
    container (Compose), its folders are volumes: translate through its own mounts."""

    def __init__(self, client_factory: Any) -> None:
        self._factory = client_factory
        self._mounts: list[tuple[str, str]] | None = None

    def _own_mounts(self) -> list[tuple[str, str]]:
        if self._mounts is None:
            self._mounts = []
            if Path("/.dockerenv").exists():
                try:
                    me = self._factory().containers.get(os.uname().nodename)
                    self._mounts = sorted(
                        (
                            (str(m["Destination"]), str(m["Source"]))
                            for m in me.attrs.get("Mounts") or []
                        ),
                        key=lambda pair: -len(pair[0]),
                    )
                except docker.errors.DockerException as err:
                    # Not a container of this engine (a VM or another runtime): paths are
                    # host paths already.
                    log.info("not translating mount paths: %s", err)
        return self._mounts

    def to_host(self, path: Path) -> str:
        text = str(path)
        for dest, source in self._own_mounts():
            if text == dest or text.startswith(dest.rstrip("/") + "/"):
                return source + text[len(dest) :]
        return text


class DockerKennel:
    name = "docker"

    def __init__(
        self,
        home: Path,
        settings: DockerKennelSettings,
        image: str,
        secrets: tuple[str, ...] = (),
        client: Any | None = None,
    ) -> None:
        self._home = home
        self._settings = settings
        self._image = image
        # Short values would match by accident; real keys are long.
        self._secrets = tuple(s for s in secrets if len(s) >= 12)
        self._client = client
        self._warm: dict[Path, _Warm] = {}
        self._paths = HostPaths(client_factory=self._docker)
        self._lock = asyncio.Lock()
        # The kennel's one task, its own: started with the first container, ended by close.
        self._reaper: asyncio.Task[None] | None = None
        # This install's own mark: two Fetches on one engine (every Compose deployment
        # has the same FETCH_HOME path) never name, reuse or remove each other's kennels.
        self._install = install_id(home)
        self._swept = False
        self._shared: bool | None = None  # FETCH_HOME/runs made a shared mount point

    # -- the port -----------------------------------------------------------------------
    def isolation(self) -> str:
        s = self._settings
        return (
            f"docker: no network but the model relay, all capabilities dropped, "
            "read-only root, non-root user, only the run's own copy of the repo writable "
            "(no .git); "
            f"limits {s.memory} RAM, {s.cpus:g} CPUs, {s.pids} processes"
        )

    @property
    def steerable(self) -> bool:
        """An exec's stdin rides the engine's hijacked socket (``DockerProcess``): the end
        of input is a half-close of that socket, which a plain socket (the local engine's
        unix socket, plain tcp) can do and a TLS or ssh transport cannot from Python. On
        those, a message sent while the task runs is kept for after it instead.
        Asked on the event loop at a task's start: the engine is never contacted here
        (a client not made yet is judged by the address it would use)."""
        if self._client is not None:
            return half_closes(str(self._client.api.base_url))
        host = self._settings.host or os.environ.get("DOCKER_HOST", "")
        # Without a client, a tcp:// engine may be TLS: judged when the client exists.
        return not host or host.startswith("unix://")

    @property
    def host_mounts(self) -> bool:
        """A warm container binds its folders once. A run's overlay, mounted by the host
        later, reaches it only through mount propagation: FETCH_HOME/runs made a shared
        mount point (Fetch root on the host), each container's /runs its slave. Else
        (Compose, not root) the run's tree is a copy."""
        if self._shared is None:
            runs = self._home / "runs"
            # A path the engine sees under another name (Fetch in a container of that
            # engine: Compose) lives in another mount namespace: nothing would propagate.
            same = self._paths.to_host(runs) == str(runs)
            self._shared = same and _share(runs)
        return self._shared

    def could_mount(self) -> bool:
        """``host_mounts``'s answer without making the shared mount (``fetch doctor``
        asks, and must leave nothing mounted behind it)."""
        if self._shared is not None:
            return self._shared
        runs = self._home / "runs"
        return os.geteuid() == 0 and self._paths.to_host(runs) == str(runs)

    def owner(self) -> tuple[int, int] | None:
        """The dedicated uid when Fetch is root (it hands each run's folders to it);
        Fetch's own otherwise, which can hand nothing to another uid: the run's copy is
        Fetch's, and the CLI in the container runs as Fetch's uid to write it."""
        if os.geteuid() != 0:
            return None
        return parse_user(user_for(self._home, self._settings.user))

    def _task_user(self, repo: Path) -> str:
        if os.geteuid() != 0:
            return f"{os.geteuid()}:{os.getegid()}"
        return user_for(repo, self._settings.user)

    def layout(self, tree: Path, harness: str, repo: Path | None = None) -> Layout:
        run, repo = tree.parent, tree.parent.parent  # <runs>/<repo>/<run>/tree
        return Layout(
            workdir=RUNS / run.name / "tree",
            state_host=run / "state" / harness,
            state_seen=RUNS / run.name / "state" / harness,
            relay_socket=admit(self._relay_dir(repo), KEEPER_USER) / "relay.sock",
            relay_port=RELAY_PORT,
            path_env=PATH_ENV,
            confined=True,
            # Inside the runs folder the container binds already (Fetch's files, 0644).
            attachments_host=run / "attachments",
            attachments_seen=RUNS / run.name / "attachments",
        )

    def _propagates(self, runs: Path) -> bool:
        """Whether ``runs`` (a repository's runs folder) is below the shared one."""
        return self.host_mounts and (self._home / "runs") in runs.parents

    @staticmethod
    def _runs(spec: ExecSpec) -> Path:
        """The folder of the repository's runs: what one warm container binds."""
        return spec.repo.parent.parent

    async def exec(self, spec: ExecSpec) -> RelayedProcess:
        # Swept before the task's relay exists: nothing an earlier task left can use it.
        try:
            warm = await self._ready(spec)
        except ENGINE_ERRORS as err:
            raise KennelError(f"the kennel could not start: {engine_fault(err)}") from err
        return await start_relayed(
            spec,
            lambda: DockerProcess.start(
                self._docker(), warm.container, spec, warm.keep, warm.user, warm
            ),
        )

    async def _ready(self, spec: ExecSpec) -> _Warm:
        # Each task starts in a swept kennel even if the last one's sweep never ran (a
        # crash, a cancelled wait); a kennel that cannot be swept is replaced, once.
        for _attempt in range(2):
            async with self._lock:
                warm = await self._ensure(self._runs(spec))
                warm.last_used = time.monotonic()
            await asyncio.to_thread(self._verify, warm)
            if await asyncio.to_thread(self._prepare, warm, spec.layout):
                return warm
            async with self._lock:
                await asyncio.to_thread(self._remove, warm)
                if self._warm.get(self._runs(spec)) is warm:
                    del self._warm[self._runs(spec)]
        raise KennelError(
            f"the kennel for {self._runs(spec).name} could not be cleaned between tasks, even fresh"
        )

    async def close(self) -> None:
        reaper, self._reaper = self._reaper, None
        await cancel_and_wait(reaper)
        async with self._lock:
            for warm in list(self._warm.values()):
                await asyncio.to_thread(self._remove, warm)
            self._warm.clear()
            if self._client is not None:
                await asyncio.to_thread(self._client.close)
                self._client = None
            if self._shared:
                # Ours: made by host_mounts. Lazily, should a run's mount still hold it.
                await asyncio.to_thread(
                    subprocess.run,
                    ["umount", "-l", str(self._home / "runs")],
                    capture_output=True,
                    check=False,
                )
                self._shared = None

    # -- containers ---------------------------------------------------------------------
    def _docker(self) -> Any:
        if self._client is None:
            try:
                self._client = docker.from_env(timeout=30)
                self._client.ping()
            except docker.errors.DockerException as err:
                self._client = None
                raise KennelError(f"the Docker engine is not reachable: {err}") from err
        return self._client

    def _relay_dir(self, repo: Path) -> Path:
        path = run_dir(self._home, self._settings.run_dir) / f"docker-{repo.name}"
        path.mkdir(mode=0o755, exist_ok=True)
        os.chmod(path, 0o755)  # the kennel's uid must reach the socket inside
        return path

    def _container_name(self, repo: Path) -> str:
        digest = hashlib.sha256(f"{self._install}\0{self._home}\0{repo}".encode()).hexdigest()[:10]
        safe = re.sub(r"[^a-zA-Z0-9_.-]", "-", repo.name)[:40]
        return f"fetch-kennel-{safe}-{digest}"

    def _sweep_leftovers(self) -> None:
        """Before this process's first kennel: remove every container of this install
        (a killed Fetch left it running, its runs folder mounted)."""
        if self._swept:
            return
        self._swept = True
        found = self._docker().containers.list(
            all=True, filters={"label": f"{LABEL}.install={self._install}"}
        )
        for container in found:
            log.info("removing kennel %s a stopped Fetch left", container.name)
            with suppress(docker.errors.NotFound, docker.errors.APIError):
                container.remove(force=True)

    async def _ensure(self, repo: Path) -> _Warm:
        await asyncio.to_thread(self._sweep_leftovers)
        warm = self._warm.get(repo)
        if warm is not None:
            alive = not warm.broken and await asyncio.to_thread(self._running, warm)
            if alive:
                return warm
            await asyncio.to_thread(self._remove, warm)
            del self._warm[repo]
        warm = await asyncio.to_thread(self._start, repo)
        self._warm[repo] = warm
        if self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(
                self._reap_idle(), name="kennel:docker:reaper"
            )
        return warm

    def _running(self, warm: _Warm) -> bool:
        try:
            warm.container.reload()
        except docker.errors.NotFound:
            return False
        return bool(warm.container.status == "running")

    def _start(self, repo: Path) -> _Warm:
        client = self._docker()
        name = self._container_name(repo)
        with suppress(docker.errors.NotFound):
            client.containers.get(name).remove(force=True)  # a leftover from a crash
        s = self._settings
        user = self._task_user(repo)
        if user.split(":")[0] == KEEPER_USER.split(":")[0]:
            raise KennelError(
                f"kennel.docker.user {user} is the uid of the kennel's own "
                "processes: choose another"
            )
        relay_dir = self._relay_dir(repo)
        image = self._image
        if image == COMPOSE:  # the Compose project's own kennel image, asked each time
            image = compose_image(client)
        try:
            container = self._launch(
                client,
                repo,
                image,
                command=[
                    "node",
                    "/opt/kennel/forwarder.js",
                    "--listen",
                    f"127.0.0.1:{RELAY_PORT}",
                    "--socket",
                    "/relay/relay.sock",
                ],
                name=name,
                detach=True,
                init=True,  # an init reaps whatever the CLIs orphan
                network_mode="none",
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                read_only=True,
                tmpfs={"/tmp": f"rw,nosuid,nodev,size={s.tmpfs_size}"},
                mem_limit=s.memory,
                memswap_limit=s.memory,
                nano_cpus=int(s.cpus * 1_000_000_000),
                pids_limit=s.pids,
                # Per process, beside the container's cgroups: processes of the task uid
                # (host-wide for that uid: a backstop behind pids_limit), CPU seconds
                # (SIGXCPU, then SIGKILL 5 s later), size of one file (EFBIG).
                ulimits=ulimits(s),
                user=KEEPER_USER,
                environment={},
                working_dir=str(RUNS),
                mounts=[
                    Mount(
                        str(RUNS),
                        self._paths.to_host(repo),
                        type="bind",
                        # A run's overlay, mounted by the host after this container
                        # started, reaches it (host_mounts); never the other way round.
                        propagation="rslave" if self._propagates(repo) else None,
                    )
                ],
                volumes={self._paths.to_host(relay_dir): {"bind": "/relay", "mode": "ro"}},
                labels={
                    LABEL: "1",
                    f"{LABEL}.home": str(self._home),
                    f"{LABEL}.install": self._install,
                    f"{LABEL}.repo": repo.name,
                    f"{LABEL}.user": user,
                },
            )
        except docker.errors.ImageNotFound as err:
            raise KennelError(
                f"kennel image {self._image} is missing: build it with `python -m kennel.build`"
            ) from err
        except docker.errors.APIError as err:
            raise KennelError(f"could not start the kennel for {repo.name}: {err}") from err
        try:
            forwarder = self._forwarder_pid(container)
        except KennelError:
            self._remove(_Warm(name, container, repo, relay_dir, 0.0, (), user))
            raise
        return _Warm(name, container, repo, relay_dir, time.monotonic(), (1, forwarder), user)

    def _launch(self, client: Any, repo: Path, image: str, **options: Any) -> Any:
        """Create and start the container (a remote engine's kennel places it otherwise:
        kennel/remote.py)."""
        return client.containers.run(image, **options)

    def _forwarder_pid(self, container: Any) -> int:
        """The forwarder's PID, read before any task exists (init's only child)."""
        deadline = time.monotonic() + 10
        problem = ""
        while time.monotonic() < deadline:
            result = container.exec_run(["sh", "-c", FORWARDER_SCRIPT])
            try:
                return parse_forwarder(result.output.decode("utf-8", "replace"))
            except ValueError as err:
                problem = str(err)
            time.sleep(0.05)
        raise KennelError(f"the kennel's forwarder did not start: {problem}")

    def _remove(self, warm: _Warm) -> None:
        try:
            warm.container.remove(force=True)
            return
        except docker.errors.NotFound:
            return
        except ENGINE_ERRORS:
            pass
        # The client may hold a connection the engine hung up on (it stopped and came
        # back): once more on a fresh one. An engine still away: the next start of this
        # install sweeps it by label.
        with suppress(*ENGINE_ERRORS):
            fresh = docker.from_env(timeout=30)
            try:
                fresh.containers.get(warm.container.id).remove(force=True)
            finally:
                fresh.close()

    async def _reap_idle(self) -> None:
        while True:
            await asyncio.sleep(min(60.0, self._settings.idle_seconds / 2))
            now = time.monotonic()
            try:
                async with self._lock:
                    for repo, warm in list(self._warm.items()):
                        if now - warm.last_used > self._settings.idle_seconds:
                            log.info("reaping idle kennel %s", warm.name)
                            await asyncio.to_thread(self._remove, warm)
                            del self._warm[repo]
            except Exception:  # the engine away for a moment: try again next round
                log.exception("reaping idle kennels failed")

    # -- the promise, checked ------------------------------------------------------------
    def _verify(self, warm: _Warm) -> None:
        warm.container.reload()
        problems = hardening_problems(
            warm.container.attrs, Path(self._paths.to_host(warm.repo)), self._secrets
        )
        if problems:
            raise KennelError(
                f"refusing to run: kennel {warm.name} is not isolated as promised: "
                + "; ".join(problems)
            )

    def _prepare(self, warm: _Warm, layout: Layout) -> bool:
        """Sweep the kennel (no process or temporary file of an earlier task left) and
        check the run's state folder is there (the host made it, with the harness's
        files, in the run's folder under /runs). False: the sweep failed, the kennel
        must be replaced."""
        script = f"test -d {shlex.quote(str(layout.state_seen))}"
        try:
            result = warm.container.exec_run(
                ["sh", "-c", sweep_script(warm.keep) + "; " + script], user=warm.user
            )
        except docker.errors.DockerException as err:
            log.warning("kennel %s could not be swept (%s); replacing it", warm.name, err)
            return False
        if result.output.startswith((b"survivors:", b"left:")) or result.exit_code in (3, 4):
            log.warning("kennel %s not clean (%r); replacing it", warm.name, result.output[-200:])
            return False
        if result.exit_code != 0:
            raise KennelError(f"could not prepare the CLI state: {result.output[-300:]!r}")
        return True


ULIMITS = ("nproc", "cpu", "fsize")


def ulimits(s: DockerKennelSettings) -> list[docker.types.Ulimit]:
    """The container's ulimits (``ULIMITS``), from the settings."""
    size = parse_size(s.file_size)
    return [
        docker.types.Ulimit(name="nproc", soft=s.nproc, hard=s.nproc),
        docker.types.Ulimit(name="cpu", soft=s.cpu_seconds, hard=s.cpu_seconds + 5),
        docker.types.Ulimit(name="fsize", soft=size, hard=size),
    ]


def hardening_problems(
    attrs: dict[str, Any], repo: Path, secrets: tuple[str, ...], runs_volume: str = ""
) -> list[str]:
    """Everything about a container that breaks the kennel's promise (empty = fine).
    ``runs_volume``: a remote engine's kennel, whose only mount is that volume at /runs
    (kennel/remote.py)."""
    host = attrs.get("HostConfig") or {}
    config = attrs.get("Config") or {}
    problems: list[str] = []
    if host.get("NetworkMode") != "none":
        problems.append(f"network is {host.get('NetworkMode')!r}, not 'none'")
    if "ALL" not in [c.upper() for c in host.get("CapDrop") or []]:
        problems.append("capabilities are not all dropped")
    if host.get("CapAdd"):
        problems.append(f"capabilities added: {host.get('CapAdd')}")
    if host.get("Privileged"):
        problems.append("privileged")
    if not any("no-new-privileges" in o for o in host.get("SecurityOpt") or []):
        problems.append("no-new-privileges is off")
    if not host.get("ReadonlyRootfs"):
        problems.append("root filesystem is writable")
    if not host.get("PidsLimit") or host.get("PidsLimit", 0) <= 0:
        problems.append("no pids limit")
    if not host.get("Memory"):
        problems.append("no memory limit")
    if not host.get("NanoCpus"):
        problems.append("no CPU limit")
    have = {str(u.get("Name")): u for u in host.get("Ulimits") or []}
    for name in ULIMITS:
        hard = (have.get(name) or {}).get("Hard")
        if not isinstance(hard, int) or hard <= 0:
            problems.append(f"no {name} ulimit")
    user = str(config.get("User") or "")
    if user in {"", "0", "root"} or user.startswith(("0:", "root:")):
        problems.append("runs as root")
    task_user = str((config.get("Labels") or {}).get(f"{LABEL}.user") or "")
    if task_user and task_user.split(":")[0] == user.split(":")[0]:
        problems.append("init and the forwarder share the tasks' uid (a task could take them over)")
    for mount in attrs.get("Mounts") or []:
        source, dest = str(mount.get("Source", "")), str(mount.get("Destination", ""))
        if "docker.sock" in source or "docker.sock" in dest:
            problems.append("the Docker socket is mounted")
        # Exactly two mounts: the runs folder (the one writable place) and the relay's
        # folder, read-only. Anything else (a volume, the owner's repo or .git, even
        # read-only) is not what the kennel promises.
        if runs_volume:
            if dest != str(RUNS):
                problems.append(f"{dest} is mounted ({mount.get('Type')})")
            elif mount.get("Type") != "volume" or mount.get("Name") != runs_volume:
                problems.append(f"{dest} is {mount.get('Name') or source}, not {runs_volume}")
            continue
        if dest not in (str(RUNS), "/relay"):
            problems.append(f"{dest} is mounted ({mount.get('Type')})")
        elif mount.get("RW") and dest != str(RUNS):
            problems.append(f"{dest} is writable")
        if dest == str(RUNS) and (Path(source) != repo or mount.get("Type") != "bind"):
            problems.append(f"{dest} is {source}, not {repo}")
    for item in config.get("Env") or []:
        name, _, value = str(item).partition("=")
        if any(secret in value for secret in secrets):
            problems.append(f"a real credential is in the environment ({name})")
        elif SECRET_NAME.search(name):
            problems.append(f"secret-looking variable {name} in the environment")
    return problems


def _share(runs: Path) -> bool:
    """Make ``runs`` a shared mount point (a bind onto itself), so mounts made below it
    later propagate to containers that bind a folder of it as slaves. Root only."""
    if os.geteuid() != 0:
        return False
    runs.mkdir(parents=True, exist_ok=True, mode=0o711)
    # --rbind: an overlay a run mounted below it before now (a question's layer after a
    # restart) stays visible on top of the new bind, and so in the containers.
    steps = [] if os.path.ismount(runs) else [["mount", "--rbind", str(runs), str(runs)]]
    steps.append(["mount", "--make-rshared", str(runs)])
    for argv in steps:
        done = subprocess.run(argv, capture_output=True, check=False)
        if done.returncode != 0:
            log.info("runs are copies in Docker: %s", done.stderr.decode(errors="replace"))
            return False
    return True


def half_closes(base_url: str) -> bool:
    """Whether the engine's socket at docker-py's ``base_url`` is a plain socket that
    can end an exec's stdin while its output still flows (``shutdown(SHUT_WR)``): the
    unix socket (``http+docker://localhost``) and plain tcp (``http://``); not TLS
    (``https://``) nor ssh (``http+docker://ssh``)."""
    return base_url == "http+docker://localhost" or base_url.startswith("http://")


def install_id(home: Path) -> str:
    """A random id kept in FETCH_HOME: which kennels are this install's."""
    path = home / "kennel" / "install-id"
    try:
        found = path.read_text().strip()
    except OSError:
        found = ""
    if len(found) == 16 and all(c in "0123456789abcdef" for c in found):
        return found
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = os.urandom(8).hex()
    path.write_text(fresh + "\n")
    return fresh


class DockerProcess:
    """One ``docker exec``: output streamed from a thread, stopped by signalling inside."""

    def __init__(
        self,
        client: Any,
        container: Any,
        exec_id: str,
        tag: str,
        keep: tuple[int, ...],
        user: str,
        warm: _Warm | None = None,
    ) -> None:
        self._client = client
        self._container = container
        self._keep = keep
        self._user = user
        self._warm = warm
        self._lost: str | None = None  # what happened to the kennel, once it is gone
        self._exec_id = exec_id
        self._tag = tag
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._stderr: deque[str] = deque(maxlen=60)
        self._done = asyncio.Event()
        # The output pump: a thread (docker's stream is blocking), ended with the exec's
        # stream; wait and terminate make sure of it (_end_pump).
        self._thread: threading.Thread | None = None
        self._sock: Any = None
        # Steering: the CLI's stdin is the write side of the exec's socket (the engine
        # copies it to the process), ended by a half-close; one write at a time.
        self._stdin = False
        self._write_lock = asyncio.Lock()

    @classmethod
    async def start(
        cls,
        client: Any,
        container: Any,
        spec: ExecSpec,
        keep: tuple[int, ...],
        user: str,
        warm: _Warm | None = None,
    ) -> DockerProcess:
        tag = f"fetch-task-{os.urandom(4).hex()}"
        # The shell records its pid in a file named by ``tag`` and execs the CLI: the
        # pid is the root of the tree /stop ends, found from inside the container. It
        # also makes the task the OOM killer's first choice (raising it needs no
        # privilege), so a memory hog dies and the container's forwarder lives on.
        wrapped = [
            "sh",
            "-c",
            f"echo 1000 > /proc/self/oom_score_adj 2>/dev/null; "
            f'echo $$ > /tmp/{tag}.pid; exec "$@"',
            "sh",
            *spec.argv,
        ]
        env = dict(spec.env)

        def create() -> str:
            created = client.api.exec_create(
                container.id,
                wrapped,
                stdout=True,
                stderr=True,
                stdin=spec.steer,  # steering: written on the exec's socket
                tty=False,
                environment=env,
                workdir=str(spec.layout.workdir),
                user=user,
            )
            return str(created["Id"])

        try:
            exec_id = await asyncio.to_thread(create)
        except ENGINE_ERRORS as err:
            if warm is not None:
                warm.broken = True
            raise KennelError(
                f"could not start {spec.argv[0]} in the kennel: {engine_fault(err)}"
            ) from err
        proc = cls(client, container, exec_id, tag, keep, user, warm)
        proc._stdin = spec.steer
        loop = asyncio.get_running_loop()
        try:
            sock = await asyncio.to_thread(client.api.exec_start, exec_id, socket=True)
        except ENGINE_ERRORS as err:
            raise proc._lose(err) from err
        keep_alive(getattr(sock, "_sock", sock))  # an engine over TCP: a silent drop ends it
        proc._sock = sock
        proc._thread = threading.Thread(
            target=proc._pump, args=(sock, loop), daemon=True, name=f"kennel-exec-{exec_id[:8]}"
        )
        proc._thread.start()
        return proc

    def _pump(self, sock: Any, loop: asyncio.AbstractEventLoop) -> None:
        partial = {1: b"", 2: b""}

        def emit(stream: int, line: bytes) -> None:
            text = line.decode("utf-8", "replace").rstrip("\r")
            if stream == 1:
                loop.call_soon_threadsafe(self._queue.put_nowait, text)
            else:
                self._stderr.append(text[:500])

        try:
            raw = getattr(sock, "_sock", sock)
            for stream, data in frames(raw):
                buf = partial.get(stream, b"") + data
                *lines, rest = buf.split(b"\n")
                for line in lines:
                    emit(stream, line)
                partial[stream] = rest[-4 * 1024 * 1024 :]
        except OSError:
            pass
        finally:
            for stream, rest in partial.items():
                if rest:
                    emit(stream, rest)
            with suppress(RuntimeError):
                loop.call_soon_threadsafe(self._queue.put_nowait, None)
            # SocketIO.close() leaves the socket under it open: close both.
            for part in (sock, getattr(sock, "_sock", sock)):
                with suppress(OSError):
                    part.close()

    async def lines(self) -> AsyncIterator[str]:
        while (line := await self._queue.get()) is not None:
            yield line
        self._done.set()

    def _lose(self, err: BaseException) -> KennelError:
        """The kennel is gone under the task (vanished, or the engine stopped answering):
        mark it so the next task starts a new one; the error the task ends with."""
        self._lost = engine_fault(err)
        if self._warm is not None:
            self._warm.broken = True
        if not isinstance(err, docker.errors.APIError):
            # The connections the engine dropped: closed now, not left to the collector.
            # The client opens new ones when the engine is back.
            with suppress(Exception):
                self._client.close()
        log.warning("kennel lost mid-task: %s (%r)", self._lost, err)
        return KennelError(f"the task stopped: {self._lost}. The next task gets a new kennel.")

    async def wait(self) -> int:
        while True:
            try:
                info = await asyncio.to_thread(self._client.api.exec_inspect, self._exec_id)
            except ENGINE_ERRORS as err:
                await self._end_pump()
                raise self._lose(err) from err
            if not info.get("Running"):
                code = info.get("ExitCode")
                break
            await asyncio.sleep(0.1)
        if code == 137 and self._warm is not None:
            # SIGKILLed: the memory limit (the task is the OOM killer's first choice) or
            # the kernel's own reasons. The next task gets a fresh kennel either way.
            self._warm.broken = True
        # Whatever the task left behind (background jobs, a fork bomb's children) goes
        # with it: the next task starts in a clean kennel.
        await self._sweep()
        await self._end_pump()
        return int(code) if code is not None else -1

    async def _end_pump(self) -> None:
        """The pump ends when the exec's stream does, which the sweep has made sure of.
        Should the engine keep it open anyway, shutting the socket down ends the read."""
        thread = self._thread
        if thread is None:
            return
        await asyncio.to_thread(thread.join, 2.0)
        if thread.is_alive():
            with suppress(OSError):
                getattr(self._sock, "_sock", self._sock).shutdown(socket.SHUT_RDWR)
            await asyncio.to_thread(thread.join, 2.0)

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)

    def _inside(self, script: str) -> tuple[int, str]:
        result = self._container.exec_run(["sh", "-c", script], user=self._user)
        return int(result.exit_code or 0), result.output.decode("utf-8", "replace")

    def _tree_script(self, signal_name: str) -> str:
        # Every process under the task's shell, found with ps inside the container.
        return (
            f"root=$(cat /tmp/{self._tag}.pid 2>/dev/null) || exit 0; "
            "all=$root; frontier=$root; "
            "while [ -n \"$frontier\" ]; do next=''; "
            "for p in $frontier; do for c in $(ps -o pid= --ppid $p); do "
            'next="$next $c"; done; done; all="$all $next"; frontier=$next; done; '
            f"kill -{signal_name} $all 2>/dev/null; "
            "for p in $all; do [ -d /proc/$p ] && "
            "[ \"$(awk '{print $3}' /proc/$p/stat 2>/dev/null)\" != Z ] && echo $p; done; true"
        )

    def alive_pids(self) -> list[int]:
        _code, out = self._inside(self._tree_script("0"))
        return [int(p) for p in out.split() if p.isdigit()]

    async def pause(self) -> int:
        # Signalled from inside like /stop (``docker pause`` would freeze the keepers
        # too, and no exec could reach the container until it was unpaused).
        try:
            _code, out = await asyncio.to_thread(self._inside, self._tree_script("STOP"))
        except ENGINE_ERRORS as err:  # the task's wait tells the owner
            log.warning("pause: the kennel is gone (%r)", err)
            return 0
        return len([p for p in out.split() if p.isdigit()])

    async def resume(self) -> None:
        with suppress(*ENGINE_ERRORS):
            await asyncio.to_thread(self._inside, self._tree_script("CONT"))

    def _raw(self) -> socket.socket | None:
        """The engine's socket under docker-py's wrapper, while stdin is open."""
        raw = getattr(self._sock, "_sock", self._sock)
        return raw if self._stdin and isinstance(raw, socket.socket) else None

    async def write_input(self, data: bytes) -> bool:
        async with self._write_lock:
            raw = self._raw()
            if raw is None or self._done.is_set() or self._lost is not None:
                return False
            # In a thread (the socket blocks; the pump reads it at the same time), and
            # bounded like a pipe's drain: a CLI that stopped reading (paused, wedged)
            # must not hold the message's handler.
            try:
                await asyncio.wait_for(asyncio.to_thread(raw.sendall, data), 5.0)
            except (OSError, TimeoutError):
                return False
            return True

    def close_input(self) -> None:
        raw = self._raw()
        self._stdin = False
        if raw is not None:
            # The engine ends the process's stdin at the stream's end (its CloseStdin for
            # an exec); the output keeps flowing until the CLI exits.
            with suppress(OSError):
                raw.shutdown(socket.SHUT_WR)

    async def terminate(self, grace: float) -> float:
        started = time.monotonic()
        try:
            if self._lost is None:
                await self._signal_tree(grace)
        except ENGINE_ERRORS as err:
            # Nothing left to stop in a kennel that is gone: the next task gets a new one.
            self._lose(err)
        took = time.monotonic() - started
        await self._end_pump()
        return took

    async def _signal_tree(self, grace: float) -> None:
        started = time.monotonic()
        await asyncio.to_thread(self._inside, self._tree_script("INT"))
        deadline = started + grace
        while time.monotonic() < deadline:
            info = await asyncio.to_thread(self._client.api.exec_inspect, self._exec_id)
            if not info.get("Running") and not await asyncio.to_thread(self.alive_pids):
                break
            await asyncio.sleep(0.05)
        else:
            await asyncio.to_thread(self._inside, self._tree_script("KILL"))
        await self._sweep()

    async def _sweep(self) -> None:
        """Kill everything but init and the forwarder (by the PIDs recorded at start) and
        remove every temporary file: the kennel serves one task at a time. If that cannot
        run (no process slot left) or something survives, the container is removed: the
        next task gets a fresh one rather than a choked or tainted one."""
        try:
            code, out = await asyncio.to_thread(self._inside, sweep_script(self._keep))
        except ENGINE_ERRORS as err:
            code, out = -1, str(err)
        if code != 0:
            log.warning("kennel cleanup failed (%s); removing the container", out[-200:])
            if self._warm is not None:
                self._warm.broken = True
            with suppress(*ENGINE_ERRORS):
                await asyncio.to_thread(self._container.remove, force=True)
