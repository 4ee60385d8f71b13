"""The former path of :mod:`gem.services.mcp` (the bundled MCP server);
``python -m gem.tools.mcp_server`` still runs it."""

from gem.services.mcp import build_server, main

__all__ = ["build_server", "main"]
