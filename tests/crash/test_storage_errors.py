"""Every storage error becomes a clear reply (issue 12): the real ``fetch`` loses the
right to grow any file (RLIMIT_FSIZE set on the running process: every append fails
with EFBIG, as on a full disk), is told something, answers "I couldn't save that —
nothing was done" instead of going deaf, and serves again once the limit is lifted."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.cli.test_fetch_command import _env, running_fetch


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _fsize(pid: int, limit: str) -> None:
    subprocess.run(["prlimit", f"--pid={pid}", f"--fsize={limit}"], check=True)


def test_a_disk_that_cannot_grow_gets_a_clear_reply_and_fetch_serves_again(
    tmp_path: Path,
) -> None:
    with running_fetch(_env(tmp_path / "home"), tmp_path) as fetch:
        fetch.ready()
        fetch.type("/remember one before")
        fetch.expect("Remembered #1")
        pids = [fetch.child.pid, *_children(fetch.child.pid)]
        for pid in pids:  # the launcher and the app alike: whichever writes the files
            _fsize(pid, "1:unlimited")  # soft: lifting it needs no privilege
        fetch.type("/remember two while full")
        said = " ".join(fetch.expect("Send it again").split())
        assert "I couldn't save that (disk full" in said and "nothing was done" in said
        fetch.type("/status")  # still listening, still answering
        fetch.expect("Send it again")
        for pid in pids:
            _fsize(pid, "unlimited:unlimited")
        fetch.type("/remember three after")
        fetch.expect("Remembered #2")
        fetch.type("/memory")
        listed = fetch.expect("/forget <id>")
        assert "one before" in listed and "three after" in listed
        assert "two while full" not in listed.split("/memory", 1)[-1]
        assert "Something went wrong" not in fetch.transcript.getvalue()
        fetch.quit_with_ctrl_c()
