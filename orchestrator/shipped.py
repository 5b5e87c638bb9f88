"""Where the shipped defaults are: the top-level ``data/`` folder of the source tree,
installed as the package ``fetch_data`` (setup.py maps the name to the folder, so a wheel,
``pipx install .`` and an editable install all carry it).

A checkout used without installing it again since ``data/`` moved (an older editable
install does not know ``fetch_data``) still finds the folder beside the packages.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from core.errors import ConfigError


def _locate() -> Path:
    try:
        # Installs are unpacked (never zipped), so the resource folder is a real Path.
        return Path(str(resources.files("fetch_data")))
    except ModuleNotFoundError:
        checkout = Path(__file__).resolve().parents[1] / "data"
        if (checkout / "identity").is_dir():
            return checkout
        raise ConfigError(
            "fetch_data", "", "Fetch's shipped data is missing: reinstall Fetch"
        ) from None


SHIPPED_DATA = _locate()
WEB_DATA = SHIPPED_DATA / "web"

__all__ = ["SHIPPED_DATA", "WEB_DATA"]
