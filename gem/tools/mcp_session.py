"""MCP sessions on a private event loop: the loop thread, one connection per server, and shutdown.

The ``mcp`` SDK is asynchronous and its anyio scopes must be exited by the task that entered them,
so :class:`_Connection` holds each session in one task on the loop of a :class:`_LoopThread`;
:class:`gem.tools.mcp_tool.MCPTool` submits its work to that loop from any thread. Also here: how
errors from the SDK are described and classified (a timeout, a lost connection).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from contextlib import AsyncExitStack
from typing import Any, Callable, Optional

from gem.tools.mcp_config import ServerConfig

logger = logging.getLogger(__name__)

CLOSE_TIMEOUT_S = 10.0


def is_timeout_error(error: BaseException) -> bool:
    """Whether ``error`` (or the first leaf of an exception group) is a timeout or a dropped connection.

    True for ``TimeoutError`` and for errors whose message mentions a timeout, ``ETIMEDOUT`` or
    ``ECONNRESET``.
    """
    error = _leaf(error)
    if isinstance(error, (TimeoutError, asyncio.TimeoutError)):
        return True
    text = str(error).lower()
    return any(word in text for word in ("etimedout", "econnreset", "timeout", "timed out"))


def _leaf(exc: BaseException) -> BaseException:
    """The first leaf of an (anyio) exception group; ``exc`` itself if it is not a group."""
    while isinstance(getattr(exc, "exceptions", None), (list, tuple)) and exc.exceptions:  # type: ignore[attr-defined]
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


def _describe_error(exc: BaseException) -> str:
    """``Type: message`` of the first leaf of an (anyio) exception group."""
    exc = _leaf(exc)
    text = str(exc) or repr(exc)
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return f"timed out{': ' + text if str(exc) else ''}"
    return f"{type(exc).__name__}: {text}"


_CONNECTION_ERRORS = {"ClosedResourceError", "BrokenResourceError", "EndOfStream", "ConnectError",
                      "RemoteProtocolError", "ReadError", "WriteError", "BrokenPipeError", "ConnectionResetError"}


def _is_connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` means the session's transport is gone (not a refused or failed request)."""
    exc = _leaf(exc)
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return False
    return (type(exc).__name__ in _CONNECTION_ERRORS or isinstance(exc, ConnectionError)
            or "connection closed" in str(exc).lower())


