"""Push notifications through ntfy: one HTTP POST per message to the configured topic URL.

Best effort by design: a push is a copy of what already went to the owner's chat, so a
failed push is logged and never fails or retries the job.
"""

from __future__ import annotations

import logging

import aiohttp

log = logging.getLogger(__name__)


class Ntfy:
    def __init__(self, url: str, timeout: float = 10.0) -> None:
        self.url = url
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None
        self.sent = 0
        self.failed = 0

    async def push(self, title: str, text: str, tags: str = "alarm_clock") -> bool:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        # ntfy reads the body as the message and these headers as its decorations;
        # header values must be latin-1, so the title is kept to ASCII.
        headers = {"Title": title.encode("ascii", "replace").decode(), "Tags": tags}
        try:
            async with self._session.post(self.url, data=text.encode(), headers=headers) as resp:
                if resp.status >= 300:
                    raise aiohttp.ClientError(f"HTTP {resp.status}")
        except (aiohttp.ClientError, TimeoutError) as err:
            self.failed += 1
            log.warning("ntfy push to %s failed: %s", self.url, err)
            return False
        self.sent += 1
        return True

    async def close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()
