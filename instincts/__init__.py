"""Deterministic slash commands, one family per module, included in this order."""

from instincts.router import InstinctRegistry


def build_registry() -> InstinctRegistry:
    from instincts import (
        blocks,
        control,
        cost,
        grants,
        harness,
        help,
        identity,
        improve,
        link,
        memory,
        model,
        schedule,
        session,
        skills,
        status,
        undo,
        workspace,
    )

    registry = InstinctRegistry()
    for router in (
        help.router,
        status.router,
        control.router,
        session.router,
        undo.router,
        workspace.router,
        harness.router,
        model.router,
        link.router,
        schedule.router,
        memory.router,
        grants.router,
        skills.router,
        cost.router,
        improve.router,
        blocks.router,
        identity.router,
    ):
        registry.include(router)
    return registry


__all__ = ["build_registry"]
