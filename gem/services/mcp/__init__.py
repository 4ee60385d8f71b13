"""A small MCP server shipped with GEM: a calculator, a key-value notebook and a clock.

It exists so that :class:`gem.tools.mcp_tool.MCPTool` can be used, tested and benchmarked offline.
Run it over stdio or streamable HTTP::

    python -m gem.services.mcp --transport stdio
    python -m gem.services.mcp --transport http --host 127.0.0.1 --port 8765   # at /mcp

``build_server()`` returns the server object (needs the ``mcp`` extra).
"""

from gem.services.mcp.server import build_server, main

__all__ = ["build_server", "main"]
