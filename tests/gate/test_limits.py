"""The pieces of the gate that never wait: the per-sender limit refuses (and says so once
a window), stranger log lines have one budget, replays and echoes are remembered only as
long as they matter."""

from __future__ import annotations

import logging

import pytest

from channels.phone import normalise_number
from channels.whatsapp.echo import PendingSends
from core.events import Inbound
from core.gate import AllowlistGate, OwnerOnlyGate
from core.throttle import LogThrottle
from orchestrator.limits import SenderLimits, Verdict


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_limit_refuses_at_once_tells_once_a_window_and_refills() -> None:
    clock = Clock()
    limits = SenderLimits(6, clock)  # 6 a minute: one every 10 s after the burst
    assert [limits.check("a") for _ in range(6)] == [Verdict.PASS] * 6
    assert limits.check("a") is Verdict.REFUSE_AND_TELL
    assert [limits.check("a") for _ in range(50)] == [Verdict.REFUSE] * 50
    assert limits.check("b") is Verdict.PASS  # per sender
    assert limits.seconds_until_next("a") == pytest.approx(10.0)
    clock.now += 10
    assert limits.check("a") is Verdict.PASS
    assert limits.check("a") is Verdict.REFUSE  # told 10 s ago: same window
    clock.now += 60
    assert [limits.check("a") for _ in range(6)] == [Verdict.PASS] * 6
    assert limits.check("a") is Verdict.REFUSE_AND_TELL  # a new window: told again


def test_stranger_log_lines_share_one_budget(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    logger = logging.getLogger("test.throttle")
    throttle = LogThrottle(logger, per_window=3, window=60, clock=clock)
    with caplog.at_level(logging.INFO, "test.throttle"):
        for i in range(1000):
            throttle.info("dropped %s", i)
        clock.now += 61
        throttle.info("dropped %s", "later")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "dropped 0",
        "dropped 1",
        "dropped 2",
        "dropped later (997 similar lines suppressed)",
    ]


def test_the_gates() -> None:
    def msg(sender: str, owner: bool = False, channel: str = "whatsapp") -> Inbound:
        return Inbound(channel, sender, sender, "m", "hi", from_owner=owner)

    gate = AllowlistGate(["whatsapp:491701234567", "telegram:42"])
    assert gate.allows(msg("491701234567")) and gate.allows(msg("42", channel="telegram"))
    assert gate.allows(msg("anyone", owner=True))
    assert not gate.allows(msg("42")) and not gate.allows(msg("491700000000"))
    assert not OwnerOnlyGate().allows(msg("491701234567"))


def test_an_echo_is_claimed_once_per_send() -> None:
    pending = PendingSends()
    assert not pending.claim("hi")
    with pending.sending("hi"), pending.sending("hi"):
        assert pending.claim("hi") and pending.claim("hi")
        assert not pending.claim("hi")  # the owner typing the same words is theirs
    assert len(pending) == 0 and not pending.claim("hi")


@pytest.mark.parametrize(
    ("written", "digits"),
    [
        ("+49 170 1234567", "491701234567"),
        ("0049 170 1234567", "491701234567"),
        ("49-170-1234567", "491701234567"),
        ("+49 (0)170 1234567", "491701234567"),
        ("+1 (555) 123-4567", "15551234567"),
        ("+44 7700 900123", "447700900123"),
    ],
)
def test_owner_numbers_are_normalised(written: str, digits: str) -> None:
    assert normalise_number(written) == digits


@pytest.mark.parametrize(
    "bad",
    [
        "+49 17",
        "+999 1234567",
        "12",
        "+1 555 123 45678",
        "call me",
        "+",
        "491701234567@s.whatsapp.net",
    ],
)
def test_impossible_numbers_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match=r"real number|not a phone number"):
        normalise_number(bad)


@pytest.mark.parametrize("bare", ["5551234567", "15551234567", "2025550123"])
def test_bare_digits_that_are_no_assigned_number_ask_for_the_country_code(bare: str) -> None:
    """Without + or 00 the country code is a guess: 5551234567 (a US number missing its 1)
    must not become a Brazilian +55 number that locks the owner out."""
    with pytest.raises(ValueError, match=r"write it with \+ and the country code"):
        normalise_number(bare)


@pytest.mark.parametrize(
    ("bare", "digits"),
    [("491701234567", "491701234567"), ("12025550123", "12025550123"), ("+15551234567", None)],
)
def test_bare_digits_of_an_assigned_number_and_marked_fictional_ones_are_taken(
    bare: str, digits: str | None
) -> None:
    assert normalise_number(bare) == (digits or bare.lstrip("+"))
