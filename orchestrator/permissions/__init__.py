"""Who may do what: subjects and profiles (model.py), the rules' one resolution order
(resolver.py), grants (grants.py), asks (asks.py), settings in layers (layers.py) and
the application's door to all of it (service.py). docs/permissions.md tells the story.

Nothing is imported here: ``orchestrator/config.py`` reads ``settings.py`` and must stay
light (no SQLite driver for reading a config file)."""
