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
  read into the run's copy on this machine, from which the change is read as for any
  copy (changeset.py). The owner's workspace never leaves this machine;
* every read and write of this machine's folders (the tar's making, the archive's
  reading, the setup layer's facts) is the boundary's: ``HostFiles``
  (kennel/remote_files.py), handed in by the composition root
  (orchestrator/boundary/remote_files.py); here only bytes move, spool to engine;
* a run over a repository's setup layer (orchestrator/task/setup.py) does not carry it
  in that tar: the layer, as Fetch kept it, goes once into a volume of the engine's
  named by it (``fetch-setup-…``, labelled like the kennel's), mounted read-only at
  ``/setup`` in the containers made while it is the repository's, and is copied
  there under the run's tree (``cp -a``, links as links, never over the commit's own
  files; an entry an earlier turn of the run changed travels in the tar). After the
  task, what of it the kennel left as it was is removed there before the tree comes
  back, and kept here as it was. A container with another layer mounted is replaced
  when no task of it runs, else the layer travels in the tar. A filled volume gets a
  mark (an empty volume, ``fetch-filled-…``, made after the engine took the whole
  layer): the repository's newest marked layer outlives Fetch's restarts, so it is not
  sent again; one without its mark (a kill while it filled) is removed and filled anew;
* the relay is reached through the container's own stdio (kennel/remote_bridge.py):
  its main process forwards the CLIs' loopback port over frames on an attach stream
  Fetch holds. No port is opened on either side.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import posixpath
import shlex
import tempfile
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker.errors
from docker.types import LogConfig, Mount

from core.errors import KennelError, TreeRefused
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
from kennel.remote_files import HostFiles
from kennel.settings import DockerKennelSettings

log = logging.getLogger(__name__)
REACH_ERRORS: tuple[type[BaseException], ...] = (*ENGINE_ERRORS, OSError)
STATE_ERRORS: tuple[type[BaseException], ...] = (TreeRefused, *ENGINE_ERRORS)
# KennelError: TreeRefused too (a layer that cannot be packed).
PLACE_ERRORS: tuple[type[BaseException], ...] = (*ENGINE_ERRORS, KennelError, OSError)
# Everything /runs held before a task is removed as the task's uid (it owns all of it),
# and /runs checked empty: a file left there would reach the next task.
CLEAR_RUNS = (
    "chmod -R u+rwx /runs 2>/dev/null; "
    "rm -rf /runs/* /runs/.[!.]* /runs/..?* 2>/dev/null; "
    '[ -z "$(ls -A /runs)" ] || { echo "left: /runs"; exit 4; }'
)
SETUP_AT = "/setup"  # a repository's setup layer, read-only, in a volume of that engine


@dataclass(frozen=True, slots=True)
class SetupRef:
    """A run's setup layer as the engine keeps it: the volume's name, Fetch's folder of
    the layer (``layer/``, ``paths.json``), and the layer's entries the run's tree gets
    from the volume (those the base does not have, as ``Layers.open`` merged them)."""

    volume: str
    folder: Path
    paths: tuple[str, ...]


def _mark_name(volume: str) -> str:
    """The empty volume that says ``volume`` (``fetch-setup-…``) holds its whole layer."""
    return "fetch-filled-" + volume.removeprefix("fetch-setup-")


