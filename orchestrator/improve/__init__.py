"""Self-improvement: Fetch proposes changes to itself as pull requests; a person merges
them (see ``service.py`` for the run, ``docs/ARCHITECTURE.md`` for the map)."""
