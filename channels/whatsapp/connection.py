"""Keeping the WhatsApp connection up, and saying so when it cannot be.

``ConnectionSupervisor`` takes the connection events (connected, dropped, keepalive,
account events), keeps ``ConnectionHealth`` true, and runs the monitor task: a periodic
``is_connected`` probe, and after a drop a reconnect loop with backoff. Events that need
the owner (logged out, banned, session replaced, client outdated, pairing asked) become an
*alert*: reconnecting stops, ``alert_handler`` is called and ``health()`` shows it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from channels.whatsapp import _neonize as nz
from channels.whatsapp.client import WhatsAppClient
from channels.whatsapp.health import Backoff, ConnectionHealth

log = logging.getLogger(__name__)
PAIR_HINT = "run `fetch whatsapp pair`, then restart Fetch"
# Reasons a connection attempt fails that reconnecting cannot fix.
_FATAL_CONNECT = {
    "LOGGED_OUT",
    "MAIN_DEVICE_GONE",
    "UNKNOWN_LOGOUT",
    "TEMP_BANNED",
    "CLIENT_OUTDATED",
    "BAD_USER_AGENT",
}


def _enum_name(message: Any, field: str) -> str:
    enum = message.DESCRIPTOR.fields_by_name[field].enum_type
    value = enum.values_by_number.get(getattr(message, field))
    return value.name if value is not None else str(getattr(message, field))


def _duration(seconds: int) -> str:
    hours, rest = divmod(max(seconds, 0), 3600)
    return f"{hours}h {rest // 60}m" if hours else f"{rest // 60}m"


async def wait_for_event(event: asyncio.Event, seconds: float) -> bool:
    """True if ``event`` is set within ``seconds``."""
    # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation that
    # lands as the event fires, and stop() would then wait for the monitor forever.
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        return False
    return True


def account_alert(event: Any) -> str | None:
    """The owner-facing text for an event that needs the owner, else None."""
    if isinstance(event, nz.LoggedOutEv):
        return f"WhatsApp logged Fetch out ({_enum_name(event, 'Reason')}): {PAIR_HINT}"
    if isinstance(event, nz.TemporaryBanEv):
        return (
            f"WhatsApp temporarily banned this number ({_enum_name(event, 'Code')}), "
            f"lifted in about {_duration(int(event.Expire))}. Fetch sends nothing on "
            "WhatsApp until it is restarted after that."
        )
    if isinstance(event, nz.StreamReplacedEv):
        return (
            "another client took over Fetch's WhatsApp session (stream replaced); Fetch "
            "let go so the two do not fight. Close the other one and restart Fetch."
        )
    if isinstance(event, nz.ClientOutdatedEv):
        return (
            "WhatsApp says this client is outdated: upgrade neonize "
            "(pip install -U neonize) and restart Fetch"
        )
    if isinstance(event, nz.QREv):
        return f"WhatsApp asks to pair again (QR shown): {PAIR_HINT}"
    if isinstance(event, nz.ConnectFailureEv) and _enum_name(event, "Reason") in _FATAL_CONNECT:
        return f"WhatsApp refused the connection ({_enum_name(event, 'Reason')}): {PAIR_HINT}"
    return None


class ConnectionSupervisor:
    def __init__(
        self,
        client: WhatsAppClient,
        health: ConnectionHealth,
        alert_handler: Callable[[str], None],
        *,
        backoff: Backoff,
        probe_interval: float,
    ) -> None:
        self._client = client
        self._health = health
        self._alert_handler = alert_handler
        self._backoff = backoff
        self._probe_interval = probe_interval
        self.reset()

    def reset(self) -> None:
        """Fresh state for a (re)start, on the running loop."""
        self.linking = False  # the owner asked to link from a running Fetch (QRs expected)
        self._restored = asyncio.Event()  # set while connected
        self._trouble = asyncio.Event()  # wakes the monitor
        self._health.alert = None

    def handle(self, event: Any) -> bool:
        """Take a connection event; False if ``event`` is not one."""
        if isinstance(event, (nz.ConnectedEv, nz.KeepAliveRestoredEv)):
            if not self._health.alert:
                self._health.set("connected")
                self._restored.set()
                log.info("whatsapp: connected")
        elif isinstance(event, nz.DisconnectedEv):
            self.dropped("disconnected")
        elif isinstance(event, nz.KeepAliveTimeoutEv):
            self.dropped(f"keepalive timeout ({event.ErrorCount} missed)", degraded=True)
        elif isinstance(
            event,
            (
                nz.LoggedOutEv,
                nz.TemporaryBanEv,
                nz.StreamReplacedEv,
                nz.ClientOutdatedEv,
                nz.ConnectFailureEv,
                nz.QREv,
            ),
        ):
            if isinstance(event, nz.QREv) and event.Codes:
                self._health.set("not paired")  # a QR is asked for: the link is gone
                self._health.qr = str(event.Codes[0])  # WhatsApp rotates them: the newest
                if self.linking:
                    return True  # asked for (link()): a code to show, not an alarm
            text = account_alert(event)
            if text is not None:
                self.alert(text)
            else:
                self.dropped(
                    f"connect failure {_enum_name(event, 'Reason')} {event.Message}".strip()
                )
        else:
            return False
        return True

    def dropped(self, reason: str, *, degraded: bool = False) -> None:
        if self._health.alert:
            return
        log.warning("whatsapp: %s", reason)
        self._health.set("degraded" if degraded else "disconnected", reason)
        self._restored.clear()
        self._trouble.set()

    def alert(self, text: str) -> None:
        if self._health.alert == text:
            return
        if self._health.alert is None:  # the first alert names the cause; keep it
            self._health.alert = text
        self._restored.clear()
        self._trouble.set()
        log.error("whatsapp: %s", text)
        try:
            self._alert_handler(f"WhatsApp: {text}")
        except Exception:
            log.exception("whatsapp: alert handler failed")

    async def run(self) -> None:
        """The monitor task: probe now and then; after a drop, reconnect with backoff."""
        while not self._health.alert:
            woke = await wait_for_event(self._trouble, self._probe_interval)
            self._trouble.clear()
            if self._health.alert:
                return  # every alert needs the owner; reconnecting would not help
            if not woke and self._health.connected and not await self._probe():
                self.dropped("connection lost (probe)")
            if not self._restored.is_set():
                await self._recover()

    async def _probe(self) -> bool:
        try:
            async with asyncio.timeout(10):
                return await self._client.is_connected()
        except Exception:
            return False

    async def _recover(self) -> None:
        for delay in self._backoff.delays():
            # First give the connection (whatsmeow reconnects by itself) a chance.
            if await wait_for_event(self._restored, delay) or self._health.alert:
                return
            self._health.attempt += 1
            self._health.set("reconnecting")
            log.warning("whatsapp: reconnecting (attempt %d)", self._health.attempt)
            try:
                await self._client.reconnect()
            except Exception as err:
                log.warning("whatsapp: reconnect attempt %d failed: %s", self._health.attempt, err)
                self._health.set("reconnecting", str(err))
