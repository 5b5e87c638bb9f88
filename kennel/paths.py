"""Where relay sockets live, and who may connect to them.

Short paths, because a unix socket path is capped at 108 bytes and FETCH_HOME can be deep
(tests, home folders on network mounts). Each run gets a fresh folder with an unguessable
name that only the kennel's uid may enter (``relay_dir``), made when its relay starts and
removed when it stops (kennel/relayed.py: ``open_room``, ``release``), so a layout whose
run never starts a relay leaves nothing behind; a backend whose kennel mounts the folder
once for many runs (a warm Docker container) names the uids instead (``admit``). The relay
checks every connection's uid against them: a bind mount shows the socket without its
folder, so the folder's mode alone does not keep others out.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from core.errors import KennelError
from kennel.owner import parse_user

# Folders handed out but not yet released (a layout whose run never started keeps its
# entry): bounded, so a long-lived Fetch does not grow with every run.
_MAX_ROOMS = 1024


@dataclass(frozen=True, slots=True)
class _Room:
    uids: frozenset[int]  # besides Fetch's own
    per_run: bool  # from relay_dir: made when its relay starts, removed when it stops
    owner: tuple[int, int] | None = None  # uid, gid the per-run folder is handed to


_rooms: dict[Path, _Room] = {}


def run_dir(home: Path, base: Path | None = None) -> Path:
    """``base`` (FETCH_RUN_DIR, e.g. a volume shared with the Docker host) or the tmp dir."""
    digest = hashlib.sha256(str(home).encode()).hexdigest()[:10]
    path = (base or Path(tempfile.gettempdir())) / f"fetch-{digest}"
    path.mkdir(mode=0o711, exist_ok=True)
    # The name is predictable and /tmp is shared: a folder someone else made (or a link
    # to one) would let them replace the sockets inside it.
    st = path.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise KennelError(f"{path} is not a folder of Fetch's own: remove it and retry")
    os.chmod(path, 0o711)  # others may enter (the kennel's uid) but not list
    return path


def relay_dir(home: Path, owner: tuple[int, int] | None = None) -> Path:
    """A fresh folder for one run's relay socket, under ``run_dir(home)``, with an
    unguessable name; made by ``open_room`` with mode 0700, and the kennel's when it runs
    as ``owner`` (``uid, gid``; ``Kennel.owner()``), so that uid alone (and root) may
    enter. ``owner`` None: the kennel runs as Fetch's own uid, the folder stays Fetch's."""
    path = run_dir(home) / f"relay-{secrets.token_hex(16)}"
    if owner is None or owner[0] == os.geteuid():
        _remember(path, _Room(frozenset(), per_run=True))
    else:
        _remember(path, _Room(frozenset({owner[0]}), per_run=True, owner=owner))
    return path


def open_room(socket: Path) -> None:
    """Make the per-run folder of ``socket`` (its relay is starting); others are left as
    they are."""
    room = _rooms.get(socket.parent)
    if room is None or not room.per_run:
        return
    socket.parent.mkdir(mode=0o700)  # never exist_ok: a folder already there is not fresh
    if room.owner is not None:
        os.chown(socket.parent, *room.owner)  # only root gets here: see relay_dir


def admit(folder: Path, *users: str) -> Path:
    """Let ``users`` (``"uid[:gid]"``) connect to the relay socket in ``folder`` too (a
    folder the backend keeps for many runs); ``folder`` is returned."""
    _remember(folder, _Room(frozenset(parse_user(u)[0] for u in users), per_run=False))
    return folder


def admitted(socket: Path) -> frozenset[int]:
    """The uids besides Fetch's own that may connect to ``socket``."""
    room = _rooms.get(socket.parent)
    return room.uids if room is not None else frozenset()


def release(socket: Path) -> None:
    """The run is over: a per-run folder is removed with whatever is left in it
    (idempotent); a kept folder stays, and so do its uids."""
    room = _rooms.get(socket.parent)
    if room is None or not room.per_run:
        return
    del _rooms[socket.parent]
    shutil.rmtree(socket.parent, ignore_errors=True)  # never follows a planted link


def _remember(folder: Path, room: _Room) -> None:
    _rooms.pop(folder, None)
    while len(_rooms) >= _MAX_ROOMS:
        del _rooms[next(iter(_rooms))]  # the oldest: its run never started a relay
    _rooms[folder] = room


__all__ = ["admit", "admitted", "open_room", "relay_dir", "release", "run_dir"]
