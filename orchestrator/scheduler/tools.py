"""The scheduler's tools for the orchestrator model."""

from __future__ import annotations

from orchestrator.tools import ToolRegistry


def register_tools(registry: ToolRegistry) -> None:
    return None
