"""The tar a remote engine hands back, read by orchestrator/boundary/tarsync.py: forged
archives (what a hostile kennel, or a hostile engine, could send) into a real folder of
Fetch's, beside a victim folder that must stay as it was. Real tar files, real folders;
no engine needed (the engine's own archives are in test_remote_engine.py)."""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.boundary.tarsync import sync
from orchestrator.boundary.walk import Limits, Refused
from tests.conftest import tree_snapshot

LIMITS = Limits(depth=16, entries=1000, file_bytes=1 << 20)
Add = Callable[..., None]


def _tar(build: Callable[[Add], None]) -> io.BytesIO:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:

        def add(
            name: str,
            kind: bytes = tarfile.REGTYPE,
            data: bytes = b"",
            link: str = "",
            mode: int = 0o644,
            size: int | None = None,
        ) -> None:
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.linkname = kind, mode, link
            info.size = len(data) if size is None else size
            if kind == tarfile.CHRTYPE:
                info.devmajor, info.devminor = 1, 3
            tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)

        add("tree", tarfile.DIRTYPE, mode=0o755)
        build(add)
    out.seek(0)
    return out


@pytest.fixture
def scene(tmp_path: Path) -> tuple[Path, Path]:
    """Fetch's copy of a run's tree (with a file the archive keeps as it is), and a
    victim folder beside it."""
    dest = tmp_path / "run" / "tree"
    dest.mkdir(parents=True)
    (dest / "same.txt").write_text("same\n")
    (dest / "gone.txt").write_text("the kennel deleted me\n")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "secret.txt").write_text("keep me\n")
    return dest, victim


@pytest.mark.parametrize(
    ("why", "build", "match"),
    [
        ("dotdot", lambda add: add("tree/../../victim/secret.txt", data=b"x"), "names"),
        ("absolute", lambda add: add("/tmp/victim/x", data=b"x"), "names"),
        ("empty part", lambda add: add("tree//x", data=b"x"), "names"),
        ("dot part", lambda add: add("tree/./x", data=b"x"), "names"),
        (
            "write through a link",
            lambda add: (
                add("tree/out", tarfile.SYMTYPE, link="VICTIM"),
                add("tree/out/secret.txt", data=b"pwned\n"),
            ),
            "before its folder",
        ),
        ("no folder", lambda add: add("tree/a/b.txt", data=b"x"), "before its folder"),
        ("twice", lambda add: (add("tree/x", data=b"1"), add("tree/x", data=b"2")), "twice"),
        ("huge", lambda add: add("tree/big", data=b"x" * ((1 << 20) + 1)), "over the limit"),
        (
            "too deep",
            lambda add: [
                add("tree/" + "/".join(["d"] * n), tarfile.DIRTYPE, mode=0o755)
                for n in range(1, 20)
            ],
            "folders deep",
        ),
    ],
)
def test_a_forged_archive_is_refused_and_nothing_is_written(
    scene: tuple[Path, Path], why: str, build: Callable[[Add], None], match: str
) -> None:
    dest, victim = scene

    def with_victim(add: Add) -> None:
        def patched(name: str, *args: object, **kw: object) -> None:
            if kw.get("link") == "VICTIM":
                kw["link"] = str(victim)
            add(name.replace("/tmp/victim", str(victim)), *args, **kw)

        build(patched)

    before, before_victim = tree_snapshot(dest), tree_snapshot(victim)
    with pytest.raises(Refused, match=match):
        sync(_tar(with_victim), "tree", str(dest), LIMITS, 8 << 20)
    assert tree_snapshot(dest) == before, why
    assert tree_snapshot(victim) == before_victim, why


def test_the_top_replaced_by_a_link_is_refused(scene: tuple[Path, Path]) -> None:
    dest, victim = scene
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        info = tarfile.TarInfo("tree")
        info.type, info.linkname = tarfile.SYMTYPE, str(victim)
        tar.addfile(info)
    out.seek(0)
    with pytest.raises(Refused, match="not a folder"):
        sync(out, "tree", str(dest), LIMITS, 8 << 20)
    assert (victim / "secret.txt").read_text() == "keep me\n"


