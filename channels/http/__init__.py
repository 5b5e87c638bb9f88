"""The one HTTP listener: channels (Telegram webhook, the generic webhook) and, later, the
dashboard register their routes on a single ``HttpServer``."""

from channels.http.server import Handler, HttpServer

__all__ = ["Handler", "HttpServer"]
