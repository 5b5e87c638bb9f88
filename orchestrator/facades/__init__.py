"""The application's side of the instincts' contract (instincts/contract.py): one facade
per instinct family that has no subsystem package of its own (the scheduler's and
memory's live in ``orchestrator/scheduler/facade.py`` and ``orchestrator/memory/facade.py``).
``orchestrator/services.py`` builds them; ``Context`` hands them to the handlers."""
