"""The former path of :mod:`gem.services.mcp.time_mcp`; the same module."""

import sys

from gem.services.mcp import time_mcp as _module

if __name__ == "__main__":  # python -m gem.tools.mcp_server.time_mcp
    raise SystemExit(_module.main())
sys.modules[__name__] = _module
