"""The gate port: may this sender reach Fetch at all?

The gateway decides for every message; adapters ask the same question *before* they do
anything on a sender's behalf that leaves a trace (download media, write a file, record
the chat in a ledger), so nothing from a sender who is not allowed is ever kept.
``AllowlistGate`` is the one implementation: the owner (as the adapter recognised them)
or an ``allowlist`` entry ``"channel:sender"``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from core.events import Inbound


class Gate(Protocol):
    def allows(self, inbound: Inbound) -> bool: ...


class AllowlistGate:
    def __init__(self, allowlist: Iterable[str]) -> None:
        self._allowed = frozenset(allowlist)

    def allows(self, inbound: Inbound) -> bool:
        return inbound.from_owner or f"{inbound.channel}:{inbound.sender}" in self._allowed


class OwnerOnlyGate:
    """For an adapter built without a gateway (tests, tools): only the owner passes."""

    def allows(self, inbound: Inbound) -> bool:
        return inbound.from_owner
