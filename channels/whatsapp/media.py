"""What media Fetch accepts from WhatsApp: the channels' shared rules (``channels/media.py``)."""

from __future__ import annotations

from channels.media import (
    ACCEPTED,
    DEFAULT_MIME,
    base_mime,
    kind_of,
    media_dir,
    megabytes,
    problem,
    save,
)

__all__ = [
    "ACCEPTED",
    "DEFAULT_MIME",
    "base_mime",
    "kind_of",
    "media_dir",
    "megabytes",
    "problem",
    "save",
]
