"""MCP server configuration: a URL, one server's dict, or ``{"mcpServers": {...}}`` as one validated form.

See :mod:`gem.tools.mcp_tool` for the accepted shapes.
"""

from __future__ import annotations

from typing import Any, Optional, Union

_HTTP_TRANSPORTS = ("http", "streamable-http", "streamable_http")
_TRANSPORTS = ("stdio",) + _HTTP_TRANSPORTS

ServerConfig = dict[str, Any]


def auth_headers(auth: Any, headers: Optional[dict[str, str]] = None) -> dict[str, str]:
    """``headers`` plus ``Authorization: Bearer <token>`` for ``auth`` (a token string, or an object
    with a ``token`` attribute such as FastMCP's ``BearerAuth``)."""
    out = dict(headers or {})
    if auth is None:
        return out
    token = auth if isinstance(auth, str) else getattr(auth, "token", None)
    if hasattr(token, "get_secret_value"):
        token = token.get_secret_value()
    if not isinstance(token, str) or not token:
        raise ValueError(f"auth must be a bearer token string (or have a .token), got {type(auth).__name__}.")
    out["Authorization"] = f"Bearer {token}"
    return out


def normalize_config(config: Union[str, dict[str, Any]], headers: Optional[dict[str, str]] = None) -> dict[str, ServerConfig]:
    """``config`` as ``{server name: {"transport": ..., ...}}``, validated.

    Raises ``ValueError`` saying what is wrong (an unknown transport, a stdio server without a
    command, an HTTP server without a URL).
    """
    if isinstance(config, str):
        servers: dict[str, Any] = {"default": {"url": config}}
    elif isinstance(config, dict) and "mcpServers" in config:
        servers = config["mcpServers"]
        if not isinstance(servers, dict) or not servers:
            raise ValueError('"mcpServers" must be a non-empty dict of {name: server config}.')
    elif isinstance(config, dict):
        servers = {"default": config}
    else:
        raise ValueError(
            f"MCPTool config must be a URL string or a dict (one server, or {{'mcpServers': {{...}}}}), "
            f"got {type(config).__name__}."
        )
    out: dict[str, ServerConfig] = {}
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            raise ValueError(f"MCP server {name!r}: its config must be a dict, got {type(entry).__name__}.")
        entry = dict(entry)
        transport = entry.get("transport") or ("stdio" if "command" in entry else "http")
        if transport not in _TRANSPORTS:
            raise ValueError(f"MCP server {name!r}: unknown transport {transport!r}; use one of {', '.join(_TRANSPORTS)}.")
        if transport == "stdio":
            if not isinstance(entry.get("command"), str) or not entry["command"]:
                raise ValueError(f"MCP server {name!r}: a stdio server needs a 'command' (the executable).")
            args = entry.get("args", [])
            if not isinstance(args, (list, tuple)) or not all(isinstance(a, str) for a in args):
                raise ValueError(f"MCP server {name!r}: 'args' must be a list of strings.")
            out[name] = {"transport": "stdio", "command": entry["command"], "args": list(args),
                         "env": entry.get("env"), "cwd": entry.get("cwd")}
        else:
            url = entry.get("url")
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise ValueError(f"MCP server {name!r}: an HTTP server needs a 'url' starting with http:// or https://, got {url!r}.")
            server_headers = {**(headers or {}), **(entry.get("headers") or {})}
            out[name] = {"transport": "http", "url": url, "headers": server_headers}
    return out
