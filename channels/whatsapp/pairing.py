"""Link Fetch to a WhatsApp account, once: ``fetch whatsapp pair [--phone N]``.

Without a phone number it shows QR codes in the terminal (WhatsApp rotates them every
~20 s; each new one is printed). With ``--phone`` it asks WhatsApp for an 8-character
pairing code to type on the phone instead. The session is stored in
``FETCH_HOME/whatsapp/device.db``; Fetch must not be running meanwhile (one client per
session, or WhatsApp replaces one with the other).
"""

from __future__ import annotations

import asyncio
import sys
from contextlib import suppress
from pathlib import Path
from typing import Any, TextIO

import segno

from channels.whatsapp import _neonize as nz
from channels.whatsapp.client import NeonizeClient, WhatsAppClient
from channels.whatsapp.jids import phone_digits

QR_HELP = (
    "On the phone: WhatsApp → Settings → Linked devices → Link a device, then scan "
    "this code. A new code appears every ~20 seconds."
)
CODE_HELP = (
    "On the phone: WhatsApp → Settings → Linked devices → Link a device → "
    "Link with phone number instead, then enter:"
)


class PairingError(ValueError):
    pass


def normalize_phone(phone: str) -> str:
    """``"+1 555 123 4567"`` -> ``"15551234567"``; refuses what cannot be an E.164 number."""
    digits = phone_digits(phone)
    if not 8 <= len(digits) <= 15 or digits.startswith("0"):
        raise PairingError(
            f"{phone!r} is not a phone number with its country code (e.g. +15551234567)"
        )
    return digits


def print_qr(code: str, out: TextIO) -> None:
    out.write("\n" + QR_HELP + "\n")
    segno.make_qr(code).terminal(out=out, compact=True)
    out.write(f"(or paste into any QR generator: {code})\n")
    out.flush()


async def _session(
    client: WhatsAppClient, events: asyncio.Queue[Any], phone: str | None, out: TextIO
) -> int:
    asked = False
    while True:
        event = await events.get()
        if isinstance(event, nz.QREv):
            if phone is None:
                for code in event.Codes[:1]:
                    print_qr(str(code), out)
            elif not asked:  # a QR event means: connected, unpaired, ready for a code
                asked = True
                code = await client.pair_phone(phone)
                out.write(f"\n{CODE_HELP}\n\n    {code}\n\n")
                out.flush()
        elif isinstance(event, nz.PairStatusEv):
            if event.Status != nz.PairStatusEv.SUCCESS:
                out.write(f"Pairing failed: {event.Error or 'unknown error'}\n")
                return 1
            out.write(f"✅ Paired with +{event.ID.User}. Finishing the first sync…\n")
            out.flush()
        elif isinstance(event, nz.ConnectedEv):
            out.write(
                "✅ Connected. Fetch can use WhatsApp now: set whatsapp.enabled: true "
                "and whatsapp.owner (your number) in the config, then start Fetch.\n"
            )
            return 0
        elif isinstance(
            event, (nz.LoggedOutEv, nz.TemporaryBanEv, nz.ClientOutdatedEv, nz.StreamReplacedEv)
        ):
            out.write(f"Pairing stopped: WhatsApp sent {type(event).__name__}.\n")
            return 1


async def pair(
    home: Path,
    phone: str | None = None,
    *,
    client: WhatsAppClient | None = None,
    out: TextIO | None = None,
    give_up_after: float = 300.0,
) -> int:
    """Pair and return an exit code: 0 paired (or already paired), 1 failed, 2 bad input.

    ``home`` is Fetch's home folder; the device store is its ``whatsapp/`` folder."""
    out = out or sys.stdout
    try:
        digits = normalize_phone(phone) if phone is not None else None
    except PairingError as err:
        out.write(f"fetch: {err}\n")
        return 2
    store = home / "whatsapp"
    store.mkdir(parents=True, exist_ok=True)
    store.chmod(0o700)  # the device store holds the session keys
    client = client or NeonizeClient(store / "device.db")
    if await client.paired():
        out.write(
            "Already paired. To link another account, stop Fetch and delete "
            f"{store / 'device.db'} first.\n"
        )
        return 0
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[Any] = asyncio.Queue()

    def post(event: Any) -> None:  # neonize calls this from its own threads
        with suppress(RuntimeError):
            loop.call_soon_threadsafe(events.put_nowait, event)

    client.set_event_sink(post)
    out.write("Connecting to WhatsApp…\n")
    out.flush()
    try:
        await client.connect()
        async with asyncio.timeout(give_up_after):
            return await _session(client, events, digits, out)
    except TimeoutError:
        out.write(f"Pairing timed out after {int(give_up_after)} s; run it again.\n")
        return 1
    except Exception as err:  # e.g. WhatsApp refused the pairing code request
        out.write(f"Pairing failed: {err}\n")
        return 1
    finally:
        client.set_event_sink(None)
        with suppress(Exception):
            await client.disconnect()


def run_pair(home: Path, phone: str | None = None) -> int:
    """The CLI entry: ``fetch whatsapp pair [--phone N]``."""
    return asyncio.run(pair(home, phone))
