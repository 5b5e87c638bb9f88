"""/remind, /schedule, /cron."""

from __future__ import annotations

from instincts.router import InstinctRouter

router = InstinctRouter("schedule")
