"""``HttpServer``: one aiohttp listener, bound to ``settings.http`` (loopback by default).

Routes are added before ``start()`` (aiohttp freezes its router when the server starts),
so the composition root builds the server, hands it to each channel's constructor, starts
the channels, then starts the server; ``stop()`` runs first on the way down so no request
reaches a channel that is already stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from types import TracebackType

from aiohttp import web

from channels.http_settings import HttpSettings
from core.errors import ConfigError
from core.hosts import is_loopback

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
ShutdownHook = Callable[[], Awaitable[None]]


class HttpServer:
    def __init__(
        self,
        settings: HttpSettings,
        *,
        client_max_size: int = 1024 * 1024,
        shutdown_timeout: float = 2.0,
    ) -> None:
        self._settings = settings
        self._app = web.Application(client_max_size=client_max_size)
        self._shutdown_timeout = shutdown_timeout
        self._routes: set[tuple[str, str]] = set()
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    def add_route(self, method: str, path: str, handler: Handler) -> None:
        if self._runner is not None:
            raise RuntimeError(f"route {method} {path} added after the HTTP server started")
        key = (method.upper(), path)
        if key in self._routes:
            raise ValueError(f"route {method.upper()} {path} registered twice")
        self._routes.add(key)
        self._app.router.add_route(method, path, handler)

    def on_shutdown(self, hook: ShutdownHook) -> None:
        """Run ``hook`` when stopping, before in-flight requests are awaited: long-polls
        use it to answer at once instead of holding the shutdown for their full wait."""

        async def call(_app: web.Application) -> None:
            await hook()

        self._app.on_shutdown.append(call)

    @property
    def routes(self) -> list[tuple[str, str]]:
        return sorted(self._routes)

    @property
    def listening(self) -> bool:
        return self._runner is not None

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("HTTP server is not started")
        return self._port

    @property
    def url(self) -> str:
        host = self._settings.host
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.port}"

    async def start(self) -> None:
        if self._runner is not None or self._app.frozen:
            raise RuntimeError("HTTP server already started (it cannot be restarted)")
        host, port = self._settings.host, self._settings.port
        runner = web.AppRunner(self._app, access_log=None, shutdown_timeout=self._shutdown_timeout)
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port).start()
        except OSError as err:
            await runner.cleanup()
            raise ConfigError(
                "http",
                "host/port",
                f"an address Fetch can listen on; {host}:{port} failed ({err.strerror or err})",
            ) from err
        self._runner = runner
        self._port = next(a[1] for a in runner.addresses if isinstance(a, tuple))
        if not is_loopback(host):
            # Not an error (a reverse proxy on another box needs it) but never a surprise.
            log.warning("HTTP listener on %s:%d is reachable from the network", host, self._port)
        log.info("HTTP listener on %s (%d routes)", self.url, len(self._routes))

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> HttpServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
