"""Memory: persistent facts and archival chunks, hybrid search, MCP for the harnesses."""

from orchestrator.memory.service import Memory
from orchestrator.memory.tools import register_tools

__all__ = ["Memory", "register_tools"]
