"""/cost as the phone shows it: today by model and source, this week, the running task,
the budgets as bars, and the models that have no price."""

from __future__ import annotations

from collections.abc import Callable

from orchestrator.costs.ledger import CostLedger, day_start, money, week_start
from orchestrator.store.usage import UsagePort, UsageTotal

CELLS = 8


def bar(spent: float, limit: float) -> str:
    """▓▓▓▓░░░░ 52% of $5.00"""
    share = spent / limit if limit else 0.0
    full = min(CELLS, int(share * CELLS + 1e-9))
    return f"{'▓' * full}{'░' * (CELLS - full)} {share:.0%} of {money(limit)}"


def _tokens(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def _line(total: UsageTotal) -> str:
    calls = "call" if total.calls == 1 else "calls"
    return (
        f"{money(total.cost)} · {total.calls} {calls} · "
        f"{_tokens(total.tokens_in)} in / {_tokens(total.tokens_out)} out"
    )


def _groups(totals: list[UsageTotal], limit: int = 5) -> str:
    shown = [f"{t.key or '?'} {money(t.cost)} ({t.calls})" for t in totals[:limit]]
    more = len(totals) - limit
    return " · ".join(shown) + (f" · +{more} more" if more > 0 else "")


async def cost_report(
    ledger: CostLedger,
    usage: UsagePort,
    *,
    now: Callable[[], float],
    task: int | None,
) -> str:
    tz = ledger.tz
    at = now()
    today_from = day_start(at, tz)
    today = await usage.total(today_from)
    lines = [f"💰 Today ({tz}): {_line(today)}"]
    models = await usage.by_model(today_from)
    if models:
        lines.append(f"  by model: {_groups(models)}")
        lines.append(f"  by source: {_groups(await usage.by_source(today_from))}")
    if today.errors:
        lines.append(f"  failed calls: {today.errors}")
    week = await usage.total(week_start(at, tz))
    lines.append(f"📅 This week: {_line(week)}")
    if task is not None:
        lines.append(f"🔧 Task #{task} (running): {_line(await usage.total(0, task=task))}")
    budgets = ledger.budgets
    if budgets.daily_usd is None and budgets.task_usd is None:
        lines.append("Budgets: none set (budgets.daily_usd, budgets.task_usd in fetch.yaml)")
    else:
        lines.append("Budgets:")
        if budgets.daily_usd is not None:
            lines.append(f"  today {bar(today.cost, budgets.daily_usd)}")
        if budgets.task_usd is not None:
            if task is not None:
                spent = (await usage.total(0, task=task)).cost
                lines.append(f"  task #{task} {bar(spent, budgets.task_usd)}")
            else:
                lines.append(f"  per task: {money(budgets.task_usd)}")
        refused = ledger.refusal(task)
        if refused:
            lines.append(f"🛑 {refused}")
    week_models = await usage.by_model(week_start(at, tz))
    unpriced = sorted(m.key for m in week_models if m.key and not ledger.prices.priced(m.key))
    if unpriced:
        lines.append(
            f"❔ Unpriced (counted as $0): {', '.join(unpriced)}; add them under prices: "
            "in fetch.yaml"
        )
    return "\n".join(lines)
