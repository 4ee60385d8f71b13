"""Tools an agent can call from inside an episode: Python, search, MCP; and the wrapper that adds them.

:class:`ToolCall` (a call read from an action) and :class:`ToolResult` (what running it gave) are
the types tools and ``ToolEnvWrapper`` exchange; see :mod:`gem.tools.types`.
"""

from gem.tools.types import ToolCall, ToolResult

__all__ = ["ToolCall", "ToolResult"]