class _LoopThread:
    """An asyncio event loop running in a daemon thread; ``submit`` runs a coroutine on it."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Any, timeout: Optional[float]) -> Any:
        """Run ``coro`` on the loop and wait for its result (``TimeoutError`` after ``timeout``)."""
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("MCPTool's synchronous API cannot be called from its own event loop thread.")
        if self.loop.is_closed() or not self.thread.is_alive():
            coro.close()
            raise RuntimeError("this MCPTool is closed; build a new one.")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(CLOSE_TIMEOUT_S)
        if not self.thread.is_alive():
            self.loop.close()


# ---------------------------------------------------------------------------- one connection
class _Connection:
    """One open MCP session, held by a task on the tool's loop (anyio scopes must exit in the task
    that entered them, so one task opens the transport and the session, and later closes both)."""

    def __init__(self, name: str, server: ServerConfig, stderr: Any, callbacks: Optional[dict[str, Any]] = None) -> None:
        self.name, self.server, self.stderr = name, server, stderr
        self.callbacks = callbacks or {}
        self.session: Any = None
        self.shut = False  # set when the tool closes: no session may be opened after that
        self._task: Optional[asyncio.Task] = None
        self._closing: Optional[asyncio.Event] = None

    @property
    def alive(self) -> bool:
        return self.session is not None and self._task is not None and not self._task.done()

    def _transport(self) -> Any:
        if self.server["transport"] == "stdio":
            from mcp import StdioServerParameters, stdio_client

            params = StdioServerParameters(
                command=self.server["command"], args=self.server["args"],
                env=self.server.get("env"), cwd=self.server.get("cwd"),
            )
            return stdio_client(params, errlog=self.stderr)
        from mcp.client.streamable_http import streamable_http_client

        http_client = None
        if self.server.get("headers"):
            from mcp.shared._httpx_utils import create_mcp_http_client

            http_client = create_mcp_http_client(headers=self.server["headers"])
        return streamable_http_client(self.server["url"], http_client=http_client)

    async def open(self, timeout: float) -> None:
        if self.shut:
            raise RuntimeError("this MCPTool is closed; build a new one.")
        loop = asyncio.get_running_loop()
        ready: asyncio.Future = loop.create_future()
        self._closing = asyncio.Event()
        self._task = loop.create_task(self._hold(ready, self._closing))
        try:
            await asyncio.wait_for(asyncio.shield(ready), timeout)
        except BaseException:
            await self.close()
            raise

    async def _hold(self, ready: asyncio.Future, closing: asyncio.Event) -> None:
        from mcp import ClientSession

        session = None
        try:
            async with AsyncExitStack() as stack:
                streams = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(ClientSession(streams[0], streams[1], **self.callbacks))
                await session.initialize()
                self.session = session
                if not ready.done():
                    ready.set_result(None)
                await closing.wait()
        except BaseException as exc:  # noqa: BLE001 -- reported to the opener or logged
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else ConnectionError(_describe_error(exc)))
            elif not isinstance(exc, asyncio.CancelledError):
                logger.warning("MCP session with server %r ended: %s", self.name, _describe_error(exc))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            if self.session is session:
                self.session = None

    async def close(self) -> None:
        task, self._task = self._task, None
        if self._closing is not None:
            self._closing.set()
        if task is not None and not task.done():
            if self.session is None:  # still opening: nothing to close politely
                task.cancel()
            done, _ = await asyncio.wait({task}, timeout=CLOSE_TIMEOUT_S)
            if not done:
                task.cancel()
                await asyncio.wait({task}, timeout=CLOSE_TIMEOUT_S)
        self.session = None


def _shutdown(loop_thread: _LoopThread, connections: dict[str, _Connection], stderr: Any) -> None:
    """Close every session, stop the loop and release the stderr sink (also run at garbage collection)."""
    if not loop_thread.loop.is_closed() and loop_thread.thread.is_alive():
        async def close_all() -> None:
            for connection in connections.values():
                connection.shut = True
            await asyncio.gather(*(c.close() for c in connections.values()), return_exceptions=True)

        try:
            loop_thread.submit(close_all(), CLOSE_TIMEOUT_S * 2)
        except Exception as exc:  # noqa: BLE001 -- best effort on the way out
            logger.debug("closing MCP sessions failed: %s", _describe_error(exc))
    loop_thread.stop()
    if stderr is not None and not stderr.closed:
        stderr.close()


async def _call_handler(handler: Callable[..., Any], *args: Any) -> Any:
    result = handler(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


def _session_callbacks(log_handler: Optional[Callable[..., Any]], sampling_handler: Optional[Callable[..., Any]]) -> dict[str, Any]:
    """``ClientSession`` callbacks that call ``MCPTool``'s handlers (sync or async)."""
    callbacks: dict[str, Any] = {}
    if log_handler is not None:
        async def on_log(params: Any) -> None:
            try:
                await _call_handler(log_handler, params)
            except Exception:  # noqa: BLE001 -- a broken handler must not break the session
                logger.exception("the MCP log_handler raised")

        callbacks["logging_callback"] = on_log
    if sampling_handler is not None:
        async def on_sampling(context: Any, params: Any) -> Any:
            from mcp import types

            try:
                text = await _call_handler(sampling_handler, params.messages, params, context)
            except Exception as exc:  # noqa: BLE001 -- the server gets an error, the episode goes on
                logger.exception("the MCP sampling_handler raised")
                return types.ErrorData(code=types.INTERNAL_ERROR, message=f"sampling failed: {exc}")
            if isinstance(text, (types.CreateMessageResult, types.ErrorData)):
                return text
            return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text=str(text)),
                                             model="gem-sampling-handler")

        callbacks["sampling_callback"] = on_sampling
    return callbacks


def _progress_callback(progress_handler: Optional[Callable[..., Any]]) -> Optional[Callable[..., Any]]:
    """A ``call_tool`` progress callback that calls ``progress_handler(progress, total, message)``."""
    if progress_handler is None:
        return None

    async def on_progress(progress: float, total: Optional[float], message: Optional[str]) -> None:
        try:
            await _call_handler(progress_handler, progress, total, message)
        except Exception:  # noqa: BLE001
            logger.exception("the MCP progress_handler raised")

    return on_progress
