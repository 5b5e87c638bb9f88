"""Connection handling: reconnect with backoff after drops, the health line, and the
alerts that need the owner (logged out, banned, session replaced, not paired)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from neonize.proto.Neonize_pb2 import ConnectFailureReason, Node

from channels.whatsapp import WhatsAppChannel, WhatsAppUnavailable
from channels.whatsapp import _neonize as nz
from channels.whatsapp.health import Backoff, ConnectionHealth
from core.errors import ChannelError
from core.events import Outbound
from orchestrator.supervisor import TaskSupervisor

from .builders import OWNER, text_from
from .fake_client import FakeWhatsAppClient
from .harness import OWNER_CHAT, settings, started

FAST = Backoff(initial=0.02, factor=2.0, maximum=0.08)


def test_backoff_doubles_up_to_its_cap() -> None:
    delays = Backoff(initial=10, factor=2, maximum=60).delays()
    assert [next(delays) for _ in range(6)] == [10, 20, 40, 60, 60, 60]


async def test_reconnects_with_backoff_until_it_works(tmp_path: Path) -> None:
    client = FakeWhatsAppClient(fail_reconnects=3)
    wa = await started(tmp_path, client, backoff=FAST)
    try:
        client.connected = False
        client.emit(nz.DisconnectedEv(status=True))
        await wa.wait_for(
            lambda: (
                len(client.named("reconnect")) == 4
                and wa.channel.health().startswith("whatsapp: connected")
            )
        )
        times = [c.at for c in client.named("reconnect")]
        gaps = [b - a for a, b in itertools.pairwise(times)]
        # waits between attempts: 0.04, 0.08, 0.08 (doubling, capped)
        assert gaps[0] >= 0.035 and gaps[1] >= 0.075 and gaps[2] >= 0.075
        assert wa.alerts == []
        # and it works again: messages flow
        client.emit(text_from(OWNER, "still there?", id="3EB0BACK"))
        assert (await wa.next()).message_id == "3EB0BACK"
    finally:
        await wa.channel.stop()


async def test_health_shows_reconnect_attempts_and_the_last_error(tmp_path: Path) -> None:
    client = FakeWhatsAppClient(fail_reconnects=1000)
    wa = await started(tmp_path, client, backoff=Backoff(0.01, 1.0, 0.01))
    try:
        client.emit(nz.DisconnectedEv(status=True))
        await wa.wait_for(lambda: len(client.named("reconnect")) >= 3)
        line = wa.channel.health()
        assert line.startswith("whatsapp: reconnecting · attempt ")
        assert "network is unreachable" in line
    finally:
        await wa.channel.stop()


async def test_a_keepalive_blip_that_recovers_needs_no_reconnect(tmp_path: Path) -> None:
    client = FakeWhatsAppClient()
    wa = await started(tmp_path, client, backoff=Backoff(initial=5.0))
    try:
        client.emit(nz.KeepAliveTimeoutEv(ErrorCount=1, LastSuccess=0))
        await wa.wait_for(lambda: "degraded" in wa.channel.health())
        client.emit(nz.KeepAliveRestoredEv())
        await wa.wait_for(lambda: wa.channel.health().startswith("whatsapp: connected"))
        assert client.named("reconnect") == []
    finally:
        await wa.channel.stop()


async def test_the_probe_notices_a_silent_drop(tmp_path: Path) -> None:
    client = FakeWhatsAppClient()
    wa = await started(tmp_path, client, backoff=FAST, probe_interval=0.02)
    try:
        client.connected = False  # no event at all: only the probe can tell
        await wa.wait_for(lambda: len(client.named("reconnect")) == 1)
        await wa.wait_for(lambda: wa.channel.health().startswith("whatsapp: connected"))
    finally:
        await wa.channel.stop()


@pytest.mark.parametrize(
    ("event", "words"),
    [
        (
            nz.LoggedOutEv(OnConnect=False, Reason=ConnectFailureReason.LOGGED_OUT),
            "logged Fetch out (LOGGED_OUT): run `fetch whatsapp pair`",
        ),
        (
            nz.TemporaryBanEv(Code=nz.TemporaryBanEv.SEND_TO_TOO_MANY_PEOPLE, Expire=3900),
            "temporarily banned this number (SEND_TO_TOO_MANY_PEOPLE), lifted in about 1h 5m",
        ),
        (nz.StreamReplacedEv(), "another client took over Fetch's WhatsApp session"),
        (nz.ClientOutdatedEv(), "upgrade neonize"),
        (
            nz.ConnectFailureEv(
                Reason=ConnectFailureReason.MAIN_DEVICE_GONE,
                Message="",
                Raw=Node(Tag="failure", Nil=True),
            ),
            "refused the connection (MAIN_DEVICE_GONE)",
        ),
        (nz.QREv(Codes=["2@x"]), "asks to pair again"),
    ],
)
async def test_alerts_reach_the_owner_and_stop_sending(
    tmp_path: Path, event: object, words: str
) -> None:
    client = FakeWhatsAppClient()
    wa = await started(tmp_path, client, backoff=FAST)
    try:
        client.emit(text_from(OWNER, "hi", id="3EB0A"))
        await wa.next()
        client.emit(event)
        await wa.wait_for(lambda: bool(wa.alerts))
        assert len(wa.alerts) == 1 and words in wa.alerts[0]
        assert wa.alerts[0].startswith("WhatsApp: ")
        assert words in wa.channel.health() and "⚠️" in wa.channel.health()
        with pytest.raises(WhatsAppUnavailable):
            await wa.channel.send(Outbound("whatsapp", OWNER_CHAT, "hello?"))
        client.emit(nz.DisconnectedEv(status=True))  # no fighting back: no reconnects
        await wa.drain()
        assert client.named("reconnect") == [] and client.named("send") == []
    finally:
        await wa.channel.stop()


async def test_not_paired_is_an_alert_not_a_crash(tmp_path: Path) -> None:
    client = FakeWhatsAppClient(paired=False)
    wa = await started(tmp_path, client)
    try:
        assert client.named("connect") == []
        assert wa.alerts == [
            "WhatsApp: not paired with a phone: run `fetch whatsapp pair`, then restart Fetch"
        ]
        assert "not paired" in wa.channel.health()
    finally:
        await wa.channel.stop()


def test_health_line_from_real_traffic() -> None:
    now = [1000.0]
    health = ConnectionHealth(clock=lambda: now[0])
    assert health.line() == "whatsapp: stopped · last in never · last out never"
    health.set("connected")
    health.inbound()
    now[0] += 125
    health.outbound()
    now[0] += 3 * 3600
    assert health.line() == "whatsapp: connected · last in 3h ago · last out 3h ago"


async def test_a_transient_connect_failure_is_retried(tmp_path: Path) -> None:
    client = FakeWhatsAppClient()
    wa = await started(tmp_path, client, backoff=FAST)
    try:
        client.connected = False
        client.emit(
            nz.ConnectFailureEv(
                Reason=ConnectFailureReason.SERVICE_UNAVAILABLE,
                Message="503",
                Raw=Node(Tag="failure", Nil=True),
            )
        )
        await wa.wait_for(lambda: len(client.named("reconnect")) == 1)
        await wa.wait_for(lambda: wa.channel.health().startswith("whatsapp: connected"))
        assert wa.alerts == []
    finally:
        await wa.channel.stop()


class BrokenStore(FakeWhatsAppClient):
    async def paired(self) -> bool:
        raise ChannelError("cannot read the WhatsApp device store /x/device.db")


class RefusesFirstConnect(FakeWhatsAppClient):
    async def connect(self) -> None:
        raise ConnectionError("dial tcp: i/o timeout")


async def test_an_unreadable_device_store_is_an_alert(tmp_path: Path) -> None:
    wa = await started(tmp_path, BrokenStore())
    try:
        assert wa.alerts == [
            "WhatsApp: cannot read the WhatsApp device store /x/device.db: "
            "run `fetch whatsapp pair`, then restart Fetch"
        ]
    finally:
        await wa.channel.stop()


async def test_a_failed_first_connect_is_retried(tmp_path: Path) -> None:
    client = RefusesFirstConnect()
    wa = await started(tmp_path, client, backoff=FAST)
    try:
        await wa.wait_for(lambda: wa.channel.health().startswith("whatsapp: connected"))
        assert len(client.named("reconnect")) == 1
    finally:
        await wa.channel.stop()


async def test_a_failed_start_leaves_nothing_running(tmp_path: Path) -> None:
    class Exploding(FakeWhatsAppClient):
        explode = True

        async def paired(self) -> bool:
            if self.explode:
                raise RuntimeError("boom")
            return True

    client = Exploding()
    channel = WhatsAppChannel(settings(), tmp_path, client=client)

    async def sink(_: object) -> None:
        return None

    with pytest.raises(RuntimeError, match="boom"):
        await channel.start(sink, TaskSupervisor())
    assert channel.health().startswith("whatsapp: stopped")
    assert client.sink is None
    client.explode = False
    await channel.start(sink, TaskSupervisor())  # and it can be started again
    assert [c.name for c in client.calls] == ["disconnect", "connect"]
    await channel.stop()
