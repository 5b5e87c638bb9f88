"""The real key taken out of whatever the vendor sends back to the kennel.

A vendor may echo the credential it was given (an error quoting the request, a debugging
header), and the kennel must never see it. Headers are scrubbed whole; a streamed body is
scrubbed as it passes, and a key split across two chunks is caught too: the end of a
chunk that could be the start of the key is held back until the next chunk says whether
it is. Only such a possible start is held (usually nothing: an SSE event ends in a blank
line), so a stream is not delayed by a fixed tail.
"""

from __future__ import annotations

REDACTED = "[redacted]"
# No vendor key is shorter; a shorter "key" (a test's "k") would be cut out of every word.
MIN_KEY = 8


class Scrubber:
    def __init__(self, key: str | None) -> None:
        self._key = key.encode() if key and len(key) >= MIN_KEY else b""
        self._held = b""

    def text(self, value: str) -> str:
        """A header value (or any whole string) without the key."""
        return value.replace(self._key.decode(), REDACTED) if self._key else value

    def feed(self, chunk: bytes) -> bytes:
        """What may be sent of ``chunk`` now (the key replaced); the rest is held."""
        if not self._key:
            return chunk
        data = (self._held + chunk).replace(self._key, REDACTED.encode())
        keep = self._partial(data)
        self._held = data[len(data) - keep :]
        return data[: len(data) - keep]

    def close(self) -> bytes:
        """The end of the stream: what was held was not the key after all."""
        held, self._held = self._held, b""
        return held

    def _partial(self, data: bytes) -> int:
        """The length of the longest end of ``data`` that is a proper start of the key."""
        for size in range(min(len(self._key) - 1, len(data)), 0, -1):
            if data.endswith(self._key[:size]):
                return size
        return 0


class Scrubbers:
    """Several secrets taken out (a sign-in has an access, a refresh and an id token):
    one ``Scrubber`` after another."""

    def __init__(self, *keys: str | None) -> None:
        self._each = [Scrubber(k) for k in dict.fromkeys(keys) if k]

    def text(self, value: str) -> str:
        for one in self._each:
            value = one.text(value)
        return value

    def feed(self, chunk: bytes) -> bytes:
        for one in self._each:
            chunk = one.feed(chunk)
        return chunk

    def close(self) -> bytes:
        out = b""
        for one in self._each:
            out = one.feed(out) + one.close()
        return out


__all__ = ["REDACTED", "Scrubber", "Scrubbers"]
