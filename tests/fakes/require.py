"""Find an external binary a ``@pytest.mark.real`` test needs.

Locally a missing binary skips the test; under ``CI=true`` it fails it, because CI is where
"it was not installed" must not pass as green.
"""

from __future__ import annotations

import os
import shutil

import pytest


def require_binary(name: str) -> str:
    """The absolute path of ``name`` on PATH; skip (locally) or fail (CI=true) if absent."""
    path = shutil.which(name)
    if path is not None:
        return path
    message = f"{name!r} is not installed (not on PATH)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{message}; CI must install it", pytrace=False)
    pytest.skip(message)
