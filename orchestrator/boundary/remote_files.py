"""A remote kennel's run folders on this machine (kennel/remote_files.py ``HostFiles``).

A kennel on another Docker engine (kennel/remote.py) gets the run's folder as a tar
built here and gives its tree back as the engine's archive of it; both ends are this
package's: the tar is built from the run's copy as ``walk`` reads any folder a kennel
wrote (nothing followed, every entry Fetch's own mode and the task's uid, time 0, which
``tarsync`` takes as "the file that was sent"), the archive is read by ``tarsync``, and
a run's setup layer is found from ``Layers``' facts (``kennel/meta``, the base). The
kennel only moves bytes between a spool and the engine; a ``walk.Refused`` here reaches
it as ``TreeRefused``, with the same words.
"""

from __future__ import annotations

import json
import os
import posixpath
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from core.errors import TreeRefused
from orchestrator.boundary import tarsync
from orchestrator.boundary.walk import FILE_FLAGS, Found, Limits, Refused, Tree

# What may come back: the tree as any copy is read (walk.Limits), the whole archive
# bounded by the volume it came from.
TREE_LIMITS = Limits()
STATE_LIMITS = Limits(depth=64, entries=100_000, file_bytes=64 << 20)
LIMITS = {"tree": TREE_LIMITS, "state": STATE_LIMITS}


class RemoteFiles:
    """The run folders below ``home`` (Fetch's home: ``Layers``' layout) as a remote
    kennel needs them."""

    def __init__(self, home: Path) -> None:
        self._home = home

    def pack_run(
        self, run: Path, owner: tuple[int, int], out: IO[bytes], skip: frozenset[str], root: str
    ) -> tuple[int, frozenset[str]]:
        with _as_kennel_error():
            return pack_run(run, owner, out, skip, root)

    def pack_folder(
        self, folder: Path, prefix: str, owner: tuple[int, int], out: IO[bytes], root: str
    ) -> int:
        with _as_kennel_error():
            return pack_tree(folder, prefix, owner, out, root)

    def setup_layer(self, run: Path) -> tuple[Path, bytes, tuple[str, ...]] | None:
        with _as_kennel_error():
            return setup_layer(self._home, run)

    def sync(
        self, archive: IO[bytes], top: str, dest: Path, cap: int, keep: frozenset[str]
    ) -> tuple[str, ...]:
        with _as_kennel_error():
            return tarsync.sync(archive, top, str(dest), LIMITS[top], cap, keep).left_out


@contextmanager
def _as_kennel_error() -> Iterator[None]:
    """``Refused`` as the kennel knows it (it imports nothing of the application's)."""
    try:
        yield
    except Refused as err:
        raise TreeRefused(str(err)) from err


def setup_layer(home: Path, run: Path) -> tuple[Path, bytes, tuple[str, ...]] | None:
    """The run's setup layer (its facts are Fetch's: ``Layers.meta``), or None: its
    folder, its ``done`` mark's bytes, and its entries the run's tree can get from the
    engine's volume (those the base does not have, as ``Layers.open`` merged them)."""
    meta = home / "kennel" / "meta" / run.parent.name / f"{run.name}.json"
    try:
        folder = Path(str(json.loads(meta.read_text()).get("setup") or ""))
        if folder == Path():
            return None
        listed = json.loads((folder / "paths.json").read_text())
        done = (folder / "done").read_bytes()
    except (OSError, ValueError, AttributeError):
        return None
    base = home / "kennel" / "base" / run.parent.name / "tree"
    paths: list[str] = []
    # As Layers.open merged it: an entry the base has is the commit's, sent in the tar.
    with Tree(base) as before, Tree(run / "tree") as tree, Tree(folder / "layer") as layer:
        for path in listed if isinstance(listed, list) else []:
            if not isinstance(path, str) or not path or path.startswith("/"):
                continue
            if ".." in path.split("/") or before.lstat(path) is not None:
                continue
            # Only an entry still as the merge made it (cp -a keeps the times): one
            # an earlier turn changed came back rewritten, and travels in the tar.
            if _entries(tree, path) == _entries(layer, path) != {}:
                paths.append(path)
    return folder, done, tuple(paths)


