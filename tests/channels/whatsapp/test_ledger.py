"""The ledger: chats that wrote first and ids Fetch sent, kept across restarts."""

from __future__ import annotations

import os
from pathlib import Path

from channels.whatsapp.ledger import Ledger


def test_survives_a_restart_and_is_private(tmp_path: Path) -> None:
    path = tmp_path / "whatsapp" / "ledger.json"
    ledger = Ledger(path)
    ledger.record_wrote("15551234567@s.whatsapp.net")
    ledger.record_sent("3EB0AA", "15551234567@s.whatsapp.net")
    again = Ledger(path)
    assert again.wrote("15551234567@s.whatsapp.net") and not again.wrote("1@s.whatsapp.net")
    assert "3EB0AA" in again and again.sent_by_fetch("3EB0AA")
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_sent_ids_are_bounded_oldest_first(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.json", max_sent=3)
    for n in range(5):
        ledger.record_sent(f"id{n}", "c")
    assert [f"id{n}" in ledger for n in range(5)] == [False, False, True, True, True]
    assert "id0" not in Ledger(tmp_path / "l.json", max_sent=3)


def test_a_damaged_file_starts_empty_instead_of_failing(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    path.write_text("{not json")
    ledger = Ledger(path)
    assert not ledger.wrote("anyone")
    ledger.record_wrote("c")  # and it repairs itself on the next write
    assert Ledger(path).wrote("c")
