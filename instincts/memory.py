"""/remember, /memory, /forget."""

from __future__ import annotations

from instincts.router import InstinctRouter

router = InstinctRouter("memory")
