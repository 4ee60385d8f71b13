"""The original GEM's MCPTool names: ``get_available_tools``, ``_get_server_names`` and
``_is_multi_server``.

:func:`mcp_tool_compat` gives :class:`gem.tools.mcp_tool.MCPTool` those names on top of its own
``servers`` (name -> server) and ``list_tools()``.
"""

from __future__ import annotations

from typing import Any

from gem.compat.attach import decorator


class MCPToolNames:
    """The names :func:`mcp_tool_compat` adds (see the module docstring).

    The class given them holds ``servers`` and implements ``list_tools()`` (each tool's ``name``,
    ``description``, ``parameters`` and ``server``).
    """

    def get_available_tools(self) -> list[dict[str, Any]]:
        """Each tool of :meth:`list_tools` with its ``server_info`` (``is_multi_server``,
        ``servers``, ``detected_server``)."""
        multi, names = self._is_multi_server(), self._get_server_names()
        return [
            {**tool, "server_info": {"is_multi_server": multi, "servers": names, "detected_server": tool["server"]}}
            for tool in self.list_tools()  # type: ignore[attr-defined]
        ]

    def _get_server_names(self) -> list[str]:
        """The configured servers' names (``["default"]`` for a URL or a single server)."""
        return list(self.servers)  # type: ignore[attr-defined]

    def _is_multi_server(self) -> bool:
        return len(self.servers) > 1  # type: ignore[attr-defined]


mcp_tool_compat = decorator(MCPToolNames)
