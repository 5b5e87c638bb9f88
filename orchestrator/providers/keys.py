"""The keys of one provider: used in turn, a key answered 401 is parked for good.

A key is only ever shown masked (``sk-a…9f2c``): logs, /status and errors name a key
without giving it away.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def masked(key: str) -> str:
    if len(key) <= 8:
        return "…" + key[-2:] if len(key) > 4 else "…"
    return f"{key[:4]}…{key[-4:]}"


class KeyRing:
    def __init__(self, provider: str, keys: tuple[str, ...]) -> None:
        self.provider = provider
        self._keys = list(keys) or [""]  # '' : an endpoint that takes no key
        self._at = 0
        self.parked: dict[str, str] = {}  # key -> why (said once)

    @property
    def live(self) -> list[str]:
        return [k for k in self._keys if k not in self.parked]

    def current(self) -> str | None:
        """The key to use now; None when every key is parked."""
        live = self.live
        if not live:
            return None
        key = self._keys[self._at % len(self._keys)]
        if key in self.parked:
            key = live[0]
            self._at = self._keys.index(key)
        return key

    def rotate(self) -> bool:
        """Move to the next live key; False when there is no other."""
        live = self.live
        current = self.current()
        others = [k for k in live if k != current]
        if not others:
            return False
        order = self._keys[self._at + 1 :] + self._keys[: self._at + 1]
        nxt = next(k for k in order if k in others)
        self._at = self._keys.index(nxt)
        return True

    def park(self, key: str, why: str) -> None:
        if key in self.parked:
            return
        self.parked[key] = why
        number = self._keys.index(key) + 1
        log.warning(
            "model provider %s: key %d (%s) parked: %s; %d of %d keys left",
            self.provider,
            number,
            masked(key),
            why,
            len(self.live),
            len(self._keys),
        )

    def label(self, key: str) -> str:
        """How an error names a key, as a prefix: its place and its masked form ('' when
        the provider has just one key: there is nothing to tell apart)."""
        if len(self._keys) < 2:
            return ""
        return f"key {self._keys.index(key) + 1} ({masked(key)}) "

    def status(self) -> str | None:
        """A line for /status when a key is parked, else None."""
        if not self.parked:
            return None
        parked = ", ".join(
            f"{self.label(k).strip() or 'its key'}: {why}" for k, why in self.parked.items()
        )
        return f"{self.provider}: {len(self.live)} of {len(self._keys)} keys usable ({parked})"
