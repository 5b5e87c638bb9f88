"""What the kennel on another engine (kennel/remote.py) needs done with this machine's
folders: the run's copy, the CLI's state and a setup layer, which a kennel wrote (an
earlier turn's tree came back from one). Reading and writing them is the boundary's job
(orchestrator/boundary/remote_files.py, the implementation, handed in by the composition
root): the kennel only moves the bytes between a spool and the engine.

Every method raises ``core.errors.TreeRefused`` when a folder cannot be read or taken
back as it is (the copy here is then left as it was).
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Protocol

# A run's setup layer as Fetch kept it: its folder (``layer/``, ``paths.json``), the
# bytes of its ``done`` mark (which layer it is), and the layer's top entries the run's
# copy still holds as the merge made them (what the engine's volume can supply).
SetupLayer = tuple[Path, bytes, tuple[str, ...]]


class HostFiles(Protocol):
    def pack_run(
        self, run: Path, owner: tuple[int, int], out: IO[bytes], skip: frozenset[str], root: str
    ) -> tuple[int, frozenset[str]]:
        """The run's folder (tree, state, attachments) as a tar into ``out``, to be
        unpacked at ``root`` there, every entry ``owner``'s, nothing followed; ``skip``:
        the tree's entries not sent. Returns the number of entries and the tree's paths
        not sent (links climbing out of ``root``, which the engine refuses)."""
        ...

    def pack_folder(
        self, folder: Path, prefix: str, owner: tuple[int, int], out: IO[bytes], root: str
    ) -> int:
        """``folder``'s entries as a tar into ``out``, names below ``prefix``, packed as
        ``pack_run`` packs them, to be unpacked at ``root``. Returns the entries' count."""
        ...

    def setup_layer(self, run: Path) -> SetupLayer | None:
        """The run's setup layer (its facts are Fetch's), or None."""
        ...

    def sync(
        self, archive: IO[bytes], top: str, dest: Path, cap: int, keep: frozenset[str]
    ) -> tuple[str, ...]:
        """The engine's archive of the run's ``top`` ("tree" or "state"), read from
        ``archive`` (seekable, at most ``cap`` bytes of files) into ``dest``, but the paths
        in ``keep``, left as they are. Returns what was left out, each with why."""
        ...


__all__ = ["HostFiles", "SetupLayer"]
