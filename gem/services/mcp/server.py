"""The tools of GEM's bundled MCP server, and its command line.

Tools:
    ``calculate(expression)``: exact arithmetic on + - * / // % ** and parentheses (no names, no calls).
    ``notebook_write(key, value)`` / ``notebook_read(key)`` / ``notebook_list()`` / ``notebook_delete(key)``:
        a key-value notebook private to the MCP session (one session per episode, so one notebook each).
    ``clock_now(timezone="UTC")``: the current time in ISO 8601.
    ``clock_sleep(seconds)``: waits (at most ``MAX_SLEEP_S``) and returns; useful to test timeouts.

Every tool bounds its work before doing it: the calculator refuses an exponent or a product whose
exact result would pass ``MAX_RESULT_DIGITS`` digits before computing it; notes, keys and sleeps
are capped. Over HTTP, bodies, request time and connections are capped too (:func:`http_app`).

Errors (a bad expression, a missing key) are raised as exceptions; the SDK turns them into a tool
result with ``is_error`` set, which is what a client shows the model.
"""

# No `from __future__ import annotations`: the SDK reads the tools' annotations (``ctx: Context``,
# imported lazily inside build_server) at registration time.
import argparse
import ast
import datetime as _dt
import logging
import math
import operator
from collections import OrderedDict
from typing import Any, Callable, Optional

logger = logging.getLogger(__name__)

MAX_EXPRESSION_CHARS = 1000
MAX_EXPONENT = 1000
MAX_RESULT_DIGITS = 4000
MAX_SLEEP_S = 30.0
MAX_NOTEBOOK_KEYS = 100
MAX_NOTE_CHARS = 10_000
MAX_KEY_CHARS = 200
MAX_NOTEBOOK_CHARS = 100_000  # keys and values of one notebook together (1024 notebooks: ~100 MB at most)

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}


MAX_RESULT_BITS = int(MAX_RESULT_DIGITS * math.log2(10)) + 1


def _bits(value: Any) -> float:
    """An upper bound on the bits of ``value``'s integer part (floats: their exponent)."""
    if isinstance(value, int):
        return value.bit_length()
    return max(math.frexp(value)[1], 0) if math.isfinite(value) else 0


def _check_cost(op: ast.operator, left: Any, right: Any) -> None:
    """Refuse an operation whose exact result would be too large, *before* computing it."""
    if isinstance(op, ast.Pow):
        if abs(right) > MAX_EXPONENT:
            raise ValueError(f"exponent {right} is too large (at most {MAX_EXPONENT})")
        if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
            if (abs(left).bit_length() - 1) * right > MAX_RESULT_BITS:
                raise ValueError(f"the result would have more than {MAX_RESULT_DIGITS} digits")
    elif isinstance(op, ast.Mult) and isinstance(left, int) and isinstance(right, int):
        if left and right and _bits(left) + _bits(right) - 1 > MAX_RESULT_BITS:
            raise ValueError(f"the result would have more than {MAX_RESULT_DIGITS} digits")


