"""Each run's own layer over a repository: the kennel never writes where the host reads.

A repository gets a *base*: its HEAD checked out by host git into a folder of Fetch's
(``FETCH_HOME/kennel/base/<repo>``), kept in step with HEAD path by path, owned by the
kennel's uid so the CLI may change what it sees, and never shown to a kennel writable. A
run (``FETCH_HOME/runs/<repo>/<task>-<random>``) then gets:

* ``tree/``: what the kennel mounts as the repository. Where the host can mount one
  (Fetch is root, the kernel has overlayfs, the kennel sees host mounts: bwrap, or Docker
  through mount propagation), an overlay:
  the base read-only underneath, the run's writes in ``upper/``. Otherwise a copy of the
  base (``cp -a``; never hard links, which would write through).
* ``state/``: the CLI's home, made fresh for every turn from a host-owned template (the
  harness's ``prepare``) plus what the CLI must keep to resume (its transcript), which
  is copied back after each turn, as data, into ``FETCH_HOME/kennel/saved/<run>``.

The owner's working tree is never mounted anywhere. What the run changed is read as data
(``changeset.py``); "no", a failure, /stop or a restart only drop the run's folder.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from secrets import token_hex
from typing import Protocol

from core.errors import GitError
from orchestrator.boundary import changeset
from orchestrator.boundary.gitops import Change, Repo
from orchestrator.boundary.walk import Found, Limits, Refused, Tree, shown

log = logging.getLogger(__name__)
# A run's attachments: the folder's name beside tree/, and how big one file may be.
ATTACHMENTS = "attachments"
ATTACH_BYTES = 32 * 1024 * 1024
OVERLAY_OPTS = "metacopy=off,redirect_dir=off,index=off"
# What is copied back of a CLI's state after a turn (its transcript, session files):
# enough for any CLI's resume, bounded so a hostile state folder costs little.
STATE_LIMITS = Limits(depth=24, entries=20_000, changes=20_000, file_bytes=16 << 20)
STATE_TOTAL = 128 << 20
# Folders of a CLI's state that are caches, not what a resume needs.
STATE_SKIP = frozenset({"node_modules", ".cache", "cache", "Cache", ".npm", "log", "logs"})


@dataclass(frozen=True, slots=True)
class Owner:
    """The uid:gid the kennel's processes run as (None when it is Fetch's own)."""

    uid: int
    gid: int


def _rm(path: Path) -> None:
    """Remove a folder a kennel wrote: GNU rm walks iteratively (any depth), never
    follows a link, and stays on this file system (no mount below is entered)."""
    if not os.path.lexists(path):
        return
    subprocess.run(
        ["rm", "-rf", "--one-file-system", "--", str(path)],
        check=False,
        capture_output=True,
        timeout=600,
    )
    if os.path.lexists(path):
        raise GitError(f"could not remove {path.name}")


def _mkdir(path: Path, owner: Owner | None, mode: int = 0o700) -> None:
    os.mkdir(path, mode)
    os.chmod(path, mode)
    if owner is not None:
        os.chown(path, owner.uid, owner.gid, follow_symlinks=False)


def _umount(path: Path) -> None:
    if os.path.ismount(path):
        done = subprocess.run(["umount", str(path)], capture_output=True, check=False)
        if done.returncode != 0:  # something still holds it: detach now, freed later
            subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


class Layers:
    """Where bases and runs live, and how a run's tree is made (overlay or copy)."""

    def __init__(self, home: Path, owner: Callable[[], Owner | None], overlay: bool) -> None:
        self._home = home
        self._owner = owner  # asked when needed: settings and probes decide it late
        self._overlay = overlay

    # -- places --------------------------------------------------------------------------
    @staticmethod
    def key(repo: Path) -> str:
        digest = hashlib.sha256(str(repo.resolve()).encode()).hexdigest()[:8]
        return f"{repo.name[:40]}-{digest}"

    def runs(self, repo: Path) -> Path:
        """The folder holding ``repo``'s runs (the Docker kennel mounts it at /runs)."""
        path = self._home / "runs" / self.key(repo)
        path.mkdir(parents=True, exist_ok=True, mode=0o711)
        os.chmod(path.parent, 0o711)
        os.chmod(path, 0o711)  # the kennel's uid may pass, not list: no other run's name
        return path

    def meta(self, root: Path) -> Path:
        """Where a run's own facts (its kind, base, setup layer) are kept: in Fetch's
        folder, never in the run's, which a kennel running as Fetch's own uid (Docker
        with Fetch not root) could write."""
        folder = self._home / "kennel" / "meta" / root.parent.name
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        return folder / f"{root.name}.json"

    def setups(self, repo: Path) -> Path:
        """Where ``repo``'s setup layers are kept (``runs/.setup/<repo>``): beside the
        runs, so a setup run's result is renamed there, never copied; outside every
        repository's runs folder, so no kennel is shown it but through an overlay."""
        path = self._home / "runs" / ".setup" / self.key(repo)
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(path.parent, 0o700)
        return path

    def setup_ready(self, repo: Path, digest: str) -> Path | None:
        """The kept setup layer ``digest`` of ``repo`` (None: not made yet)."""
        folder = self.setups(repo) / digest
        return folder if (folder / "done").is_file() else None

    def keep_setup(self, layer: Layer, digest: str, keep: int = 2) -> Path:
        """Make a finished setup run's additions the repository's setup layer
        ``digest`` (``Layer.keep_new``); only the ``keep`` newest stay."""
        root = self.setups(Path(layer.repo))
        fresh = root / f".{digest}-{token_hex(4)}"
        os.mkdir(fresh, 0o700)
        kept = layer.keep_new(fresh)
        (fresh / "done").write_text(json.dumps({"at": time.time(), "paths": len(kept)}))
        final = root / digest
        if os.path.lexists(final):
            _rm(fresh)
        else:
            os.rename(fresh, final)
        done = sorted(
            (p for p in root.iterdir() if not p.name.startswith(".") and (p / "done").is_file()),
            key=lambda p: (p / "done").stat().st_mtime,
            reverse=True,
        )
        stale = [p for p in done[keep:] if p != final]
        stale += [p for p in root.iterdir() if p.name.startswith(".") and p.is_dir()]
        for path in stale:
            _rm(path)
        return final

    def proposed(self, repo: Path) -> bool:
        """Whether a setup script was already proposed for ``repo`` (one stat, no git)."""
        return (self.setups(repo) / "proposed").exists()

    def first_proposal(self, repo: Path) -> bool:
        """True once per repository: a setup script is proposed to its owner only once."""
        mark = self.setups(repo) / "proposed"
        try:
            os.close(os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            return False
        return True

    def _base(self, repo: Path) -> Path:
        path = self._home / "kennel" / "base" / self.key(repo)
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        return path

    # -- the base ------------------------------------------------------------------------
    def base(self, repo: Repo) -> tuple[Path, str]:
        """``repo``'s HEAD checked out in Fetch's base folder: (folder, commit)."""
        head = repo.head()
        root = self._base(repo.path)
        tree, index, at = root / "tree", root / "index", root / "at"
        old = at.read_text().strip() if at.is_file() and tree.is_dir() else ""
        if old == head:
            return tree, head
        owner = self._owner()
        try:
            if not old:
                raise GitError("no base yet")
            changed = repo.export(tree, index, old, head)
        except GitError:
            _rm(tree)
            with suppress(FileNotFoundError):
                index.unlink()
            _mkdir(tree, owner, 0o755)
            changed = repo.export(tree, index, None, head)
            changed = None  # everything: chown the whole folder below
        if owner is not None:
            _own(tree, owner, changed)
        at.write_text(head + "\n")
        return tree, head

    # -- runs ----------------------------------------------------------------------------
    def open(
        self, repo: Repo, task_id: int | str, *, host_mounts: bool, setup: Path | None = None
    ) -> Layer:
        """A new run's layer at ``repo``'s HEAD, over ``setup`` (a kept setup layer,
        ``keep_setup``) when given."""
        owner = self._owner()  # first: a refused uid leaves no folder behind
        base, head = self.base(repo)
        root = self.runs(repo.path) / f"{task_id}-{token_hex(8)}"
        os.mkdir(root, 0o711)
        kind = "overlay" if self._overlay and host_mounts and _overlay_ok(base, root) else "copy"
        since = 0
        if kind == "overlay":
            _mkdir(root / "upper", owner, 0o755)
            _mkdir(root / "work", None)
            os.mkdir(root / "tree", 0o755)
        else:
            subprocess.run(
                ["cp", "-a", "--no-preserve=links", "--", str(base), str(root / "tree")],
                check=True,
                capture_output=True,
                timeout=1800,
            )
            if setup is not None:
                _merge(setup, root / "tree")
            since = time.time_ns()
        meta = {
            "kind": kind,
            "base": head,
            "since": since,
            "repo": str(repo.path),
            "setup": str(setup or ""),
        }
        self.meta(root).write_text(json.dumps(meta))
        layer = Layer(self, root, kind, head, since, base, setup)
        layer.repo = str(repo.path)
        layer.mount()
        return layer

    def find(self, repo: Path, name: str) -> Layer | None:
        """A run's layer by name (a CLI's question waits on it), or None if it is gone."""
        if not name or "/" in name or name.startswith("."):
            return None
        root = self.runs(repo) / name
        try:
            meta = json.loads(self.meta(root).read_text())
        except (OSError, ValueError):
            return None
        base = self._base(repo) / "tree"
        setup = Path(str(meta.get("setup") or "")) if meta.get("setup") else None
        if setup is not None and not (setup / "layer").is_dir():
            return None  # its setup layer was replaced meanwhile: the run cannot go on
        return Layer(
            self, root, str(meta["kind"]), str(meta["base"]), int(meta["since"]), base, setup
        )

    def drop_task(self, repo: Path, task_id: int) -> None:
        """Drop what a killed run of ``task_id`` left (its layer, its kept state)."""
        folder = self.runs(repo)
        for name in os.listdir(folder):
            if name.startswith(f"{task_id}-"):
                Layer(self, folder / name, "?", "", 0, folder).drop()

    def sweep_all(self, keep: frozenset[str] = frozenset()) -> list[str]:
        """At start: every run of every repository but ``keep`` is dropped (a kill left
        it), and every overlay still mounted below the runs folder is unmounted."""
        runs = self._home / "runs"
        for point in _mounts_below(runs):
            if Path(point).parent.name not in keep:
                _umount(Path(point))
        dropped: list[str] = []
        if runs.is_dir():
            for repo in sorted(runs.iterdir()):
                if repo.is_dir() and not repo.is_symlink() and not repo.name.startswith("."):
                    for entry in sorted(os.listdir(repo)):
                        if entry not in keep:
                            Layer(self, repo / entry, "?", "", 0, repo).drop()
                            dropped.append(entry)
        return dropped

    def saved(self, name: str) -> Path:
        return self._home / "kennel" / "saved" / name

    def owner(self) -> Owner | None:
        return self._owner()


class Layer:
    """One run's tree and state; see the module's text."""

    def __init__(
        self,
        layers: Layers,
        root: Path,
        kind: str,
        base_sha: str,
        since: int,
        base: Path,
        setup: Path | None = None,
    ) -> None:
        self._layers = layers
        self.root = root
        self.kind = kind
        self.base_sha = base_sha
        self._since = since
        self._base = base
        self.setup = setup  # the setup layer below (its folder: layer/, paths.json)
        self.repo = ""  # the owner's repository's path, when opened here

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def tree(self) -> Path:
        """The host path the kennel mounts as the repository."""
        return self.root / "tree"

    @property
    def state(self) -> Path:
        return self.root / "state"

    def mount(self) -> None:
        if self.kind != "overlay" or os.path.ismount(self.tree):
            return
        lower = f"{self.setup / 'layer'}:{self._base}" if self.setup else str(self._base)
        opts = (
            f"lowerdir={lower},upperdir={self.root / 'upper'},"
            f"workdir={self.root / 'work'},{OVERLAY_OPTS}"
        )
        done = subprocess.run(
            ["mount", "-t", "overlay", "overlay", "-o", opts, str(self.tree)],
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            raise GitError(
                "could not mount the run's layer: "
                + done.stderr.decode(errors="replace").strip()[-200:]
            )

    def release(self) -> None:
        """Unmount between turns (a question may wait for hours; a restart remounts)."""
        if self.kind == "overlay":
            _umount(self.tree)

    # -- the CLI's state -----------------------------------------------------------------
    def fresh_state(self, harness: str) -> Path:
        """A new state folder for this turn (``state/<harness>``, which the kennel's
        layout names), holding what earlier turns kept; nothing a kennel wrote before
        is left in place."""
        owner = self._layers.owner()
        _rm(self.state)
        _mkdir(self.state, owner, 0o755)
        saved = self._layers.saved(self.name)
        if saved.is_dir():
            # Fetch's own copy (keep_state wrote only folders and regular files).
            for child in saved.iterdir():
                dest = self.state / child.name
                if child.is_dir() and not child.is_symlink():
                    shutil.copytree(child, dest, symlinks=True)
                elif child.is_file() and not child.is_symlink() and child.name != harness:
                    shutil.copy2(child, dest, follow_symlinks=False)
                else:
                    continue
                if owner is not None:
                    _own(dest, owner, None)
        if not (self.state / harness).is_dir():
            _mkdir(self.state / harness, owner, 0o755)
        return self.state / harness

    def prepared(self) -> None:
        """The harness has written its files (as root): hand them to the kennel's uid."""
        owner = self._layers.owner()
        if owner is not None and self.state.is_dir():
            _own(self.state, owner, None)

    def keep_state(self) -> None:
        """Copy the state a turn left back into Fetch's own folder, as data: folders and
        regular files only, bounded, caches skipped. Best effort: a resume that finds
        less starts a new CLI session."""
        if not self.state.is_dir():
            return
        saved = self._layers.saved(self.name)
        fresh = saved.with_name(saved.name + ".new")
        _rm(fresh)
        fresh.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.mkdir(fresh, 0o700)
        total = 0
        skipped: list[str] = []
        try:
            with Tree(self.state) as tree:
                for found in tree.walk(STATE_LIMITS):
                    parts = found.path.split("/")
                    if any(p in STATE_SKIP for p in parts) or any(
                        p in skipped for p in _prefixes(found.path)
                    ):
                        if found.kind == "dir":
                            skipped.append(found.path)
                        continue
                    dest = fresh / found.path
                    if found.kind == "dir":
                        os.mkdir(dest, 0o700)
                    elif found.kind == "file" and total + found.st.st_size <= STATE_TOTAL:
                        data = tree.read(found.path, found.st, STATE_LIMITS.file_bytes)
                        total += len(data)
                        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                        with os.fdopen(fd, "wb") as out:
                            out.write(data)
        except (Refused, OSError) as err:
            log.warning("run %s: CLI state only partly kept: %s", self.name, err)
        _rm(saved)
        os.rename(fresh, saved)

    # -- the result ----------------------------------------------------------------------
    def read(self, repo: Repo, limits: Limits | None = None) -> Change:
        """What the run changed, as a change from its base commit (no kennel process may
        be running). ``Refused`` (a GitError) when it cannot be read within bounds."""
        limits = limits or Limits()
        if self.kind == "overlay":
            with Tree(self.root / "upper") as tree:
                scan = changeset.scan_upper(tree, limits)
                return changeset.to_change(repo, self.base_sha, tree, scan, limits)
        with Tree(self.tree) as tree, Tree(self._base) as before:
            if self.setup is None:
                scan = changeset.scan_copy(tree, before, self._since, limits)
            else:
                with Tree(self.setup / "layer") as setup:
                    scan = changeset.scan_copy(tree, before, self._since, limits, setup)
            return changeset.to_change(repo, self.base_sha, tree, scan, limits)

    def keep_new(self, dest: Path, limits: Limits | None = None) -> list[str]:
        """A setup run's result: every entry it added that the base does not have
        (a virtual environment, ``node_modules``, a build), moved, never read or copied,
        into ``dest/layer`` (made here), and listed in ``dest/paths.json``. What it
        changed of the base's own files and what it deleted are not kept. No kennel
        process may be running."""
        limits = limits or Limits()
        self.release()
        source = self.root / ("upper" if self.kind == "overlay" else "tree")
        layer = dest / "layer"
        os.makedirs(layer, 0o755)
        kept: list[str] = []
        with Tree(source) as tree, Tree(self._base) as before, Tree(layer) as out:

            def inside_base(found: Found) -> bool:  # only the base's folders are entered
                return before.lstat(found.path) is not None

            for found in tree.walk(limits, inside_base):
                parts = found.path.split("/")
                if ".git" in parts or before.lstat(found.path) is not None:
                    continue
                if found.kind not in ("file", "link", "dir"):
                    continue  # a FIFO, a socket, a whiteout over nothing
                if len(parts) > 1:
                    os.makedirs(layer / "/".join(parts[:-1]), 0o755, exist_ok=True)
                tree.move(found.path, out)
                kept.append(found.path)
        (dest / "paths.json").write_text(json.dumps(kept))
        return kept

    @property
    def attachments(self) -> Path:
        """Files the owner sent with the task: beside ``tree``, never in the repository,
        shown read-only to the CLI (``Layout.attachments_seen``)."""
        return self.root / ATTACHMENTS

    def attach(self, files: list[tuple[str, Path]]) -> list[str]:
        """Copy ``files`` (name wanted, host file) into ``attachments``: names made safe
        and unique, regular files only (read with ``O_NOFOLLOW``), each at most
        ``ATTACH_BYTES``, readable by the kennel's uid and owned by Fetch. Returns the
        names given, in order; a file that cannot be read is left out (logged)."""
        folder = self.attachments
        # Made here, before any kennel of this run: never one found in place (a kennel
        # of Fetch's own uid could have left a link there), and written through its own
        # descriptor, nothing followed.
        os.mkdir(folder, 0o755)
        os.chmod(folder, 0o755, follow_symlinks=False)  # the kennel's uid reads
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            return self._attach_into(dir_fd, files)
        finally:
            os.close(dir_fd)

    def _attach_into(self, dir_fd: int, files: list[tuple[str, Path]]) -> list[str]:
        given: list[str] = []
        for wanted, source in files:
            name = _attachment_name(wanted, given)
            try:
                fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError as err:
                log.warning("attachment %s not copied: %s", source, err)
                continue
            with os.fdopen(fd, "rb") as src:
                if not stat.S_ISREG(os.fstat(src.fileno()).st_mode):
                    log.warning("attachment %s is not a file", source)
                    continue
                data = src.read(ATTACH_BYTES + 1)
            if len(data) > ATTACH_BYTES:
                log.warning("attachment %s is over %d bytes", source, ATTACH_BYTES)
                continue
            out = os.open(
                name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dir_fd
            )
            with os.fdopen(out, "wb") as dst:
                dst.write(data)
            given.append(name)
        return given

    def drop(self) -> None:
        """Forget the run: unmount, remove its folder and what it kept. The owner's tree
        was never part of it."""
        _umount(self.root / "tree")
        _rm(self.root)
        _rm(self._layers.saved(self.name))
        with suppress(OSError):
            self._layers.meta(self.root).unlink(missing_ok=True)


def _attachment_name(wanted: str, taken: list[str]) -> str:
    """A plain file name: the sender's, its path and odd characters dropped, unique."""
    base = "".join(c if c.isalnum() or c in "._-" else "_" for c in Path(wanted).name)
    base = base.lstrip(".")[:80] or "attachment"
    name, n = base, 1
    while name in taken:
        n += 1
        stem, dot, ext = base.rpartition(".")
        name = f"{stem}-{n}.{ext}" if dot and stem else f"{base}-{n}"
    return name


def _merge(setup: Path, tree: Path) -> None:
    """Copy a setup layer's entries (``paths.json``) into a run's copy of the base. Each
    goes below folders reached one ``O_NOFOLLOW`` step at a time (a link the base has
    there, committed to the repository, is never written through) and never over
    anything the base has: the commit's own files win."""
    try:
        paths = json.loads((setup / "paths.json").read_text())
    except (OSError, ValueError):
        return
    with Tree(tree) as into:
        for path in paths if isinstance(paths, list) else []:
            if not isinstance(path, str) or into.lstat(path) is not None:
                continue
            *folders, _name = path.split("/")
            fd = os.dup(into.fd)
            try:
                for part in folders:
                    with suppress(FileExistsError):
                        os.mkdir(part, 0o755, dir_fd=fd)
                    nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                    os.close(fd)
                    fd = nxt
                subprocess.run(
                    ["cp", "-a", "--", str(setup / "layer" / path), f"/proc/self/fd/{fd}/"],
                    check=True,
                    capture_output=True,
                    timeout=1800,
                    pass_fds=(fd,),
                )
            except (OSError, subprocess.SubprocessError) as err:
                log.warning("setup layer: %s not copied into the run: %s", shown(path), err)
            finally:
                os.close(fd)


def _mounts_below(folder: Path) -> list[str]:
    """Mount points below ``folder`` (this process's mount table), deepest first."""
    prefix = str(folder.resolve()) + "/"
    points: list[str] = []
    with suppress(OSError), open("/proc/self/mountinfo", encoding="utf-8") as table:
        for line in table:
            fields = line.split()
            if len(fields) > 4:
                point = fields[4].encode().decode("unicode_escape")
                if point.startswith(prefix):
                    points.append(point)
    return sorted(points, key=len, reverse=True)


def _prefixes(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def _own(root: Path, owner: Owner, paths: list[str] | None) -> None:
    """Give the kennel's uid ``paths`` below ``root`` and their folders (None: all).
    Only for folders Fetch made itself, before any kennel saw them."""
    if paths is None:
        os.chown(root, owner.uid, owner.gid, follow_symlinks=False)
        if not root.is_dir() or root.is_symlink():
            return
        with Tree(root) as tree:
            for found in tree.walk(Limits(depth=4096, entries=10_000_000)):
                if (found.st.st_uid, found.st.st_gid) != (owner.uid, owner.gid):
                    os.chown(root / found.path, owner.uid, owner.gid, follow_symlinks=False)
        return
    done: set[str] = set()
    for path in paths:
        for part in [*_prefixes(path), path]:
            if part in done:
                continue
            done.add(part)
            with suppress(FileNotFoundError):
                os.chown(root / part, owner.uid, owner.gid, follow_symlinks=False)


_PROBED: dict[str, bool] = {}


def _overlay_ok(base: Path, root: Path) -> bool:
    """Can this process mount an overlay here (root, a kernel with overlayfs, paths the
    mount options can carry)? Probed once per base."""
    if os.geteuid() != 0 or any(c in str(base) + str(root) for c in ",:\\"):
        return False
    known = _PROBED.get(str(base))
    if known is not None:
        return known
    probe = root / "probe"
    ok = False
    try:
        for part in ("upper", "work", "tree"):
            os.makedirs(probe / part)
        opts = f"lowerdir={base},upperdir={probe / 'upper'},workdir={probe / 'work'}"
        done = subprocess.run(
            [
                "mount",
                "-t",
                "overlay",
                "overlay",
                "-o",
                f"{opts},{OVERLAY_OPTS}",
                str(probe / "tree"),
            ],
            capture_output=True,
            check=False,
        )
        ok = done.returncode == 0
        if not ok:
            log.info(
                "no overlay here (%s); runs use a copy",
                done.stderr.decode(errors="replace").strip(),
            )
    except OSError as err:
        log.info("no overlay here (%s); runs use a copy", err)
    finally:
        _umount(probe / "tree")
        _rm(probe)
    _PROBED[str(base)] = ok
    return ok


def describe_kind(home: Path, host_mounts: bool, travels: bool = False) -> str:
    """``fetch doctor``'s line: how a run's tree is made here, and why."""
    if travels:
        return "copy of a base checkout per run (it goes to the other engine as a tar)"
    if not host_mounts:
        return "copy of a base checkout per run (the backend binds its folders once)"
    if os.geteuid() != 0:
        return "copy of a base checkout per run (an overlay needs Fetch to be root)"
    home.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=home, prefix=".layer-probe-") as scratch:
        lower = Path(scratch) / "lower"
        lower.mkdir()
        if _overlay_ok(lower, Path(scratch)):
            return "overlay over a base checkout per run (kernel overlayfs)"
    return "copy of a base checkout per run (no overlayfs here)"


class _HasOwner(Protocol):
    def owner(self) -> tuple[int, int] | None: ...


def build_layers(home: Path, kennel: _HasOwner) -> Layers:
    """The layers of runs on ``kennel``: its tree and state belong to the kennel's uid."""

    def owner() -> Owner | None:
        ids = kennel.owner()
        return Owner(*ids) if ids is not None else None

    return Layers(home, owner, overlay=True)


__all__ = ["Layer", "Layers", "Owner", "build_layers"]
