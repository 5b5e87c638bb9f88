"""The owner's own MCP servers, run by Fetch on the host and offered to every coding CLI
through the relay (issue 24): settings, the host side (upstream.py), the kennel side
(gateway.py), their lifecycle (service.py)."""
