"""The web dashboard: server-rendered pages over what Fetch records (the store, the
session journals, the usage ledger, the scheduler, memory, the channels' health), on the
one HTTP listener, behind the web token. See ``routes.py`` for every page."""

from orchestrator.dashboard.routes import ACTIONS, PAGES, ROUTES, mount

__all__ = ["ACTIONS", "PAGES", "ROUTES", "mount"]