def _kept_layers(found: list[Any]) -> set[str]:
    """Of an install's volumes there, the layers a new start keeps (with their marks):
    each repository's newest marked one. Older ones, a kill's half-filled layer, a mark
    without its layer and every runs volume go."""
    names = {str(v.name) for v in found}
    newest: dict[str, tuple[str, str]] = {}  # repository -> (made, layer)
    for volume in found:
        labels = volume.attrs.get("Labels") or {}
        layer, repo = labels.get(f"{LABEL}.filled"), labels.get(f"{LABEL}.setup")
        if not layer or not repo or layer not in names or volume.name != _mark_name(layer):
            continue
        made = str(volume.attrs.get("CreatedAt") or "")
        if repo not in newest or made > newest[repo][0]:
            newest[repo] = (made, layer)
    return {layer for _made, layer in newest.values()}


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
        *,
        files: HostFiles,
    ) -> None:
        super().__init__(home, settings, image, secrets, client)
        self.engine = engine
        self._files = files  # this machine's folders: the boundary reads and writes them
        self._bridges: dict[str, Bridge] = {}  # by container name
        # By run: the tree's paths never sent (``HostFiles.pack_run``), so never removed
        # here.
        self._unsent: dict[str, frozenset[str]] = {}
        self._shared = False  # nothing of this machine is mounted there
        # Setup layers in volumes there (``SetupRef``): the ones filled by this process,
        # the one each repository's runs want (by runs folder), the one each container
        # has mounted (by name), a run's own (by run), and the tasks running in each
        # container (a container is replaced for another layer only when idle).
        self._filled: set[str] = set()
        self._wanted: dict[Path, str] = {}
        self._mounted: dict[str, str] = {}
        self._setup_of: dict[str, SetupRef] = {}
        self._busy: dict[str, int] = {}
        # The last run's tar and its returned tree's: figures for the tests and the bench.
        self.sent_bytes = self.returned_bytes = 0

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
        if first:  # the volumes a stopped Fetch left, but each repository's filled layer
            found = self._docker().volumes.list(
                filters={"label": f"{LABEL}.install={self._install}"}
            )
            layers = _kept_layers(found)
            kept = layers | {_mark_name(v) for v in layers}
            for volume in found:
                if volume.name in kept:
                    continue
                with suppress(*ENGINE_ERRORS):
                    volume.remove(force=True)
            self._filled.update(layers)

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
        mounts = [Mount(str(RUNS), volume, type="volume")]
        setup = self._wanted.get(repo)
        if setup is not None:
            mounts.append(Mount(SETUP_AT, setup, type="volume", read_only=True))
        options.update(
            command=["node", "-e", MUX_SCRIPT, "127.0.0.1", str(RELAY_PORT)],
            mounts=mounts,
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
        if setup is not None:
            self._mounted[name] = setup
        return container

    def _running(self, warm: _Warm) -> bool:
        bridge = self._bridges.get(warm.name)
        if bridge is None or not bridge.alive or not super()._running(warm):
            return False
        wanted = self._wanted.get(warm.repo)
        if wanted and self._mounted.get(warm.name) != wanted and not self._busy.get(warm.name):
            log.info("replacing kennel %s: its repository's setup layer changed", warm.name)
            return False
        return True

    def _remove(self, warm: _Warm) -> None:
        self._mounted.pop(warm.name, None)
        self._busy.pop(warm.name, None)
        bridge = self._bridges.pop(warm.name, None)
        if bridge is not None:
            bridge.close()
        super()._remove(warm)
        with suppress(*ENGINE_ERRORS):
            self._docker().volumes.get(self._volume_name(warm.name)).remove(force=True)

    def _verify(self, warm: _Warm) -> None:
        warm.container.reload()
        attrs = dict(warm.container.attrs)
        mounts = list(attrs.get("Mounts") or [])
        # The setup layer's volume, read-only, is the one mount besides /runs it may have.
        setup = self._mounted.get(warm.name)
        problems: list[str] = []
        for mount in [m for m in mounts if m.get("Destination") == SETUP_AT]:
            mounts.remove(mount)
            if (mount.get("Type"), mount.get("Name")) != ("volume", setup) or mount.get("RW"):
                problems.append(f"{SETUP_AT} is {mount.get('Name')!r}, not {setup!r} read-only")
        attrs["Mounts"] = mounts
        problems += hardening_problems(
            attrs, RUNS, self._secrets, runs_volume=self._volume_name(warm.name)
        )
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
        ref = self._setup_of.get(run.name)
        if ref is not None and self._mounted.get(warm.name) != ref.volume:
            ref = None  # another layer is mounted (a task of it runs): the tar carries it
            self._setup_of.pop(run.name, None)
        skip = frozenset(ref.paths) if ref is not None else frozenset()
        with tempfile.TemporaryFile(dir=self._home) as spool:
            _count, self._unsent[run.name] = self._files.pack_run(
                run, parse_user(warm.user), spool, skip, str(RUNS)
            )
            while len(self._unsent) > 256:  # runs long over; a question's run sends again
                del self._unsent[next(iter(self._unsent))]
            self.sent_bytes = spool.tell()
            spool.seek(0)
            if not warm.container.put_archive(str(RUNS), spool):
                raise KennelError("the remote engine did not take the run's folder")
        if ref is not None and ref.paths:
            done = warm.container.exec_run(
                ["sh", "-c", _copy_script(f"{RUNS}/{run.name}/tree", ref.paths)], user=warm.user
            )
            if done.exit_code != 0 or done.output:  # as Layers.open's merge: logged
                log.warning("run %s: setup layer: %r", run.name, done.output[-300:])
        return True

    # -- setup layers there --------------------------------------------------------------
    def _setup_ref(self, run: Path) -> SetupRef | None:
        """The run's setup layer (its facts are Fetch's: ``Layers.meta``), or None."""
        found = self._files.setup_layer(run)
        if found is None:
            return None
        folder, done, paths = found
        # The task's uid too: the layer's files there are its (a layer filled for
        # another is filled anew, not reused).
        key = f"{self._install}\0{folder}\0{done.hex()}\0{self._task_user(run.parent)}"
        name = f"fetch-setup-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
        return SetupRef(name, folder, paths)

    def _fill(self, ref: SetupRef, repo: Path, user: str) -> None:
        """The layer into its volume there, once: a container that never starts (no
        network, nothing of this machine) holds the volume while the engine unpacks the
        layer's tar into it. Older layers of the repository's are removed (unless a
        container still has one mounted: then the next start's sweep does)."""
        self._sweep_leftovers()  # keeps the filled layers an earlier Fetch left
        client = self._docker()
        if ref.volume in self._filled:
            return
        # Not filled, or half filled by a kill: its mark goes first, so a kill between
        # the two removals never leaves a mark on a partial layer.
        for name in (_mark_name(ref.volume), ref.volume):
            with suppress(docker.errors.NotFound):
                client.volumes.get(name).remove(force=True)
        labels = {LABEL: "1", f"{LABEL}.install": self._install, f"{LABEL}.setup": repo.name}
        for old in client.volumes.list(filters={"label": f"{LABEL}.setup={repo.name}"}):
            if (old.attrs.get("Labels") or {}).get(f"{LABEL}.install") == self._install:
                with suppress(*ENGINE_ERRORS):
                    old.remove()
                    self._filled.discard(str(old.name))
        client.volumes.create(ref.volume, driver="local", labels=labels)
        try:
            holder = client.containers.create(
                self._image,
                ["true"],
                network_mode="none",
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                read_only=True,
                user=user,
                mounts=[Mount(SETUP_AT, ref.volume, type="volume")],
                labels={LABEL: "1", f"{LABEL}.install": self._install},
                log_config=LogConfig(type="none"),
            )
            try:
                with tempfile.TemporaryFile(dir=self._home) as spool:
                    self._files.pack_folder(
                        ref.folder / "layer", "", parse_user(user), spool, SETUP_AT
                    )
                    spool.seek(0)
                    if not holder.put_archive(SETUP_AT, spool):
                        raise KennelError("the remote engine did not take the setup layer")
            finally:
                holder.remove(force=True)
        except BaseException:
            with suppress(*ENGINE_ERRORS):
                client.volumes.get(ref.volume).remove(force=True)
            raise
        # The mark, once the engine has the whole layer: what a later start keeps.
        client.volumes.create(
            _mark_name(ref.volume), driver="local", labels={**labels, f"{LABEL}.filled": ref.volume}
        )
        self._filled.add(ref.volume)

    async def exec(self, spec: ExecSpec) -> RelayedProcess:
        await self._place_setup(spec)
        try:
            warm = await self._ready(spec)
        except ENGINE_ERRORS as err:
            raise KennelError(f"the kennel could not start: {engine_fault(err)}") from err
        self._busy[warm.name] = self._busy.get(warm.name, 0) + 1
        ended = False

        def end() -> None:
            nonlocal ended
            if not ended:
                ended = True
                self._busy[warm.name] = max(0, self._busy.get(warm.name, 0) - 1)

        async def start() -> RemoteProcess:
            proc = await RemoteProcess.start(
                self._docker(), warm.container, spec, warm.keep, warm.user, warm
            )
            assert isinstance(proc, RemoteProcess)
            proc.fetch_back = lambda: self._pull(warm, spec.layout)
            proc.on_end = end
            return proc

        try:
            return await start_relayed(spec, start)
        except BaseException:
            end()
            raise

    async def _place_setup(self, spec: ExecSpec) -> None:
        """The run's setup layer in its volume there (once), wanted by its repository's
        containers. Best effort: without it, the layer travels in the run's tar."""
        run = spec.layout.state_host.parent.parent
        self._setup_of.pop(run.name, None)
        ref = await asyncio.to_thread(self._setup_ref, run)
        if ref is None:
            return
        runs = self._runs(spec)
        try:
            async with self._lock:
                await asyncio.to_thread(self._fill, ref, runs, self._task_user(runs))
        except PLACE_ERRORS as err:
            log.warning("run %s: the setup layer goes in the tar: %s", run.name, err)
            return
        self._wanted[runs] = ref.volume
        self._setup_of[run.name] = ref
        while len(self._setup_of) > 256:
            del self._setup_of[next(iter(self._setup_of))]

    def _pull(self, warm: _Warm, layout: Layout) -> None:
        """The run's tree and state, back from the engine into the run's copy here.
        ``TreeRefused`` when the tree cannot be taken as it is (the copy here is left as it
        was); the state is best effort, like ``Layer.keep_state``."""
        run = layout.state_host.parent.parent
        kept = self._drop_setup_there(warm, run)
        self._fetch(warm, run, "tree", kept)
        try:
            self._fetch(warm, run, "state")
        except STATE_ERRORS as err:
            log.warning("run %s: the CLI's state did not come back: %s", run.name, err)

    def _drop_setup_there(self, warm: _Warm, run: Path) -> frozenset[str]:
        """The setup layer's entries the kennel left as the volume has them, removed
        there so they do not come back; the copy here keeps them as they were. (A kennel
        that fooled the comparison loses only its own change to them.)"""
        ref = self._setup_of.get(run.name)
        if ref is None or not ref.paths:
            return frozenset()
        tree = f"{RUNS}/{run.name}/tree"
        lines = [
            f"diff -r --no-dereference -- {shlex.quote(f'{SETUP_AT}/{p}')} "
            f"{shlex.quote(f'{tree}/{p}')} >/dev/null 2>&1 && "
            f"rm -rf -- {shlex.quote(f'{tree}/{p}')} && echo {n}"
            for n, p in enumerate(ref.paths)
        ]
        try:
            done = warm.container.exec_run(["sh", "-c", "\n".join(lines)], user=warm.user)
        except ENGINE_ERRORS as err:
            log.warning("run %s: the setup layer comes back whole: %s", run.name, err)
            return frozenset()
        gone = {int(x) for x in done.output.split() if x.isdigit() and int(x) < len(ref.paths)}
        # A kept folder is kept whole (tarsync does not enter it).
        return frozenset(ref.paths[n] for n in gone)

    def _fetch(self, warm: _Warm, run: Path, top: str, kept: frozenset[str] = frozenset()) -> None:
        cap = parse_size(self._settings.runs_size)
        response = _archive(warm.container, f"{RUNS}/{run.name}/{top}")
        with tempfile.TemporaryFile(dir=self._home) as spool:
            size = 0
            try:
                for chunk in response.iter_content(1 << 20, False):
                    size += len(chunk)
                    if size > cap + (64 << 20):  # tar headers on top of the volume's size
                        raise TreeRefused(f"the returned {top} is over {cap // (1 << 20)} MB")
                    spool.write(chunk)
            finally:
                # Let go of the engine's stream, read to its end or not: one left open
                # keeps the engine writing it, and removing the container then hangs.
                response.close()
            spool.seek(0)
            if top == "tree":
                self.returned_bytes = size
            keep = self._unsent.get(run.name, frozenset()) | kept if top == "tree" else kept
            left_out = self._files.sync(spool, top, run / top, cap, keep)
        if left_out:
            log.info("run %s: left out of the returned %s: %s", run.name, top, left_out)


class RemoteProcess(DockerProcess):
    """A task on the remote engine: when it has ended, its tree comes back."""

    fetch_back: Any = None  # () -> None, in a thread: RemoteDockerKennel._pull
    on_end: Callable[[], None] | None = None  # the task no longer runs in its container
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
        await self._fetch_back()
        return code

    async def terminate(self, grace: float) -> float:
        took = await super().terminate(grace)
        # Stopped before its end (/stop, a time limit, a shutdown), its tree is never
        # read: a stopped task is dropped, a stopped setup or test run given up. So it
        # is not fetched back, and /stop does not wait for an archive as big as the
        # kennel chose to make it. (Ended by itself, ``wait`` fetched it already.)
        self._fetched = True
        if self.on_end is not None:
            self.on_end()
        return took

    async def _fetch_back(self) -> None:
        if self._fetched or self.fetch_back is None or self._lost is not None:
            if self.on_end is not None:
                self.on_end()
            return
        self._fetched = True
        try:
            await asyncio.to_thread(self.fetch_back)
        except TreeRefused as err:
            raise KennelError(f"the kennel's result was refused: {err}") from err
        except ENGINE_ERRORS as err:
            raise self._lose(err) from err
        finally:
            if self.on_end is not None:
                self.on_end()


def _archive(container: Any, path: str) -> Any:
    """The engine's archive of ``path`` in ``container``: the streamed HTTP response
    itself (the SDK's ``get_archive`` hides it in a generator, so it cannot be closed, and
    takes the socket's timeout off: an engine that stops sending would hold the fetch,
    and a /stop waiting on it, forever; here each read waits the client's timeout)."""
    api = container.client.api
    response = api._get(
        api._url("/containers/{0}/archive", container.id),
        params={"path": path},
        stream=True,
        headers={"Accept-Encoding": "identity"},
    )
    try:
        api._raise_for_status(response)
    except BaseException:
        response.close()
        raise
    return response


def missing_image(image: str, engine: Engine) -> str:
    """The one line for a kennel image the other engine lacks (building it here does
    not put it there)."""
    return (
        f"the kennel image {image} is not on the engine at {engine.describe()}: copy it "
        f"there (docker save {image} | docker -H {engine.url} load) or build it there"
    )


def _copy_script(tree: str, paths: tuple[str, ...]) -> str:
    """Copy the setup layer's ``paths`` from its volume under the run's ``tree`` there,
    as ``Layers.open`` merges them here: links as links, never over what is there."""
    lines = []
    for n, path in enumerate(paths):
        parent = posixpath.dirname(path)
        into = shlex.quote(f"{tree}/{parent}" if parent else tree)
        dst, src = shlex.quote(f"{tree}/{path}"), shlex.quote(f"{SETUP_AT}/{path}")
        # Not there: a link the volume could not take (it climbs out of it); the run's
        # copy here keeps it, the kennel does without, like any link out.
        lines.append(
            f"if [ ! -e {dst} ] && [ ! -L {dst} ] && {{ [ -e {src} ] || [ -L {src} ]; }}; "
            f"then mkdir -p -- {into} && cp -a -- {src} {into}/ || echo 'not copied: {n}'; fi"
        )
    return "\n".join(lines)


__all__ = [
    "RemoteDockerKennel",
    "RemoteProcess",
    "SetupRef",
    "missing_image",
]
