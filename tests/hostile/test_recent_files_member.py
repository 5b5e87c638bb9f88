"""A hostile group member and the files the owner sent lately (orchestrator/task/recent.py),
on real files: the member's files never go with the owner's task, and a member sending
file after file cannot push the owner's screenshot out of the chat's list (the bound is
each sender's own, so the member only pushes out their own)."""

from __future__ import annotations

from pathlib import Path

from core.events import Attachment, SessionKey
from orchestrator.task.recent import KEEP, RecentFiles

GROUP = SessionKey("whatsapp", "120363000000000001@g.us")
MEMBER = "whatsapp:4915100000099"


def _file(tmp_path: Path, name: str) -> Attachment:
    path = tmp_path / "media" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"\x89PNG")
    return Attachment("image", str(path), "image/png", size=4)


def test_a_member_flooding_files_neither_joins_nor_evicts_the_owners(tmp_path: Path) -> None:
    recent = RecentFiles(tmp_path / "sessions")
    screenshot = _file(tmp_path, "owner-screenshot.png")
    recent.note(GROUP, "owner", (screenshot,))
    flood = [_file(tmp_path, f"member-{n}.png") for n in range(KEEP * 4)]
    for item in flood:
        recent.note(GROUP, MEMBER, (item,))
    assert recent.take(GROUP, "owner") == (screenshot,)
    # The member's own next task gets only the member's last KEEP.
    assert recent.take(GROUP, MEMBER) == tuple(flood[-KEEP:])
