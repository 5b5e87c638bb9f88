"""Where relay sockets live: short paths, because a unix socket path is capped at 108
bytes and FETCH_HOME can be deep (tests, home folders on network mounts)."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


def run_dir(home: Path, base: Path | None = None) -> Path:
    """``base`` (FETCH_RUN_DIR, e.g. a volume shared with the Docker host) or the tmp dir."""
    digest = hashlib.sha256(str(home).encode()).hexdigest()[:10]
    path = (base or Path(tempfile.gettempdir())) / f"fetch-{digest}"
    path.mkdir(mode=0o711, exist_ok=True)
    os.chmod(path, 0o711)  # others may enter (the kennel's uid) but not list
    return path
