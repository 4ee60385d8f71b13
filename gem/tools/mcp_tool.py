"""``MCPTool``: call the tools of one or several MCP servers from inside an episode.

It speaks the Model Context Protocol through the official ``mcp`` SDK (``pip install -e ".[mcp]"`` in the GEM checkout),
over stdio (the tool starts the server as a child process) or streamable HTTP (a running server).

**Configuration** (``config``):

* a URL string: ``"http://127.0.0.1:8765/mcp"`` (streamable HTTP);
* one server as a dict: ``{"command": "python", "args": ["-m", "gem.services.mcp"]}`` (stdio) or
  ``{"url": "http://...", "headers": {...}}`` (HTTP); ``"transport"`` may be given explicitly
  (``"stdio"``, ``"http"`` or ``"streamable-http"``), otherwise ``command`` means stdio and ``url`` HTTP;
* several servers in the common ``{"mcpServers": {"name": {...}, ...}}`` format. With more than one
  server every tool name is prefixed with its server's name: ``"<server>_<tool>"``.

**Calling format** (what the model writes; the instructions show it):

``<tool_call>{"name": "calculate", "arguments": {"expression": "2 + 3"}}</tool_call>``

``arguments`` must be a JSON object (an OpenAI-style JSON *string* holding an object is accepted too);
``"parameters"`` is accepted for ``"arguments"``. GEM's XML form
``<tool_call><tool_name>calculate</tool_name><arguments>{...}</arguments></tool_call>`` is accepted as
well. Only the first ``<tool_call>`` of an action is run; the text after its closing tag is dropped.
A model that calls functions natively gets every listed tool as an OpenAI ``tools`` entry
(:meth:`MCPTool.openai_schemas`); its call arrives as the whole action
(``{"name": "calculate", "arguments": {...}}``). Both forms are read by
:mod:`gem.tools.function_call`.

**Behaviour.** Every action that contains ``<tool_call>`` is a tool call. A call that is malformed
(no closing tag, bad JSON, an unknown tool), that the server rejects, that times out, or whose
server is unreachable gives ``has_error=True`` and an observation that says what went wrong; it never
raises into the episode. The observation is the tool's output as it is, as the original GEM's main
branch returns it; ``wrap_observation=True`` wraps it in ``\\n<tool_response>\\n...\\n</tool_response>\\n``
as gem-llm 0.1.0 did.

**Sessions.** The SDK is asynchronous: each ``MCPTool`` runs a private event loop in a background
thread and its synchronous methods submit work to it, so they may be called from any thread. A
session (and for stdio, the server process) is opened at the first call of an episode and kept
for the whole episode; a session that cannot be opened, or that breaks, is retried ``max_retries``
times, ``delay_between_retries`` seconds apart; ``reset()`` closes it, so the next episode starts with a fresh server-side
state (``session_per_episode=False`` keeps one session for the tool's life instead); the new
session is opened in the background right after ``reset()`` (``prefetch_sessions``). A session
whose server went away is reopened at the next call. ``close()`` ends everything. A server that
cannot be reached, or whose connection is lost, is an infrastructure failure: besides the error
observation it is recorded for ``info["infra_error"]``.

The machinery lives in its own modules: :mod:`gem.tools.mcp_config` (configurations),
:mod:`gem.tools.mcp_session` (the event loop and sessions); the names are importable from here too.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import weakref
from typing import Any, Callable, Optional, Union

from gem.compat.mcp_tool import mcp_tool_compat
from gem.errors import ResourceUnavailable, missing_extra
from gem.tools.base_tool import BaseTool
from gem.tools.function_call import CLOSE_TAG, MAX_CALL_CHARS, OPEN_TAG, parse_tool_call, read_function_call
from gem.tools.mcp_config import ServerConfig, auth_headers, normalize_config
from gem.tools.types import ToolCall, ToolResult
from gem.tools.mcp_session import (
    CLOSE_TIMEOUT_S,
    _Connection,
    _describe_error,
    _is_connection_lost,
    _LoopThread,
    _progress_callback,
    _session_callbacks,
    _shutdown,
    is_timeout_error,
)
from gem.utils.text import clean_text, preview

__all__ = [
    "MCPConnectionError", "MCPTool", "auth_headers", "is_timeout_error", "normalize_config", "parse_tool_call",
    "MAX_CALL_CHARS", "OPEN_TAG", "CLOSE_TAG", "CLOSE_TIMEOUT_S", "ServerConfig",
]

logger = logging.getLogger(__name__)

DEFAULT_EXECUTION_TIMEOUT_S = 30.0
DEFAULT_CONNECT_TIMEOUT_S = 30.0
DEFAULT_MAX_OUTPUT_CHARS = 8000


def _schemas(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Listed tools as OpenAI ``tools`` entries, sorted by name."""
    return [{"type": "function", "function": {k: t[k] for k in ("name", "description", "parameters")}}
            for t in sorted(tools, key=lambda t: t["name"])]


