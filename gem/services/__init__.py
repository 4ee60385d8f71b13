"""Servers that GEM's tools talk to, each run as its own process.

- :mod:`gem.services.search`: the search backends behind ``SearchTool`` (a local corpus with BM25
  or dense retrieval, and proxies to SerpAPI and Google Custom Search), one HTTP interface.
- :mod:`gem.services.mcp`: a small MCP server (calculator, notebook, clock) and the original GEM's
  sample time server, for ``MCPTool``.

Nothing here is imported by ``import gem``.
"""
