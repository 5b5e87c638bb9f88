"""The Docker kennel on another engine: ``kennel.docker.host`` (kennel/remote_engine.py).

The same hardened, warm container per repository as the local kennel
(kennel/docker_backend.py), checked the same way before every task, but nothing of this
machine is bound into it, because no path of this machine exists there:

* ``/runs`` is a memory-backed volume of the engine's (``runs_size``), owned by the
  task's uid, made and removed with the container;
* before each task the run's folder (its copy of the repository, the CLI's state, the
  attachments) goes there as data: a tar Fetch builds from its own copy, following
  nothing, put with the engine's archive API, after everything an earlier task left in
  ``/runs`` is removed;
* after it, the run's tree and state come back as data: the engine's archive of them,
  read by orchestrator/boundary/tarsync.py into the run's copy on this machine, from
  which the change is read as for any copy (changeset.py). The owner's workspace never
  leaves this machine;
* the relay is reached through the container's own stdio (kennel/remote_bridge.py):
  its main process forwards the CLIs' loopback port over frames on an attach stream
  Fetch holds. No port is opened on either side.
"""

from __future__ import annotations

import asyncio
import logging
import os
import posixpath
import tarfile
import tempfile
from contextlib import suppress
from pathlib import Path
from typing import IO, Any

import docker.errors
from docker.types import LogConfig, Mount

from core.errors import KennelError
from kennel.base import ExecSpec, Layout
from kennel.docker_backend import (
    ENGINE_ERRORS,
    LABEL,
    RELAY_PORT,
    RUNS,
    DockerKennel,
    DockerProcess,
    _Warm,
    engine_fault,
    hardening_problems,
)
from kennel.docker_sweep import sweep_script
from kennel.limits import parse_size
from kennel.owner import parse_user
from kennel.relayed import RelayedProcess, start_relayed
from kennel.remote_bridge import MUX_SCRIPT, Bridge
from kennel.remote_engine import Engine
from kennel.settings import DockerKennelSettings
from orchestrator.boundary import tarsync
from orchestrator.boundary.walk import FILE_FLAGS, Limits, Refused, Tree

log = logging.getLogger(__name__)
REACH_ERRORS: tuple[type[BaseException], ...] = (*ENGINE_ERRORS, OSError)
STATE_ERRORS: tuple[type[BaseException], ...] = (Refused, *ENGINE_ERRORS)
# What may come back: the tree as any copy is read (walk.Limits), the whole archive
# bounded by the volume it came from.
TREE_LIMITS = Limits()
STATE_LIMITS = Limits(depth=64, entries=100_000, file_bytes=64 << 20)
# Everything /runs held before a task is removed as the task's uid (it owns all of it),
# and /runs checked empty: a file left there would reach the next task.
CLEAR_RUNS = (
    "chmod -R u+rwx /runs 2>/dev/null; "
    "rm -rf /runs/* /runs/.[!.]* /runs/..?* 2>/dev/null; "
    '[ -z "$(ls -A /runs)" ] || { echo "left: /runs"; exit 4; }'
)


