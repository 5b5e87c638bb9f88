"""/link's pairing on a real SQLite file and a real PostgreSQL (orchestrator/links.py,
store/links.py): a code works once, only within its time, only between a desk (web chat,
terminal) and a phone chat (WhatsApp, Telegram); a new code ends the chat's older one;
links survive a reload (a restart); replies follow the chat the owner last wrote from."""

from __future__ import annotations

import pytest

from core.events import SessionKey
from orchestrator.links import TTL, Links
from orchestrator.store.composite import Store
from orchestrator.store.links import Link

WEB = SessionKey("web", "owner")
TERM = SessionKey("terminal", "local")
WA = SessionKey("whatsapp", "4915112345678@s.whatsapp.net")
TG = SessionKey("telegram", "42")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store(any_store: Store) -> Store:
    """SQLite, then PostgreSQL (tests/store/conftest.py)."""
    return any_store


async def test_a_code_pairs_once_and_the_pair_shares_one_session(store: Store) -> None:
    clock = Clock()
    links = Links(store.links, clock)
    code = await links.offer(WEB)
    assert len(code) == 6 and code.isdigit()
    made = await links.redeem(WA, code)
    assert made == Link(WEB, WA)
    assert links.home_of(WEB) == WA and links.home_of(WA) == WA
    assert "used or has expired" in str(await links.redeem(WA, code))
    # Replies follow the owner: the phone typed last, then the web chat.
    assert links.route(WA) == WA
    links.spoke(WEB)
    assert links.route(WA) == WEB
    links.spoke(WA)
    assert links.route(WA) == WA
    # A restart: the link is read back; which device spoke last is not.
    again = Links(store.links, clock)
    await again.load()
    assert again.home_of(WEB) == WA and again.linked(WEB) == [WA]
    assert [link.device for link in await again.unlink(WA)] == [WEB]
    assert again.home_of(WEB) == WEB
    third = Links(store.links, clock)
    await third.load()
    assert third.home_of(WEB) == WEB


async def test_codes_expire_end_with_a_newer_one_and_pair_only_desk_with_phone(
    store: Store,
) -> None:
    clock = Clock()
    links = Links(store.links, clock)
    old = await links.offer(TG)
    clock.now += TTL + 1
    assert "expired" in str(await links.redeem(TERM, old))
    first = await links.offer(TG)
    second = await links.offer(TG)  # the chat's newer code ends the older one
    assert "expired" in str(await links.redeem(TERM, first)) or first == second
    # Refusals leave the code unused: the right chat can still use it.
    assert "other chat" in str(await links.redeem(TG, second))
    web = await links.offer(WEB)
    assert "web chat or the terminal with your WhatsApp" in str(await links.redeem(TERM, web))
    phone = await links.offer(WA)
    assert "one side must be" in str(await links.redeem(TG, phone))
    assert await links.redeem(TERM, second) == Link(TERM, TG)
    assert "6 digits" in str(await links.redeem(TERM, "12ab"))
    assert links.home_of(TERM) == TG and links.home_of(WEB) == WEB
