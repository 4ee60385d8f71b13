"""The former path of :mod:`gem.services.mcp.server`; the same module."""

import sys

from gem.services.mcp import server as _module

sys.modules[__name__] = _module
