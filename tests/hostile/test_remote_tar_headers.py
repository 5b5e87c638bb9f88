"""The archive a remote engine hands back (orchestrator/boundary/tarsync.py), forged at the
header level: what a hostile engine (or whatever sits between it and Fetch) can send
that no tree makes. Real tar files on disk, a real folder of Fetch's and a victim folder.

* an extended header (pax, GNU long name) of tens of MB: Python's tarfile reads one
  whole into memory before anything looks at it (the engine's own tar code never writes
  or reads one over 1 MiB); the sync must refuse it without holding it;
* old GNU sparse members, whose maps tarfile also reads into memory block after block;
* a second turn into the same copy: a link the first sync wrote where the second
  archive has a folder (and a kept big file below it) must not lead anywhere.
"""

from __future__ import annotations

import io
import os
import tarfile
import tracemalloc
from pathlib import Path

import pytest

from orchestrator.boundary.tarsync import sync
from orchestrator.boundary.walk import Limits, Refused
from tests.conftest import tree_snapshot

LIMITS = Limits(depth=16, entries=1000, file_bytes=1 << 20)
HUGE = 48 << 20  # an extended header's size; the whole archive stays under the cap
HELD = 16 << 20  # what the sync may allocate while refusing it


@pytest.fixture
def scene(tmp_path: Path) -> tuple[Path, Path]:
    dest = tmp_path / "run" / "tree"
    dest.mkdir(parents=True)
    (dest / "keep.txt").write_text("as it was\n")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "secret.txt").write_text("keep me\n")
    return dest, victim


def _raw(path: Path, kind: bytes, name: str, body: bytes) -> None:
    """A tar: the top folder, then one member of ``kind`` carrying ``body`` as is."""
    with tarfile.open(path, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        top = tarfile.TarInfo("tree")
        top.type, top.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(top)
        info = tarfile.TarInfo(name)
        info.type, info.size = kind, len(body)
        tar.addfile(info, io.BytesIO(body))


def _held_while_syncing(archive: Path, dest: Path) -> tuple[int, BaseException | None]:
    tracemalloc.start()
    try:
        with archive.open("rb") as spool:
            try:
                sync(spool, "tree", str(dest), LIMITS, 8 << 30)
                problem: BaseException | None = None
            except BaseException as err:  # the test says what it was
                problem = err
        return tracemalloc.get_traced_memory()[1], problem
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    ("kind", "body"),
    [
        # A pax record that is one huge value: valid, only far too big.
        (tarfile.XHDTYPE, b"%d path=" % (HUGE) + b"a" * (HUGE - 16) + b"\n"),
        (tarfile.XGLTYPE, b"x" * HUGE),
        (tarfile.GNUTYPE_LONGNAME, b"tree/" + b"n" * HUGE),
    ],
    ids=["pax", "pax-global", "gnu-longname"],
)
def test_a_huge_extended_header_is_refused_without_holding_it(
    scene: tuple[Path, Path], tmp_path: Path, kind: bytes, body: bytes
) -> None:
    dest, victim = scene
    archive = tmp_path / "forged.tar"
    _raw(archive, kind, "tree/x", body)
    del body
    before, before_victim = tree_snapshot(dest), tree_snapshot(victim)
    peak, problem = _held_while_syncing(archive, dest)
    assert isinstance(problem, Refused), problem
    assert peak < HELD, f"the sync held {peak:,} bytes for a forged header"
    assert tree_snapshot(dest) == before
    assert tree_snapshot(victim) == before_victim


