"""Where the shipped defaults are: the top-level ``data/`` folder of the source tree,
installed as the package ``fetch_data`` (setup.py maps the name to the folder, so a wheel,
``pipx install .`` and an editable install all carry it).

A checkout uses the folder beside its own packages first (the files of the code that
runs, whatever an editable install points at); an install, its ``fetch_data``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from core.errors import ConfigError


def _locate() -> Path:
    # The data of the very source tree this code runs from, when it is a checkout: the
    # same files as the code (an editable install elsewhere, or one another user cannot
    # read, never decides); else the installed package's.
    checkout = Path(__file__).resolve().parents[1] / "data"
    if (checkout / "identity").is_dir() and (checkout / "web").is_dir():
        return checkout
    try:
        # Installs are unpacked (never zipped), so the resource folder is a real Path.
        return Path(str(resources.files("fetch_data")))
    except (ImportError, OSError):
        raise ConfigError(
            "fetch_data", "", "Fetch's shipped data is missing: reinstall Fetch"
        ) from None


SHIPPED_DATA = _locate()
WEB_DATA = SHIPPED_DATA / "web"

__all__ = ["SHIPPED_DATA", "WEB_DATA"]
