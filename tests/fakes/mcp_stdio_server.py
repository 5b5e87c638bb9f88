"""A real MCP server over stdio (the ``mcp`` package's), for the tests of the owner's
servers (orchestrator/mcphost/): tools that answer, wait, flood, fail and reach out.

Run as ``python mcp_stdio_server.py [--garbage]``; ``--garbage`` writes a line that is
not JSON-RPC before serving. ``FAKE_SECRET`` from the environment is what ``secret``
returns (the server has it; a kennel never does)."""

from __future__ import annotations

import asyncio
import os
import sys
import urllib.request

from mcp.server.mcpserver import MCPServer

server = MCPServer("fake")


@server.tool()
def echo(text: str) -> str:
    """Say it back."""
    return f"echo: {text}"


@server.tool()
async def slow(seconds: float) -> str:
    """Wait, then answer."""
    await asyncio.sleep(seconds)
    return "slept"


@server.tool()
def big(kb: int) -> str:
    """An answer of ``kb`` KB."""
    return "x" * (kb * 1024)


@server.tool()
def secret() -> str:
    """The secret from the environment."""
    return os.environ.get("FAKE_SECRET", "none")


@server.tool()
def fetch_url(url: str) -> str:
    """GET a URL (through HTTP_PROXY when set)."""
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return f"{answer.status} {answer.read(200).decode()}"
    except Exception as err:
        return f"failed: {err}"


@server.tool()
def crash() -> str:
    """Print garbage where JSON-RPC belongs, then die mid-call."""
    sys.stdout.write("}}} not json-rpc {{{\n")
    sys.stdout.flush()
    os._exit(7)


@server.tool()
def whoami() -> str:
    """The uid this server runs as, and whether it sees a path."""
    return f"uid={os.getuid()} home_visible={os.path.exists(os.environ.get('PROBE', '/x'))}"


if __name__ == "__main__":
    if "--garbage" in sys.argv:
        sys.stdout.write("this is not json-rpc\n")
        sys.stdout.flush()
    if "--die" in sys.argv:
        sys.stderr.write("fake: cannot start: no database\n")
        sys.exit(3)
    server.run("stdio")
