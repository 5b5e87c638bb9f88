"""Reminders and recurring jobs: SQLite job store, leased claims, one run per slot."""

from orchestrator.scheduler.service import Scheduler
from orchestrator.scheduler.tools import register_tools

__all__ = ["Scheduler", "register_tools"]