def _eval_node(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _eval_node(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval_node(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval_node(node.left), _eval_node(node.right)
        _check_cost(node.op, left, right)
        result = _BINARY[type(node.op)](left, right)
        if isinstance(result, int) and result.bit_length() > MAX_RESULT_BITS:
            raise ValueError(f"the result would have more than {MAX_RESULT_DIGITS} digits")
        return result
    raise ValueError(f"unsupported syntax {type(node).__name__}; use numbers, + - * / // % ** and parentheses")


def evaluate_expression(expression: str) -> str:
    """Evaluate an arithmetic expression exactly, e.g. ``(2 + 3) * 7`` -> ``35``."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ValueError(f"expression too long ({len(expression)} characters, at most {MAX_EXPRESSION_CHARS})")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not an arithmetic expression: {exc.msg}") from None
    try:
        value = _eval_node(tree)
    except RecursionError:
        raise ValueError("the expression is nested too deeply") from None
    except ZeroDivisionError:
        raise ValueError("division by zero") from None
    except OverflowError:
        raise ValueError("the result is too large") from None
    if isinstance(value, complex):
        raise ValueError("the result is not a real number")
    return repr(value)


class Notebooks:
    """One key-value notebook per MCP session.

    Over streamable HTTP a session is named by its ``mcp-session-id`` header; over stdio a server
    process serves one client, so the process has one notebook. At most ``MAX_SESSIONS`` notebooks
    are kept (the least recently used goes first), as HTTP clients do not always say goodbye.
    """

    MAX_SESSIONS = 1024

    def __init__(self) -> None:
        self._books: "OrderedDict[str, dict[str, str]]" = OrderedDict()

    def of(self, ctx: Any) -> dict[str, str]:
        """The notebook of the session ``ctx`` (a request context) belongs to."""
        headers = None
        try:
            headers = ctx.headers
        except Exception:  # no request (stdio) or an SDK without headers on the context
            headers = None
        key = (headers or {}).get("mcp-session-id") or "process"
        book = self._books.get(key)
        if book is None:
            book = self._books[key] = {}
            while len(self._books) > self.MAX_SESSIONS:
                self._books.popitem(last=False)
        self._books.move_to_end(key)
        return book


def build_server(name: str = "gem-tools") -> Any:
    """The MCP server object with the calculator, notebook and clock tools registered."""
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer(name, instructions="Calculator, key-value notebook and clock.", log_level="WARNING")
    notebooks = Notebooks()

    @server.tool(description="Evaluate an arithmetic expression exactly (numbers, + - * / // % ** and parentheses).")
    def calculate(expression: str) -> str:
        try:
            return evaluate_expression(expression)
        except ValueError as exc:
            raise ToolError(str(exc)) from None

    @server.tool(description="Store a text value under a key in this session's notebook.")
    def notebook_write(key: str, value: str, ctx: Context) -> str:
        book = notebooks.of(ctx)
        if len(value) > MAX_NOTE_CHARS:
            raise ToolError(f"value too long ({len(value)} characters, at most {MAX_NOTE_CHARS})")
        if len(key) > MAX_KEY_CHARS:
            raise ToolError(f"key too long ({len(key)} characters, at most {MAX_KEY_CHARS})")
        if key not in book and len(book) >= MAX_NOTEBOOK_KEYS:
            raise ToolError(f"the notebook is full ({MAX_NOTEBOOK_KEYS} keys); delete one first")
        used = sum(len(k) + len(v) for k, v in book.items() if k != key)
        if used + len(key) + len(value) > MAX_NOTEBOOK_CHARS:
            raise ToolError(f"the notebook is full ({MAX_NOTEBOOK_CHARS} characters in all); delete a note first")
        book[key] = value
        return f"stored {key!r} ({len(value)} characters)"

    @server.tool(description="Read the value stored under a key in this session's notebook.")
    def notebook_read(key: str, ctx: Context) -> str:
        book = notebooks.of(ctx)
        if key not in book:
            known = ", ".join(sorted(book)) or "none"
            raise ToolError(f"no note named {key!r} (keys: {known})")
        return book[key]

    @server.tool(description="List the keys of this session's notebook.")
    def notebook_list(ctx: Context) -> list[str]:
        return sorted(notebooks.of(ctx))

    @server.tool(description="Delete a key from this session's notebook.")
    def notebook_delete(key: str, ctx: Context) -> str:
        book = notebooks.of(ctx)
        if book.pop(key, None) is None:
            raise ToolError(f"no note named {key!r}")
        return f"deleted {key!r}"

    @server.tool(description="The current date and time in ISO 8601, in an IANA timezone such as 'UTC' or 'Europe/Paris'.")
    def clock_now(timezone: str = "UTC") -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            tz = ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ToolError(f"unknown timezone {timezone!r}; use an IANA name such as 'UTC'") from None
        return _dt.datetime.now(tz).isoformat(timespec="seconds")

    @server.tool(description=f"Wait for a number of seconds (at most {MAX_SLEEP_S:g}) and return.")
    async def clock_sleep(seconds: float) -> str:
        import anyio

        if not 0 <= seconds <= MAX_SLEEP_S:
            raise ToolError(f"seconds must be between 0 and {MAX_SLEEP_S:g}, got {seconds}")
        await anyio.sleep(seconds)
        return f"slept {seconds:g} s"

    return server


MAX_BODY_BYTES = 1024 * 1024  # one JSON-RPC message over HTTP
MAX_HTTP_SESSIONS = 1024
HTTP_REQUEST_TIMEOUT = 600.0  # seconds one HTTP request (or event stream) may last


def http_app(server: Any, host: str = "127.0.0.1", allow_origins: tuple[str, ...] = ()) -> Any:
    """The streamable-HTTP ASGI app (at ``/mcp``) behind GEM's guard: cross-origin browser requests
    refused, bodies capped before they are read, each request time-limited."""
    from gem.http.limits import GuardMiddleware, ServerLimits

    app = server.streamable_http_app(host=host, max_request_body_size=MAX_BODY_BYTES, max_sessions=MAX_HTTP_SESSIONS)
    limits = ServerLimits(max_body_bytes=MAX_BODY_BYTES, request_timeout=HTTP_REQUEST_TIMEOUT)
    return GuardMiddleware(app, limits, allow_origins=allow_origins, open_paths=())


def main(argv: Optional[list[str]] = None) -> int:
    """Run the server: ``--transport stdio`` (default) or ``--transport http --host H --port N``."""
    parser = argparse.ArgumentParser(prog="python -m gem.services.mcp", description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765); the endpoint is /mcp")
    parser.add_argument(
        "--allow-origin", action="append", default=[], metavar="ORIGIN",
        help="a web origin allowed to call over HTTP from a browser (default: none); repeatable",
    )
    args = parser.parse_args(argv)
    server = build_server()
    if args.transport == "stdio":
        server.run("stdio")
        return 0
    import uvicorn

    from gem.http.limits import ServerLimits, uvicorn_config

    app = http_app(server, args.host, tuple(args.allow_origin))
    limits = ServerLimits(max_body_bytes=MAX_BODY_BYTES, request_timeout=HTTP_REQUEST_TIMEOUT)
    uvicorn.Server(uvicorn_config(app, args.host, args.port, limits, log_level="warning")).run()
    return 0