class RemoteDockerKennel(DockerKennel):
    """See the module's text."""

    def __init__(
        self,
        home: Path,
        settings: DockerKennelSettings,
        image: str,
        engine: Engine,
        secrets: tuple[str, ...] = (),
        client: Any | None = None,
    ) -> None:
        super().__init__(home, settings, image, secrets, client)
        self.engine = engine
        self._bridges: dict[str, Bridge] = {}  # by container name
        # By run: the tree's paths never sent (``pack_run``), so never removed here.
        self._unsent: dict[str, frozenset[str]] = {}
        self._shared = False  # nothing of this machine is mounted there

    def isolation(self) -> str:
        return (
            super().isolation()
            + f"; on the Docker engine at {self.engine.describe()}: the run's copy goes "
            "there and its result comes back as data, the relay through the container's "
            "own stdio"
        )

    @property
    def host_mounts(self) -> bool:
        return False  # a run's tree is always a copy: it travels

    def could_mount(self) -> bool:
        return False

    # -- the engine ----------------------------------------------------------------------
    def _docker(self) -> Any:
        if self._client is None:
            try:
                client = self.engine.client()
                client.ping()
            except REACH_ERRORS as err:
                raise KennelError(
                    f"the Docker engine at {self.engine.describe()} is not reachable: "
                    f"{str(err)[:200]}"
                ) from err
            self._client = client
        return self._client

    def _volume_name(self, container: str) -> str:
        return f"{container}-runs"

    def _sweep_leftovers(self) -> None:
        first = not self._swept
        super()._sweep_leftovers()
        if first:  # the volumes of the containers a stopped Fetch left
            found = self._docker().volumes.list(
                filters={"label": f"{LABEL}.install={self._install}"}
            )
            for volume in found:
                with suppress(*ENGINE_ERRORS):
                    volume.remove(force=True)

    def _launch(self, client: Any, repo: Path, image: str, **options: Any) -> Any:
        try:
            client.images.get(image)
        except docker.errors.ImageNotFound:
            raise KennelError(missing_image(image, self.engine)) from None
        name = str(options["name"])
        user = str(options["labels"][f"{LABEL}.user"])
        uid, gid = parse_user(user)
        volume = self._volume_name(name)
        with suppress(docker.errors.NotFound):
            client.volumes.get(volume).remove(force=True)
        client.volumes.create(
            volume,
            driver="local",
            driver_opts={
                "type": "tmpfs",
                "device": "tmpfs",
                "o": f"size={parse_size(self._settings.runs_size)},uid={uid},gid={gid},"
                "mode=0711,nosuid,nodev",
            },
            labels={LABEL: "1", f"{LABEL}.install": self._install},
        )
        options.pop("volumes", None)  # the relay's folder: on this machine only
        options.update(
            command=["node", "-e", MUX_SCRIPT, "127.0.0.1", str(RELAY_PORT)],
            mounts=[Mount(str(RUNS), volume, type="volume")],
            stdin_open=True,  # the bridge's way in
            # Nothing the relay carries is written to the engine's logs.
            log_config=LogConfig(type="none"),
        )
        options.pop("detach", None)
        try:
            container = client.containers.create(image, **options)
        except BaseException:
            with suppress(*ENGINE_ERRORS):
                client.volumes.get(volume).remove(force=True)
            raise
        relay = self._relay_dir(repo) / "relay.sock"
        bridge = Bridge(self.engine, str(container.id), relay)
        try:
            bridge.attach()
            container.start()
            bridge.wait_ready()
        except BaseException:
            bridge.close()
            with suppress(*ENGINE_ERRORS):
                container.remove(force=True)
                client.volumes.get(volume).remove(force=True)
            raise
        self._bridges[name] = bridge
        return container

    def _running(self, warm: _Warm) -> bool:
        bridge = self._bridges.get(warm.name)
        return bridge is not None and bridge.alive and super()._running(warm)

    def _remove(self, warm: _Warm) -> None:
        bridge = self._bridges.pop(warm.name, None)
        if bridge is not None:
            bridge.close()
        super()._remove(warm)
        with suppress(*ENGINE_ERRORS):
            self._docker().volumes.get(self._volume_name(warm.name)).remove(force=True)

    def _verify(self, warm: _Warm) -> None:
        warm.container.reload()
        problems = hardening_problems(
            warm.container.attrs, RUNS, self._secrets, runs_volume=self._volume_name(warm.name)
        )
        mounts = warm.container.attrs.get("Mounts") or []
        if not any(m.get("Destination") == str(RUNS) for m in mounts):
            problems.append("/runs is not mounted")
        if problems:
            raise KennelError(
                f"refusing to run: kennel {warm.name} is not isolated as promised: "
                + "; ".join(problems)
            )

    # -- a task --------------------------------------------------------------------------
    def _prepare(self, warm: _Warm, layout: Layout) -> bool:
        """Sweep the kennel and empty /runs (False: replace it), then put the run's
        folder there."""
        try:
            result = warm.container.exec_run(
                ["sh", "-c", sweep_script(warm.keep) + "; " + CLEAR_RUNS], user=warm.user
            )
        except docker.errors.DockerException as err:
            log.warning("kennel %s could not be swept (%s); replacing it", warm.name, err)
            return False
        if result.exit_code != 0 or result.output.startswith((b"survivors:", b"left:")):
            log.warning("kennel %s not clean (%r); replacing it", warm.name, result.output[-200:])
            return False
        run = layout.state_host.parent.parent
        with tempfile.TemporaryFile(dir=self._home) as spool:
            _count, self._unsent[run.name] = pack_run(run, parse_user(warm.user), spool)
            while len(self._unsent) > 256:  # runs long over; a question's run sends again
                del self._unsent[next(iter(self._unsent))]
            spool.seek(0)
            if not warm.container.put_archive(str(RUNS), spool):
                raise KennelError("the remote engine did not take the run's folder")
        return True

    async def exec(self, spec: ExecSpec) -> RelayedProcess:
        try:
            warm = await self._ready(spec)
        except ENGINE_ERRORS as err:
            raise KennelError(f"the kennel could not start: {engine_fault(err)}") from err

        async def start() -> RemoteProcess:
            proc = await RemoteProcess.start(
                self._docker(), warm.container, spec, warm.keep, warm.user, warm
            )
            assert isinstance(proc, RemoteProcess)
            proc.fetch_back = lambda: self._pull(warm, spec.layout)
            return proc

        return await start_relayed(spec, start)

    def _pull(self, warm: _Warm, layout: Layout) -> None:
        """The run's tree and state, back from the engine into the run's copy here.
        ``Refused`` when the tree cannot be taken as it is (the copy here is left as it
        was); the state is best effort, like ``Layer.keep_state``."""
        run = layout.state_host.parent.parent
        self._fetch(warm, run, "tree", TREE_LIMITS)
        try:
            self._fetch(warm, run, "state", STATE_LIMITS)
        except STATE_ERRORS as err:
            log.warning("run %s: the CLI's state did not come back: %s", run.name, err)

    def _fetch(self, warm: _Warm, run: Path, top: str, limits: Limits) -> None:
        cap = parse_size(self._settings.runs_size)
        stream, _stat = warm.container.get_archive(f"{RUNS}/{run.name}/{top}")
        with tempfile.TemporaryFile(dir=self._home) as spool:
            size = 0
            for chunk in stream:
                size += len(chunk)
                if size > cap + (64 << 20):  # tar headers on top of the volume's size
                    raise Refused(f"the returned {top} is over {cap // (1 << 20)} MB")
                spool.write(chunk)
            spool.seek(0)
            keep = self._unsent.get(run.name, frozenset()) if top == "tree" else frozenset()
            done = tarsync.sync(spool, top, str(run / top), limits, cap, keep)
        if done.left_out:
            log.info("run %s: left out of the returned %s: %s", run.name, top, done.left_out)