def test_an_old_gnu_sparse_member_is_refused(scene: tuple[Path, Path], tmp_path: Path) -> None:
    """Its map goes on in extension blocks for as long as each says "more": 21 entries
    a block, each a tuple in memory. The engine never writes one."""
    dest, victim = scene
    archive = tmp_path / "sparse.tar"
    _raw(archive, tarfile.GNUTYPE_SPARSE, "tree/s", b"")
    data = bytearray(archive.read_bytes())
    at = 512  # the second header: the sparse member
    data[at + 482] = 1  # isextended
    # the header's checksum again
    data[at + 148 : at + 156] = b" " * 8
    data[at + 148 : at + 156] = b"%06o\0 " % sum(data[at : at + 512])
    extension = bytearray(512)
    for i in range(21):
        extension[i * 24 : i * 24 + 12] = b"%011o\0" % (i * 2)
        extension[i * 24 + 12 : i * 24 + 24] = b"%011o\0" % 1
    extension[504] = 1  # more follow
    blocks = bytes(extension) * (HUGE // 512)
    archive.write_bytes(bytes(data[: at + 512]) + blocks + bytes(1024))
    before, before_victim = tree_snapshot(dest), tree_snapshot(victim)
    peak, problem = _held_while_syncing(archive, dest)
    assert isinstance(problem, Refused), problem
    assert peak < HELD, f"the sync held {peak:,} bytes for a forged sparse map"
    assert tree_snapshot(dest) == before
    assert tree_snapshot(victim) == before_victim


def test_a_link_from_the_first_turn_is_no_way_out_in_the_second(
    scene: tuple[Path, Path], tmp_path: Path
) -> None:
    """Turn one leaves ``a`` as a link to the victim (data, written as a link); turn two
    makes ``a`` a folder holding a "kept" file over the limit (mtime 0, the victim's
    file's size) and a small one. The link is replaced by a real folder; nothing is
    written in, or read from, the victim."""
    dest, victim = scene
    first = tmp_path / "first.tar"
    with tarfile.open(first, mode="w") as tar:
        for name, kind, link in (("tree", tarfile.DIRTYPE, ""), ("tree/a", tarfile.SYMTYPE, "")):
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.linkname = kind, 0o755, link or str(victim)
            tar.addfile(info)
    with first.open("rb") as spool:
        sync(spool, "tree", str(dest), LIMITS, 8 << 20)
    assert os.readlink(dest / "a") == str(victim)
    big = b"B" * ((1 << 20) + 1)
    (victim / "big.bin").write_bytes(big)
    before_victim = tree_snapshot(victim)
    second = tmp_path / "second.tar"
    with tarfile.open(second, mode="w") as tar:
        for name, data in (("tree", None), ("tree/a", None), ("tree/a/big.bin", big)):
            info = tarfile.TarInfo(name)
            info.mtime = 0
            if data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        info = tarfile.TarInfo("tree/a/secret.txt")
        info.size = 6
        tar.addfile(info, io.BytesIO(b"pwned\n"))
    with second.open("rb") as spool, pytest.raises(Refused, match="over the limit"):
        sync(spool, "tree", str(dest), LIMITS, 8 << 20)
    assert tree_snapshot(victim) == before_victim
    assert (victim / "secret.txt").read_text() == "keep me\n"


def test_a_chain_of_extended_headers_is_refused(scene: tuple[Path, Path], tmp_path: Path) -> None:
    """Thousands of empty pax headers before one member: tarfile reads each one by
    recursion, and the sync ended in RecursionError (no refusal, a traceback)."""
    dest, victim = scene
    archive = tmp_path / "chain.tar"
    with tarfile.open(archive, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        top = tarfile.TarInfo("tree")
        top.type, top.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(top)
        for _ in range(3000):
            info = tarfile.TarInfo("tree/x")
            info.type, info.size = tarfile.XHDTYPE, 0
            tar.addfile(info)
        last = tarfile.TarInfo("tree/f")
        last.size = 1
        tar.addfile(last, io.BytesIO(b"a"))
    before, before_victim = tree_snapshot(dest), tree_snapshot(victim)
    with archive.open("rb") as spool, pytest.raises(Refused, match="extended headers"):
        sync(spool, "tree", str(dest), LIMITS, 8 << 20)
    assert tree_snapshot(dest) == before
    assert tree_snapshot(victim) == before_victim