class MCPConnectionError(ResourceUnavailable, ValueError):
    """The MCP server(s) could not be reached or listed no tools (a ``ValueError`` too)."""


def _require_mcp() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError as exc:
        raise missing_extra("MCPTool", "mcp", "mcp") from exc


@mcp_tool_compat
class MCPTool(BaseTool):
    """Tools of MCP servers, callable with ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``.

    The positional order and names of the parameters are the original GEM's (``config, auth,
    headers, log_handler, ...``); the options it did not have are keyword-only.

    Args:
        config: a URL, one server's config dict, or ``{"mcpServers": {...}}`` (see the module doc).
        auth: a bearer token (or an object with ``.token``) sent as ``Authorization`` to HTTP servers.
        headers: HTTP headers for every HTTP server (e.g. ``{"X-Api-Key": "..."}``).
        log_handler: called with each log message a server sends (``LoggingMessageNotificationParams``).
        progress_handler: called as ``(progress, total, message)`` while a tool call reports progress.
        sampling_handler: answers a server's request for an LLM completion: called as
            ``(messages, params, context)``, returns the text (sync or async).
        max_retries: tries to open a session, or to run a call whose connection broke, before giving up.
        delay_between_retries: seconds between those tries.
        execution_timeout: seconds a tool call may take before it is reported as timed out.
        validate_on_init: connect and list the tools now, raising :class:`MCPConnectionError` if that fails.
        num_workers: kept for GEM compatibility.
        connect_timeout: seconds to open a session (start a stdio server, reach an HTTP one).
        session_per_episode: reopen sessions at every ``reset()`` (fresh server state per episode).
        max_output_chars: longer results are cut, with a note saying how much was left out.
        server_stderr: where stdio servers write their stderr (default: discarded).
        prefetch_sessions: after ``reset()``, open the new sessions in the background, so starting
            a stdio server overlaps with the agent's first turn instead of delaying its first call
            (it costs a server start per episode even when the agent makes no call).
        wrap_observation: wrap results in ``<tool_response>`` tags as gem-llm 0.1.0 did (default:
            the raw result, as the original's main branch).
    """

    tool_type = "mcp"

    def __init__(
        self,
        config: Union[str, dict[str, Any]],
        auth: Any = None,
        headers: Optional[dict[str, str]] = None,
        log_handler: Optional[Callable[..., Any]] = None,
        progress_handler: Optional[Callable[..., Any]] = None,
        sampling_handler: Optional[Callable[..., Any]] = None,
        max_retries: int = 3,
        delay_between_retries: float = 1.0,
        execution_timeout: float = DEFAULT_EXECUTION_TIMEOUT_S,
        validate_on_init: bool = True,
        num_workers: int = 1,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
        session_per_episode: bool = True,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
        server_stderr: Any = None,
        prefetch_sessions: bool = True,
        wrap_observation: bool = False,
    ) -> None:
        super().__init__(num_workers)
        _require_mcp()
        for label, value in (("execution_timeout", execution_timeout), ("connect_timeout", connect_timeout)):
            if not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"{label} must be a positive number of seconds, got {value!r}.")
        if not isinstance(max_output_chars, int) or max_output_chars < 1:
            raise ValueError(f"max_output_chars must be a positive int, got {max_output_chars!r}.")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 1:
            raise ValueError(f"max_retries must be an int >= 1 (the number of tries), got {max_retries!r}.")
        if not isinstance(delay_between_retries, (int, float)) or delay_between_retries < 0:
            raise ValueError(f"delay_between_retries must be >= 0 seconds, got {delay_between_retries!r}.")
        self.raw_config = config
        self._auth, self._headers = auth, headers
        self.servers = normalize_config(config, auth_headers(auth, headers))
        self.execution_timeout = float(execution_timeout)
        self.connect_timeout = float(connect_timeout)
        self.max_retries = max_retries
        self.delay_between_retries = float(delay_between_retries)
        self.session_per_episode = session_per_episode
        self.prefetch_sessions = prefetch_sessions
        self.max_output_chars = max_output_chars
        self.wrap_observation = bool(wrap_observation)
        self._log_handler, self._progress_handler, self._sampling_handler = log_handler, progress_handler, sampling_handler
        self._callbacks = _session_callbacks(log_handler, sampling_handler)
        self._own_stderr = server_stderr is None
        self._stderr = open(os.devnull, "w") if server_stderr is None else server_stderr
        self._connections = self._new_connections()
        self._tools: Optional[list[dict[str, Any]]] = None
        self._routes: dict[str, tuple[str, str]] = {}
        self._lock = threading.Lock()
        self._loop = _LoopThread(name=f"gem-mcp-{id(self):x}")
        self._finalizer = weakref.finalize(
            self, _shutdown, self._loop, self._connections, self._stderr if self._own_stderr else None
        )
        self._async_lock: Optional[asyncio.Lock] = None
        if validate_on_init:
            self.list_tools()

    def _new_connections(self) -> dict[str, _Connection]:
        return {name: _Connection(name, server, self._stderr, self._callbacks) for name, server in self.servers.items()}

    # ------------------------------------------------------------------ constructors as GEM
    @classmethod
    def from_url(cls, url: str, auth: Any = None, headers: Optional[dict[str, str]] = None, **kwargs: Any) -> "MCPTool":
        """A tool for one streamable-HTTP server."""
        return cls(url, auth=auth, headers=headers, **kwargs)

    @classmethod
    def from_local_command(cls, server_params: dict[str, Any], name: str = "default", **kwargs: Any) -> "MCPTool":
        """A tool for one stdio server started as ``{"command": ..., "args": [...]}``."""
        return cls({"mcpServers": {name: server_params}}, **kwargs)

    @classmethod
    def from_multi_server(cls, servers: dict[str, str], **kwargs: Any) -> "MCPTool":
        """A tool for several HTTP servers given as ``{name: url}``."""
        return cls({"mcpServers": {name: {"url": url} for name, url in servers.items()}}, **kwargs)

    @classmethod
    def from_config_file(cls, config_path: Optional[str] = None, **kwargs: Any) -> "MCPTool":
        """A tool from a JSON file in the ``{"mcpServers": {...}}`` format (``path=`` is accepted too)."""
        path = kwargs.pop("path", None) if config_path is None else config_path
        if path is None:
            raise TypeError("from_config_file() needs config_path (the JSON file).")
        with open(path, encoding="utf-8") as handle:
            return cls(json.load(handle), **kwargs)

    def fork(self) -> "MCPTool":
        """A tool for the same servers with its own sessions (and event loop); the tool list is reused."""
        clone = MCPTool(
            self.raw_config, self._auth, self._headers, self._log_handler, self._progress_handler,
            self._sampling_handler, self.max_retries, self.delay_between_retries, self.execution_timeout,
            validate_on_init=False, num_workers=self.num_workers, connect_timeout=self.connect_timeout,
            session_per_episode=self.session_per_episode, max_output_chars=self.max_output_chars,
            server_stderr=None if self._own_stderr else self._stderr, prefetch_sessions=self.prefetch_sessions,
            wrap_observation=self.wrap_observation,
        )
        with self._lock:
            if self._tools is not None:
                clone._tools, clone._routes = list(self._tools), dict(self._routes)
        return clone

    def reconfigure(self, new_config: Union[str, dict[str, Any]], auth: Any = None,
                    headers: Optional[dict[str, str]] = None) -> None:
        """Point the tool at other servers (a new URL, a new database...): the sessions close, the
        tool list is listed again at the next use."""
        servers = normalize_config(new_config, auth_headers(auth, headers))
        with self._lock:
            old = list(self._connections.values())
            if not self._loop.loop.is_closed():
                async def close_old() -> None:
                    async with self._lock_for_loop():
                        await asyncio.gather(*(c.close() for c in old), return_exceptions=True)

                self._submit(close_old(), CLOSE_TIMEOUT_S * 2)
            self.raw_config, self._auth, self._headers, self.servers = new_config, auth, headers, servers
            self._connections.clear()  # the same dict: the finalizer closes what it holds at the end
            self._connections.update(self._new_connections())
            self._tools, self._routes = None, {}
        logger.info("MCPTool now uses %s", self._get_server_description())

    # ---------------------------------------------------------------------- async internals
    def _lock_for_loop(self) -> asyncio.Lock:
        if self._async_lock is None:  # created on the loop thread, the only one that uses it
            self._async_lock = asyncio.Lock()
        return self._async_lock

    async def _session(self, server: str) -> Any:
        connection = self._connections[server]
        async with self._lock_for_loop():
            for attempt in range(1, self.max_retries + 1):
                if connection.alive:
                    break
                await connection.close()
                try:
                    await connection.open(self.connect_timeout)
                except Exception as exc:
                    if attempt == self.max_retries or connection.shut:
                        raise
                    logger.debug("opening the MCP session with %r failed (try %d): %s", server, attempt, _describe_error(exc))
                    await asyncio.sleep(self.delay_between_retries)
        return connection.session

    def _patience(self) -> float:
        """Seconds that opening every session may take, retries included."""
        return (self.connect_timeout + self.delay_between_retries) * self.max_retries * len(self._connections) + 5

    async def _list_tools(self) -> list[dict[str, Any]]:
        multi = len(self._connections) > 1
        tools = []
        for server in self._connections:
            session = await self._session(server)
            cursor = None
            while True:
                if cursor is None:
                    result = await session.list_tools()
                else:
                    from mcp import types

                    result = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
                for tool in result.tools:
                    schema = getattr(tool, "input_schema", None) or getattr(tool, "inputSchema", None)
                    tools.append({
                        "name": f"{server}_{tool.name}" if multi else tool.name,
                        "tool": tool.name,
                        "server": server,
                        "description": tool.description or "",
                        "parameters": schema or {"type": "object", "properties": {}},
                    })
                cursor = getattr(result, "next_cursor", None) or getattr(result, "nextCursor", None)
                if not cursor:
                    break
        return tools

    async def _call(self, server: str, tool: str, arguments: dict[str, Any]) -> Any:
        progress = _progress_callback(self._progress_handler)
        for attempt in range(1, self.max_retries + 1):
            session = await self._session(server)
            try:
                return await asyncio.wait_for(
                    session.call_tool(tool, arguments, read_timeout_seconds=self.execution_timeout,
                                      progress_callback=progress),
                    self.execution_timeout,
                )
            except Exception as exc:
                if not _is_connection_lost(exc):
                    raise
                connection = self._connections[server]  # drop the dead session; the next try opens a new one
                async with self._lock_for_loop():
                    if connection.session is session:
                        await connection.close()
                if attempt == self.max_retries:
                    raise
                logger.debug("the MCP connection to %r broke during a call (try %d): %s", server, attempt, _describe_error(exc))
                await asyncio.sleep(self.delay_between_retries)
        raise AssertionError("unreachable")  # the loop returns or raises

    def _submit(self, coro: Any, timeout: float) -> Any:
        return self._loop.submit(coro, timeout)

    # ------------------------------------------------------------------------- public API
    def list_tools(self) -> list[dict[str, Any]]:
        """The servers' tools: ``[{"name", "description", "parameters" (JSON schema), "server"}]``.

        Listed once and cached. Raises :class:`MCPConnectionError` (a ``ResourceUnavailable`` and a
        ``ValueError``) if a server cannot be reached.
        """
        with self._lock:
            if self._tools is None:
                try:
                    tools = self._submit(self._list_tools(), self._patience())
                except Exception as exc:  # noqa: BLE001 -- any failure here means "unreachable"
                    raise MCPConnectionError(
                        f"Could not list the tools of MCP server(s) {self._describe_servers()}: {_describe_error(exc)}. "
                        "Check that the server runs (HTTP) or that its command starts (stdio)."
                    ) from exc
                self._routes = {t["name"]: (t["server"], t["tool"]) for t in tools}
                self._tools = tools
            return list(self._tools)

    def call_tool(self, name: str, arguments: Optional[dict[str, Any]] = None) -> tuple[bool, str]:
        """Call tool ``name`` (as listed by ``list_tools``); returns ``(has_error, text)``. Never raises.

        ``text`` is the tool's output, or the server's error message, or (for failures on this side:
        an unknown tool, a timeout, a lost connection) a message starting with ``Error:``.
        """
        try:
            self.list_tools()
        except ResourceUnavailable as exc:
            self.record_infra_failure(exc)
            return True, f"Error: {exc}"
        route = self._routes.get(name)
        if route is None:
            return True, f"Error: unknown tool {preview(name, 80)!r}; available tools: {', '.join(sorted(self._routes))}"
        try:
            result = self._submit(self._call(route[0], route[1], arguments or {}),
                                  (self.execution_timeout + self.delay_between_retries) * self.max_retries + self._patience())
        except (TimeoutError, asyncio.TimeoutError):
            return True, f"Error: the call to {name} timed out after {self.execution_timeout:g} s"
        except Exception as exc:  # noqa: BLE001 -- a server failure is an observation, not a crash
            if _is_connection_lost(exc):
                self.record_infra_failure(exc)
            return True, f"Error: the call to {name} failed: {preview(_describe_error(exc), 1000)}"
        is_error = bool(getattr(result, "is_error", getattr(result, "isError", False)))
        return is_error, self._render(result)

    def _render(self, result: Any) -> str:
        parts = []
        for item in getattr(result, "content", None) or []:
            kind = getattr(item, "type", "")
            if kind == "text":
                parts.append(item.text)
            elif kind in ("image", "audio"):
                parts.append(f"[{kind} {getattr(item, 'mime_type', getattr(item, 'mimeType', ''))}, {len(item.data)} base64 characters]")
            elif kind == "resource" and hasattr(getattr(item, "resource", None), "text"):
                parts.append(item.resource.text)
            else:
                parts.append(f"[{kind or type(item).__name__} content]")
        structured = getattr(result, "structured_content", getattr(result, "structuredContent", None))
        if not parts and structured is not None:
            parts.append(json.dumps(structured, ensure_ascii=False))
        text = clean_text("\n".join(parts)) if parts else "(no output)"
        if len(text) > self.max_output_chars:
            text = text[: self.max_output_chars] + f"\n... [{len(text) - self.max_output_chars} more characters cut]"
        return text

    def instruction_string(self) -> str:
        """How to call the tools, with each tool's name, description and JSON schema."""
        functions = "\n".join(json.dumps(entry, ensure_ascii=False) for entry in _schemas(self.list_tools()))
        return (
            "You can call the tools listed below. To call one, write exactly one call in this form and "
            f"stop; the result comes back {'in <tool_response></tool_response>' if self.wrap_observation else 'as the next message'}:\n"
            '<tool_call>{"name": "<tool name>", "arguments": {<arguments as a JSON object>}}</tool_call>\n'
            "The arguments must follow the tool's JSON schema. Available tools:\n"
            f"<tools>\n{functions}\n</tools>"
        )

    def openai_schemas(self) -> list[dict[str, Any]]:
        """Every tool of the servers as an OpenAI ``tools`` entry (listing them if needed).

        Empty when the servers cannot be reached (the failure is recorded for ``info["infra_error"]``).
        """
        try:
            tools = self.list_tools()
        except ResourceUnavailable as exc:
            self.record_infra_failure(exc)
            return []
        return _schemas(tools)

    def accepts(self, call: ToolCall) -> bool:
        """Every ``<tool_call>`` (a malformed one or one naming no listed tool gets an error
        observation); a whole-action function call of a listed tool (only once they are listed)."""
        if call.source == "tool_call":
            return True
        return call.native and self._tools is not None and call.name in self._routes

    def has_call(self, action: str) -> bool:
        """Whether ``action`` holds a tool call (well-formed or not), without running anything."""
        return isinstance(action, str) and self.find_call(action, read_function_call(action)) is not None

    def execute_action(self, action: str) -> tuple[bool, bool, str, str]:
        """Run the first ``<tool_call>`` in ``action`` (or the function call that the whole action is)."""
        return super().execute_action(action if isinstance(action, str) else clean_text(action))

    def no_call(self, action: str) -> tuple[bool, bool, str, str]:
        return False, False, "", action

    def execute_call(self, call: ToolCall) -> ToolResult:
        """Call the named tool on its server; a malformed call is an error observation."""
        if call.error is not None:
            has_error, text = True, f"Invalid tool call: {call.error}."
        else:
            has_error, text = self.call_tool(call.name, call.arguments)
        if self.wrap_observation:
            text = f"\n<tool_response>\n{text}\n</tool_response>\n"
        return ToolResult(text, has_error, call)

    def _get_server_description(self) -> str:
        """One line naming the servers: ``HTTP server 'default' at ...``, a stdio command, or the list."""
        if len(self.servers) > 1:
            return f"multi-server configuration with {len(self.servers)} servers: {', '.join(self.servers)}"
        name, server = next(iter(self.servers.items()))
        if server["transport"] == "stdio":
            return f"local stdio server {name!r} via command: {server['command']}"
        return f"HTTP server {name!r} at {server['url']}"

    def reset(self) -> None:
        """Start a new episode: its sessions replace the old ones (when ``session_per_episode``).

        Returns at once: closing the old sessions (and, with ``prefetch_sessions``, opening the new
        ones) runs on the tool's loop, holding the lock that every call takes first, so the next
        call waits for it and always talks to the new episode's session.
        """
        if not self.session_per_episode or self._loop.loop.is_closed():
            return
        asyncio.run_coroutine_threadsafe(self._renew_sessions(), self._loop.loop)

    async def _renew_sessions(self) -> None:
        async with self._lock_for_loop():
            results = await asyncio.gather(*(c.close() for c in self._connections.values()), return_exceptions=True)
            for result in results:
                if isinstance(result, Exception):
                    logger.warning("closing an MCP session at reset failed: %s", _describe_error(result))
            if not self.prefetch_sessions:
                return
            for server, connection in self._connections.items():
                try:
                    await connection.open(self.connect_timeout)
                except Exception as exc:  # noqa: BLE001 -- the first call retries and reports it
                    logger.debug("opening the MCP session with %r ahead of time failed: %s", server, _describe_error(exc))

    def close(self) -> None:
        """Close the sessions (stopping stdio servers) and the event loop thread. Idempotent."""
        self._finalizer()

    def _describe_servers(self) -> str:
        return ", ".join(
            f"{name} ({s['command']} {' '.join(s['args'])})" if s["transport"] == "stdio" else f"{name} ({s['url']})"
            for name, s in self.servers.items()
        )

    def __repr__(self) -> str:
        return f"MCPTool({self._describe_servers()})"
