"""What the phone shows: file contents made inert, big and binary files stated by size,
the diff read with a cap so memory stays bounded whatever the harness wrote."""

from __future__ import annotations

import os
import tracemalloc

import pytest

from orchestrator.boundary.gitops import FILE_CAP, PATCH_CAP, Repo
from orchestrator.task import diffview
from tests.hostile.conftest import Scene, exercise

RAW = {
    "\x1b",
    "\x07",
    "\x08",
    "\r",
    "\x00",
    "\x9b",
    "\x9d",
    "\u202a",
    "\u202b",
    "\u202c",
    "\u202d",
    "\u202e",
    "\u2066",
    "\u2067",
    "\u2068",
    "\u2069",
    "\x0b",
    "\x0c",
    "\x7f",
}


def test_terminal_escapes_and_bidi_in_content_are_shown_inert(scene: Scene) -> None:
    hostile = (
        "title \x1b]0;pwned\x07 clear \x1b[2J\x1b[H c1 \x9b31m osc8 "
        "\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\\n"
        "bidi: if (admin \u202e} \u2066 {\u2069 \u202a\u202b\u202c\u202d\u2067\u2068\n"
        "cr\roverwrite back\x08\x08 vt\x0b ff\x0c del\x7f \u009dosc\n"
        "tab\tstays\n"
    )
    (scene.repo / "src" / "app.py").write_text(hostile)
    repo = Repo(scene.repo)
    change = repo.change()
    shown = [
        diffview.summary(change, "demo"),
        diffview.page(change, 0)[0],
        diffview.file_view(repo.file_patch(change, "src/app.py"), "src/app.py"),
    ]
    for text in shown:
        assert not RAW & set(text), [c for c in text if c in RAW]
    body = "\n".join(shown)
    assert "\\x1b]0;pwned\\x07" in body and "\\u202e" in body and "\\x9b31m" in body
    assert "tab\tstays" in body


def test_visible_keeps_text_and_spells_controls() -> None:
    assert diffview.visible("ok\tü → ✓") == "ok\tü → ✓"
    assert diffview.visible("\x1b[31m\u202e\x00") == "\\x1b[31m\\u202e\\x00"


@pytest.mark.parametrize("answer", ["no", "yes"])
def test_sparse_200_mb_and_binary_files_are_stated_not_loaded(scene: Scene, answer: str) -> None:
    with open(scene.repo / "big.img", "wb") as fh:
        fh.truncate(200 * 1024 * 1024)
    (scene.repo / "blob.bin").write_bytes(bytes(range(256)) * 64)
    tracemalloc.start()
    try:
        repo = Repo(scene.repo)
        change = repo.change()
        text = diffview.summary(change, "demo")
        diffview.file_view(repo.file_patch(change, "big.img"), "big.img")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024, peak
    assert "big.img: 200.0 MB, not shown" in text
    assert "blob.bin (binary, 16.0 KB, not shown)" in text
    assert len(change.patch) < PATCH_CAP
    assert exercise(scene, answer) == []
    assert Repo(scene.repo).status_lines() == []


def test_big_text_file_is_stated_not_diffed(scene: Scene) -> None:
    (scene.repo / "big.txt").write_text("line of text\n" * (FILE_CAP // 13 + 1000))
    change = Repo(scene.repo).change()
    (stat,) = change.files
    assert stat.big and stat.binary
    assert "line of text" not in change.patch
    assert "• big.txt: 1.0 MB, not shown" in diffview.summary(change, "demo")


def test_the_whole_diff_is_capped(scene: Scene) -> None:
    line = "y" * 99 + "\n"
    for i in range(6):  # each under the file cap, together over the diff cap
        (scene.repo / f"part{i}.txt").write_text(line * (FILE_CAP // 100 - 10))
    repo = Repo(scene.repo)
    change = repo.change()
    assert change.truncated
    assert len(change.patch.encode()) <= PATCH_CAP
    assert all(not f.big for f in change.files)
    shown = diffview.summary(change, "demo")
    end = diffview.page(change, 10**9)[0]
    assert "the rest is not shown" in end
    assert "Apply?" in shown
    assert change.digest == repo.change().digest  # the cut is deterministic
    sha = repo.commit(change, "six parts")
    assert repo.subject(sha) == "six parts"
    assert os.path.getsize(scene.repo / "part5.txt") > 0