def pack_run(
    run: Path,
    owner: tuple[int, int],
    out: IO[bytes],
    skip: frozenset[str],
    root: str,
) -> tuple[int, frozenset[str]]:
    """The run's folder (tree, state, attachments: Fetch's own, never a kennel's) as a
    tar for ``root`` there, every entry the task's uid's, nothing followed: links go as
    links. ``skip``: the tree's entries not sent (a setup layer's, put there from its
    volume). Returns the number of entries, and the tree's paths not sent: relative links
    that climb out of ``root``, which the engine refuses to unpack (a repository may
    commit one; a kennel may have made one), kept here as they are."""
    unsent: set[str] = set()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(_info(run.name, tarfile.DIRTYPE, 0o755, owner))
        count = 1
        for top in ("tree", "state", "attachments"):
            if not (run / top).is_dir() or (run / top).is_symlink():
                continue
            tar.addfile(_info(f"{run.name}/{top}", tarfile.DIRTYPE, 0o755, owner))
            climbs = unsent if top == "tree" else set()
            count += _add_tree(
                tar,
                run / top,
                f"{run.name}/{top}/",
                owner,
                skip if top == "tree" else None,
                climbs,
                root,
            )
    return count, frozenset(unsent)


def pack_tree(folder: Path, prefix: str, owner: tuple[int, int], out: IO[bytes], root: str) -> int:
    """``folder``'s entries as a tar, names below ``prefix``, as ``pack_run`` packs them
    (a relative link climbing out of ``root`` is left out: the engine refuses it)."""
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        return _add_tree(tar, folder, prefix, owner, None, set(), root=root)


def _info(name: str, kind: bytes, mode: int, owner: tuple[int, int], size: int = 0) -> Any:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size = kind, mode, size
    info.uid, info.gid = owner
    info.mtime = 0
    return info


def _add_tree(
    tar: tarfile.TarFile,
    folder: Path,
    prefix: str,
    owner: tuple[int, int],
    skip: frozenset[str] | None,
    climbs: set[str],
    root: str,
) -> int:
    """Every entry below ``folder`` into ``tar`` (but ``skip`` and what is below them),
    nothing followed; the relative links climbing out of ``root`` (where the engine
    unpacks the tar) are added to ``climbs`` instead."""
    count = 0
    left = skip or frozenset()
    with Tree(folder) as tree:
        for found in tree.walk(
            Limits(depth=4096, entries=10_000_000), lambda f: f.path not in left
        ):
            if found.path in left:
                continue
            name = f"{prefix}{found.path}"
            mode = 0o755 if found.st.st_mode & 0o100 else 0o644
            if found.kind == "dir":
                tar.addfile(_info(name, tarfile.DIRTYPE, 0o755, owner))
            elif found.kind == "link":
                target = tree.readlink(found.path)
                if _climbs_out(name, target, root):
                    climbs.add(found.path)
                    continue
                link = _info(name, tarfile.SYMTYPE, 0o777, owner)
                link.linkname = target
                tar.addfile(link)
            elif found.kind == "file":
                fd, leaf = tree._parent(found.path)
                try:
                    file_fd = os.open(leaf, FILE_FLAGS, dir_fd=fd)
                finally:
                    os.close(fd)
                with os.fdopen(file_fd, "rb") as data:
                    size = os.fstat(data.fileno()).st_size
                    tar.addfile(_info(name, tarfile.REGTYPE, mode, owner, size), data)
            else:
                continue
            count += 1
    return count


def _entries(tree: Tree, path: str) -> dict[str, tuple[object, ...]]:
    """``path`` and everything below it in ``tree``: kind, and a file's size and time
    or a link's target (folders by what they hold)."""
    out: dict[str, tuple[object, ...]] = {}
    below = path + "/"

    def enter(found: Found) -> bool:
        return (
            path.startswith(found.path + "/") or found.path == path or found.path.startswith(below)
        )

    for found in tree.walk(Limits(depth=4096, entries=10_000_000), enter):
        if found.path != path and not found.path.startswith(below):
            continue
        if found.kind == "file":
            out[found.path] = ("file", found.st.st_size, found.st.st_mtime_ns)
        elif found.kind == "link":
            out[found.path] = ("link", tree.readlink(found.path))
        else:
            out[found.path] = (found.kind,)
    return out


def _climbs_out(name: str, target: str, root: str) -> bool:
    """Whether a relative link at ``<root>/<name>`` points above ``root``."""
    if target.startswith("/"):
        return False
    where = posixpath.normpath(posixpath.join(root, posixpath.dirname(name), target))
    return where != root and not where.startswith(f"{root}/")


__all__ = ["STATE_LIMITS", "TREE_LIMITS", "RemoteFiles", "pack_run", "pack_tree", "setup_layer"]
