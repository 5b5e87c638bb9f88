"""The files a person sent lately, kept per chat for their next task
(orchestrator/task/recent.py), on real files: bounded to the last 5 within 10 minutes,
only the requester's, used once, kept across a restart (a new instance reads the same
file), a replayed message keeps its first time, and a damaged list is started afresh."""

from __future__ import annotations

from pathlib import Path

from core.events import Attachment, SessionKey
from orchestrator.task.recent import FILE, KEEP, WITHIN, RecentFiles

KEY = SessionKey("whatsapp", "4915100000001@s.whatsapp.net")
OTHER = SessionKey("telegram", "42")


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def shot(tmp_path: Path, name: str, kind: str = "image") -> Attachment:
    path = tmp_path / "media" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"\x89PNG" if kind == "image" else b"log\n")
    mime = "image/png" if kind == "image" else "text/plain"
    return Attachment(kind, str(path), mime, size=4)


def test_a_file_sent_before_goes_with_the_next_task_once(tmp_path: Path) -> None:
    clock = Clock()
    recent = RecentFiles(tmp_path / "sessions", clock)
    first = shot(tmp_path, "a.png")
    assert recent.note(KEY, "owner", (first,)) == 1
    # Audio became words, a refused file is gone: neither is kept.
    voice = Attachment("audio", str(tmp_path / "v.ogg"), "audio/ogg")
    refused = Attachment("image", "", "image/png", refused="too big")
    assert recent.note(KEY, "owner", (voice, refused)) == 0
    clock.now += 60
    own = shot(tmp_path, "b.log", "document")
    recent.note(KEY, "owner", (own,))  # the task's own message is noted too
    assert RecentFiles(tmp_path / "sessions", clock).take(KEY, "owner", (own,)) == (first,)
    assert recent.take(KEY, "owner") == ()  # used once
    assert (tmp_path / "sessions" / KEY.slug / FILE).is_file()  # on the host, per chat
    assert recent.take(OTHER, "owner") == ()


def test_bounded_by_count_and_age_and_only_the_senders(tmp_path: Path) -> None:
    clock = Clock()
    recent = RecentFiles(tmp_path / "sessions", clock)
    old = shot(tmp_path, "old.png")
    recent.note(KEY, "owner", (old,))
    clock.now += WITHIN + 1
    files = [shot(tmp_path, f"{n}.png") for n in range(KEEP + 2)]
    for f in files:
        recent.note(KEY, "owner", (f,))
        clock.now += 1
    members = shot(tmp_path, "member.png")
    recent.note(KEY, "member:bob", (members,))
    # A replay of an earlier message keeps its first time (and place).
    recent.note(KEY, "owner", (files[-1],))
    got = recent.take(KEY, "owner")
    assert len(got) <= KEEP and old not in got and got[-1] == files[-1]
    assert members not in got
    assert recent.take(KEY, "member:bob") == (members,)  # someone else's stay theirs
    # A file the channel no longer has is not offered.
    gone = shot(tmp_path, "gone.png")
    recent.note(KEY, "owner", (gone,))
    Path(gone.path).unlink()
    assert recent.take(KEY, "owner") == ()


def test_a_damaged_list_is_started_afresh(tmp_path: Path) -> None:
    recent = RecentFiles(tmp_path / "sessions", Clock())
    path = tmp_path / "sessions" / KEY.slug / FILE
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert recent.take(KEY, "owner") == ()
    path.write_text('[{"attachment": {"kind": "image"}}, 7]')
    assert recent.take(KEY, "owner") == ()
    a = shot(tmp_path, "a.png")
    recent.note(KEY, "owner", (a,))
    assert recent.take(KEY, "owner") == (a,)
