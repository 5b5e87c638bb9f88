"""The ledger as the application builds it: shipped prices under the owner's, budget
warnings to the owner's phone (the first channel the owner is reachable on), today's
spend read back at start."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from core.events import SessionKey
from orchestrator.config import Settings
from orchestrator.costs.ledger import CostLedger
from orchestrator.costs.prices import PriceTable, load_defaults
from orchestrator.messenger import Messenger
from orchestrator.store.usage import UsagePort
from orchestrator.supervisor import TaskSupervisor


def phone_warning(
    messenger: Messenger, supervisor: TaskSupervisor, owner_chats: dict[str, str]
) -> Callable[[str], None]:
    """Sends one line to the owner, as an owned task (the caller is a model call's path
    and must not wait for a channel)."""

    def warn(text: str) -> None:
        for channel, chat in owner_chats.items():
            supervisor.spawn(
                messenger.send(SessionKey(channel, chat), text), name=f"budget:{channel}"
            )
            return

    return warn


async def build_ledger(
    settings: Settings,
    usage: UsagePort,
    shipped: Path,
    warn: Callable[[str], None],
    now: Callable[[], float],
) -> CostLedger:
    prices = PriceTable(load_defaults(shipped / "prices.yaml"), settings.prices)
    model = settings.model
    if model.configured:
        prices.warn_unpriced([model.name] + [p.model or model.name for p in model.providers])
    ledger = CostLedger(usage, prices, settings.budgets, settings.timezone, now=now, warn=warn)
    await ledger.load()
    return ledger