class RemoteProcess(DockerProcess):
    """A task on the remote engine: when it has ended, its tree comes back."""

    fetch_back: Any = None  # () -> None, in a thread: RemoteDockerKennel._pull
    _fetched = False

    def _pump(self, sock: Any, loop: asyncio.AbstractEventLoop) -> None:
        try:
            super()._pump(sock, loop)
        finally:
            # Over TLS the exec's socket is an SSL socket that the response's reader
            # still holds a reference to: closing the socket alone leaves it open.
            response = getattr(sock, "_response", None)
            if response is not None:
                with suppress(Exception):
                    response.close()

    async def wait(self) -> int:
        code = await super().wait()
        await self._fetch_back(strict=True)
        return code

    async def terminate(self, grace: float) -> float:
        took = await super().terminate(grace)
        await self._fetch_back(strict=False)
        return took

    async def _fetch_back(self, strict: bool) -> None:
        if self._fetched or self.fetch_back is None or self._lost is not None:
            return
        self._fetched = True
        try:
            await asyncio.to_thread(self.fetch_back)
        except Refused as err:
            if strict:
                raise KennelError(f"the kennel's result was refused: {err}") from err
            log.warning("the stopped kennel's result was refused: %s", err)
        except ENGINE_ERRORS as err:
            if strict:
                raise self._lose(err) from err
            log.warning("the stopped kennel's result did not come back: %s", err)


def missing_image(image: str, engine: Engine) -> str:
    """The one line for a kennel image the other engine lacks (building it here does
    not put it there)."""
    return (
        f"the kennel image {image} is not on the engine at {engine.describe()}: copy it "
        f"there (docker save {image} | docker -H {engine.url} load) or build it there"
    )


def pack_run(run: Path, owner: tuple[int, int], out: IO[bytes]) -> tuple[int, frozenset[str]]:
    """The run's folder (tree, state, attachments: Fetch's own, never a kennel's) as a
    tar for ``/runs``, every entry the task's uid's, nothing followed: links go as links.
    Returns the number of entries, and the tree's paths not sent: relative links that
    climb out of ``/runs``, which the engine refuses to unpack (a repository may commit
    one; a kennel may have made one), kept here as they are."""
    count = 0
    unsent: set[str] = set()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:

        def add(name: str, kind: bytes, mode: int, size: int = 0, target: str = "") -> Any:
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.size, info.linkname = kind, mode, size, target
            info.uid, info.gid = owner
            info.mtime = 0
            return info

        tar.addfile(add(run.name, tarfile.DIRTYPE, 0o755))
        count += 1
        for top in ("tree", "state", "attachments"):
            if not (run / top).is_dir() or (run / top).is_symlink():
                continue
            tar.addfile(add(f"{run.name}/{top}", tarfile.DIRTYPE, 0o755))
            with Tree(run / top) as tree:
                for found in tree.walk(Limits(depth=4096, entries=10_000_000)):
                    name = f"{run.name}/{top}/{found.path}"
                    mode = 0o755 if found.st.st_mode & 0o100 else 0o644
                    if found.kind == "dir":
                        tar.addfile(add(name, tarfile.DIRTYPE, 0o755))
                    elif found.kind == "link":
                        target = tree.readlink(found.path)
                        if _climbs_out(name, target):
                            if top == "tree":
                                unsent.add(found.path)
                            continue
                        tar.addfile(add(name, tarfile.SYMTYPE, 0o777, 0, target))
                    elif found.kind == "file":
                        fd, leaf = tree._parent(found.path)
                        try:
                            file_fd = os.open(leaf, FILE_FLAGS, dir_fd=fd)
                        finally:
                            os.close(fd)
                        with os.fdopen(file_fd, "rb") as data:
                            size = os.fstat(data.fileno()).st_size
                            tar.addfile(add(name, tarfile.REGTYPE, mode, size), data)
                    else:
                        continue
                    count += 1
    return count, frozenset(unsent)


def _climbs_out(name: str, target: str) -> bool:
    """Whether a relative link at ``/runs/<name>`` points above ``/runs``."""
    if target.startswith("/"):
        return False
    where = posixpath.normpath(posixpath.join(str(RUNS), posixpath.dirname(name), target))
    return where != str(RUNS) and not where.startswith(f"{RUNS}/")


__all__ = ["RemoteDockerKennel", "RemoteProcess", "missing_image", "pack_run"]
