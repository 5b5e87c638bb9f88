"""What a ``@pytest.mark.real`` test needs from the machine (a binary, Docker, bwrap, root).

Locally a missing part skips the test; under ``CI=true`` it fails it, because CI is where
"it was not installed" must not pass as green.
"""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest


def missing(why: str, *, ci_must: str = "provide") -> NoReturn:
    """A real part is missing: skip locally, fail under ``CI=true``."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{why}; CI must {ci_must} it", pytrace=False)
    pytest.skip(why)


def require_binary(name: str) -> str:
    """The absolute path of ``name`` on PATH; skip (locally) or fail (CI=true) if absent."""
    path = shutil.which(name)
    if path is not None:
        return path
    missing(f"{name!r} is not installed (not on PATH)", ci_must="install")
