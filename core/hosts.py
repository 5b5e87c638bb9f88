"""Which host names stay on this machine: the web listener refuses to serve the dashboard
elsewhere without saying so, and /improve allows plain http only to such an address."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
