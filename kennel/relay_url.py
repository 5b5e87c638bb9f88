"""Where a relayed request goes: the configured upstream, and nowhere else.

The request target comes from the kennel (hostile). It is taken only as a path and a
query, checked, and placed under the upstream's scheme, host and port with ``URL.build``:
nothing in it can become a host, a port or user info. Absolute URLs, ``//host``, dot
segments (also percent-encoded, also twice), backslashes, control characters and
fragments are refused before any byte leaves the relay.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from yarl import URL

# RFC 3986 pchar plus "/" and "%": anything else in a raw path is a trick, not an API call.
_PATH_CHARS = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/%]*")
_QUERY_CHARS = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/%?]*")


class BadTarget(ValueError):
    """The kennel asked for something that is not a path on the upstream."""


def upstream_base(upstream: str) -> URL:
    base = URL(upstream.rstrip("/"))
    if base.scheme not in ("http", "https") or not base.host:
        raise ValueError(f"the relay's upstream must be an http(s) URL, not {upstream!r}")
    if base.user or base.password or base.query_string or base.fragment:
        raise ValueError(f"the relay's upstream must be a plain base URL, not {upstream!r}")
    return base


def join(base: URL, raw_target: str) -> URL:
    """``base`` + the kennel's request target (origin form only), or ``BadTarget``."""
    if not raw_target.startswith("/") or raw_target.startswith("//"):
        raise BadTarget("only a path is accepted (no absolute URL, no //host)")
    path, _, query = raw_target.partition("?")
    if "#" in raw_target:
        raise BadTarget("fragments are not sent")
    if not _PATH_CHARS.fullmatch(path) or not _QUERY_CHARS.fullmatch(query):
        raise BadTarget("unexpected characters in the path")
    decoded = path
    for _ in range(3):  # %252e%252e is %2e%2e is ..: whoever decodes next must not see it
        decoded = unquote(decoded)
    if any(c in decoded for c in "\\\x00\r\n\t") or any(
        seg.split(";", 1)[0] in (".", "..") for seg in decoded.split("/")
    ):  # ..;/ too
        raise BadTarget("dot segments, backslashes or control characters in the path")
    url = URL.build(
        scheme=base.scheme,
        host=base.raw_host or "",
        port=base.explicit_port,
        path=base.raw_path.rstrip("/") + path,
        query_string=query,
        encoded=True,
    )
    # Belt and braces: whatever yarl made of it, the key goes to this origin only.
    if (url.scheme, url.host, url.port) != (base.scheme, base.host, base.port) or url.user:
        raise BadTarget("the request would leave the configured upstream")
    return url


__all__ = ["BadTarget", "join", "upstream_base"]
