"""neonize must be imported through ``_neonize`` first (it undoes neonize's import-time
side effects)."""

from __future__ import annotations

import channels.whatsapp._neonize  # noqa: F401  (import for its side effect)
