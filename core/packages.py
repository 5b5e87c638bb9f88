"""The top-level packages Fetch installs (pyproject's ``packages``): the sandbox binds them
read-only for the demo CLI, and /improve proves they are byte-identical after a run."""

from __future__ import annotations

PACKAGES = (
    "core",
    "channels",
    "orchestrator",
    "instincts",
    "harnesses",
    "identity",
    "skills",
    "kennel",
)
