"""The orchestrator model's endpoints: a chain with fallback, keys rotated, backoff
that honours Retry-After (``chain.py``); its settings (``settings.py``)."""
