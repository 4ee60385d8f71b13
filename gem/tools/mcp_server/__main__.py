"""``python -m gem.tools.mcp_server``: the former path of ``python -m gem.services.mcp``."""

from gem.services.mcp.server import main

if __name__ == "__main__":
    raise SystemExit(main())
