"""Pairing: QR codes printed for the terminal, or a pairing code for a phone number.
WhatsApp itself is not reachable here; the client is the recording fake."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from channels.whatsapp import _neonize as nz
from channels.whatsapp.pairing import (
    CODE_HELP,
    QR_HELP,
    PairingError,
    normalize_phone,
    pair,
    print_qr,
)
from orchestrator.config import Settings

from .builders import FETCH, jid
from .fake_client import Call, FakeWhatsAppClient

QR = "2@AbCdEfGhIjKlMnOp,QrStUvWx==,YzAbCdEf==,GhIjKlMn=="
PAIRED = nz.PairStatusEv(
    ID=jid(FETCH), BusinessName="", Platform="android", Status=nz.PairStatusEv.SUCCESS, Error=""
)


class ScriptedPairing(FakeWhatsAppClient):
    """Unpaired; on connect WhatsApp shows QR codes; scanning (or the code) pairs it."""

    def __init__(self, after_qr: list[Any], *, by_phone: bool = False) -> None:
        super().__init__(paired=False)
        self.after_qr, self.by_phone = after_qr, by_phone

    async def connect(self) -> None:
        self.calls.append(Call("connect"))
        self.emit(nz.QREv(Codes=[QR]))
        if not self.by_phone:  # the owner scans it
            for event in self.after_qr:
                self.emit(event)

    async def pair_phone(self, phone: str) -> str:
        code = await super().pair_phone(phone)
        for event in self.after_qr:
            self.emit(event)
        return code


@pytest.fixture
def fetch_settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home")


def test_phone_numbers_are_normalised_or_refused() -> None:
    assert normalize_phone("+1 (555) 765-4321") == "15557654321"
    for bad in ("12345", "0612345678", "+1234567890123456", "phone"):
        with pytest.raises(PairingError):
            normalize_phone(bad)


def test_the_qr_code_is_drawn_with_instructions() -> None:
    out = io.StringIO()
    print_qr(QR, out)
    text = out.getvalue()
    assert QR_HELP in text and QR in text
    assert sum(ch in "█▀▄" for ch in text) > 100  # segno drew a real QR code


async def test_pairing_by_qr(fetch_settings: Settings) -> None:
    client = ScriptedPairing([PAIRED, nz.ConnectedEv(status=True)])
    out = io.StringIO()
    assert await pair(fetch_settings.home_dir, client=client, out=out) == 0
    text = out.getvalue()
    assert QR_HELP in text and f"Paired with +{FETCH}" in text and "Connected" in text
    assert client.named("pair_phone") == [] and client.named("disconnect")
    assert (fetch_settings.home_dir / "whatsapp").stat().st_mode & 0o777 == 0o700


async def test_pairing_by_phone_code(fetch_settings: Settings) -> None:
    client = ScriptedPairing([PAIRED, nz.ConnectedEv(status=True)], by_phone=True)
    out = io.StringIO()
    assert await pair(fetch_settings.home_dir, "+1 555 765 4321", client=client, out=out) == 0
    text = out.getvalue()
    assert CODE_HELP in text and "ABCD-EFGH" in text and QR_HELP not in text
    assert [c.extra["phone"] for c in client.named("pair_phone")] == ["15557654321"]


async def test_a_failed_pairing_says_why(fetch_settings: Settings) -> None:
    failed = nz.PairStatusEv(
        ID=jid(""),
        BusinessName="",
        Platform="",
        Status=nz.PairStatusEv.ERROR,
        Error="pair code expired",
    )
    out = io.StringIO()
    assert await pair(fetch_settings.home_dir, client=ScriptedPairing([failed]), out=out) == 1
    assert "Pairing failed: pair code expired" in out.getvalue()


async def test_bad_phone_is_refused_before_connecting(fetch_settings: Settings) -> None:
    client = ScriptedPairing([])
    out = io.StringIO()
    assert await pair(fetch_settings.home_dir, "12", client=client, out=out) == 2
    assert client.calls == [] and "country code" in out.getvalue()


async def test_already_paired_does_nothing(fetch_settings: Settings) -> None:
    client = FakeWhatsAppClient(paired=True)
    out = io.StringIO()
    assert await pair(fetch_settings.home_dir, client=client, out=out) == 0
    assert client.calls == [] and "Already paired" in out.getvalue()


async def test_pairing_gives_up_after_a_while(fetch_settings: Settings) -> None:
    out = io.StringIO()
    assert (
        await pair(fetch_settings.home_dir, client=ScriptedPairing([]), out=out, give_up_after=0.2)
        == 1
    )
    assert "timed out" in out.getvalue()