def test_links_are_data_devices_and_fifos_left_out_hard_links_copied(
    scene: tuple[Path, Path],
) -> None:
    dest, victim = scene
    same_before = os.stat(dest / "same.txt")

    def build(add: Add) -> None:
        add("tree/same.txt", data=b"same\n")
        add("tree/new.txt", data=b"new\n", mode=0o4755)  # setuid: never kept
        add("tree/out", tarfile.SYMTYPE, link=str(victim))
        add("tree/up", tarfile.SYMTYPE, link="../../victim/secret.txt")
        add("tree/hard", tarfile.LNKTYPE, link="tree/new.txt")
        add("tree/stray", tarfile.LNKTYPE, link=f"{victim}/secret.txt")
        add("tree/fifo", tarfile.FIFOTYPE)
        add("tree/null", tarfile.CHRTYPE)
        add("tree/.git", tarfile.DIRTYPE, mode=0o755)
        add("tree/.git/config", data=b"[core]\n\thooksPath = /tmp\n")
        add("elsewhere.txt", data=b"not below the top\n")

    done = sync(_tar(build), "tree", str(dest), LIMITS, 8 << 20)
    assert os.readlink(dest / "out") == str(victim)
    assert os.readlink(dest / "up") == "../../victim/secret.txt"
    assert (dest / "new.txt").read_bytes() == b"new\n"
    assert os.stat(dest / "new.txt").st_mode & 0o7777 == 0o755
    assert (dest / "hard").read_bytes() == b"new\n"
    assert os.stat(dest / "hard").st_ino != os.stat(dest / "new.txt").st_ino
    for name in ("stray", "fifo", "null", ".git", "gone.txt", "elsewhere.txt"):
        assert not os.path.lexists(dest / name), name
    assert any("fifo" in w and "FIFO" in w for w in done.left_out)
    assert any("null" in w and "device" in w for w in done.left_out)
    assert any("stray" in w for w in done.left_out)
    # Untouched: the same inode, never rewritten (its change time is the copy's).
    same_after = os.stat(dest / "same.txt")
    assert (same_after.st_ino, same_after.st_ctime_ns) == (
        same_before.st_ino,
        same_before.st_ctime_ns,
    )
    assert (victim / "secret.txt").read_text() == "keep me\n"
    assert sorted(os.listdir(victim)) == ["secret.txt"]


def test_a_folder_replacing_a_file_and_back(scene: tuple[Path, Path]) -> None:
    dest, _victim = scene

    def build(add: Add) -> None:
        add("tree/same.txt", tarfile.DIRTYPE, mode=0o755)
        add("tree/same.txt/inner", data=b"i\n")

    sync(_tar(build), "tree", str(dest), LIMITS, 8 << 20)
    assert (dest / "same.txt" / "inner").read_bytes() == b"i\n"
    sync(
        _tar(lambda add: add("tree/same.txt", data=b"file again\n")),
        "tree",
        str(dest),
        LIMITS,
        1 << 20,
    )
    assert (dest / "same.txt").read_bytes() == b"file again\n"
    assert sorted(os.listdir(dest)) == ["same.txt"]


def test_not_a_tar_is_refused(scene: tuple[Path, Path]) -> None:
    dest, _victim = scene
    with pytest.raises(Refused, match="not readable"):
        sync(io.BytesIO(b"\x00garbage" * 200), "tree", str(dest), LIMITS, 1 << 20)


def test_a_committed_file_over_the_limit_travels_back_untouched(
    scene: tuple[Path, Path],
) -> None:
    """A repository may commit a file bigger than any change may be: the one sent (its
    size, the time it was sent with) is left as it is; one the kennel changed is not."""
    dest, _victim = scene
    big = b"B" * ((1 << 20) + 10)
    (dest / "big.bin").write_bytes(big)
    before = os.stat(dest / "big.bin")

    def back(add: Add) -> None:
        add("tree/same.txt", data=b"same\n")
        add("tree/big.bin", data=big)

    sync(_tar(back), "tree", str(dest), LIMITS, 8 << 20)
    after = os.stat(dest / "big.bin")
    assert (after.st_ino, after.st_ctime_ns) == (before.st_ino, before.st_ctime_ns)
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in (("tree", None), ("tree/big.bin", big)):
            info = tarfile.TarInfo(name)
            if data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                info.size, info.mtime = len(data), 1_700_000_000  # written there
                tar.addfile(info, io.BytesIO(data))
    out.seek(0)
    with pytest.raises(Refused, match="over the limit"):
        sync(out, "tree", str(dest), LIMITS, 8 << 20)
    assert os.stat(dest / "big.bin").st_ino == before.st_ino


def test_a_kept_folder_is_kept_whole_and_not_entered(scene: tuple[Path, Path]) -> None:
    """What was never sent (a setup layer's folder, one left out for its size) cannot
    come back: given as kept, the folder stays with everything below it, though only
    its own path is named; what the archive lacks elsewhere is still removed."""
    dest, victim = scene
    kept = dest / "node_modules" / "pkg" / "lib"
    kept.mkdir(parents=True)
    (kept / "index.js").write_text("module.exports = 1\n")
    (dest / "node_modules" / ".bin").mkdir()
    (dest / "node_modules" / ".bin" / "tool").write_text("#!/bin/sh\n")

    def back(add: Add) -> None:
        add("tree/same.txt", data=b"same\n")
        add("tree/new.txt", data=b"made in the kennel\n")

    synced = sync(_tar(back), "tree", str(dest), LIMITS, 8 << 20, frozenset({"node_modules"}))
    assert (kept / "index.js").read_text() == "module.exports = 1\n"
    assert (dest / "node_modules" / ".bin" / "tool").read_text() == "#!/bin/sh\n"
    assert not (dest / "gone.txt").exists()  # not kept: removed as the archive says
    assert (dest / "new.txt").read_bytes() == b"made in the kennel\n"
    assert synced.removed == 1
    assert tree_snapshot(victim) == {"secret.txt": b"keep me\n"}
