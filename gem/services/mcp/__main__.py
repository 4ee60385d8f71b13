"""``python -m gem.services.mcp --transport stdio|http --port N``."""

from gem.services.mcp.server import main

if __name__ == "__main__":
    raise SystemExit(main())
