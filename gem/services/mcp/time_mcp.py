"""A small date-and-time MCP server, under the module path and tool names of the original GEM's sample.

Tools (every result is a string):
    ``current_time(format="YYYY-MM-DD HH:mm:ss", timezone=None)``: now, in a Moment.js-style format
        (``h:mm A``, ``h:mm:ss A``, ``YYYY-MM-DD HH:mm:ss``, ``YYYY-MM-DD``, ``YYYY-MM``, ``MM/DD/YYYY``,
        ``MM/DD/YY``, ``YYYY/MM/DD``, ``YYYY/MM``) and an IANA timezone (default: the local one).
    ``relative_time(time)``: ``"in 3 hours"`` / ``"2 days ago"`` for ``YYYY-MM-DD HH:mm:ss`` (local time).
    ``days_in_month(date=None)``: the number of days in the month of ``YYYY-MM-DD`` (default: this month).
    ``get_timestamp(time)``: Unix time in milliseconds of ``YYYY-MM-DD HH:mm:ss[.SSS]`` (local time).
    ``convert_time(sourceTimezone, targetTimezone, time)``: ``YYYY-MM-DD HH:mm:ss`` read in one
        timezone, written in the other.
    ``get_week_year(date=None)``: ``"week: <W>, isoWeek: <I>"`` (``%W`` week, Monday first, and ISO week).

A malformed date or an unknown timezone name is a tool error whose message says what was expected.
``app`` is the server object (the official ``mcp`` SDK's ``MCPServer``); ``await app.get_tool(name)``
returns a handle whose ``run(arguments)`` calls the tool, as the original's tests use it. Run it::

    python -m gem.services.mcp.time_mcp --transport stdio
    python -m gem.services.mcp.time_mcp --transport http --port 8081 --path /time-mcp
"""

# No `from __future__ import annotations`: the SDK reads the tools' annotations at registration.
import argparse
import calendar
import logging
from datetime import datetime, timezone as _utc_zone, tzinfo
from typing import Any, Optional

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

logger = logging.getLogger(__name__)

DEFAULT_FORMAT = "YYYY-MM-DD HH:mm:ss"
SUPPORTED_FORMATS = (
    "h:mm A", "h:mm:ss A", "YYYY-MM-DD HH:mm:ss", "YYYY-MM-DD", "YYYY-MM", "MM/DD/YYYY", "MM/DD/YY", "YYYY/MM/DD",
    "YYYY/MM",
)
# Moment.js tokens -> strftime directives, longest first so that "YYYY" is not read as two "YY".
_TOKENS = (("YYYY", "%Y"), ("YY", "%y"), ("MM", "%m"), ("DD", "%d"), ("HH", "%H"), ("hh", "%I"),
           ("h", "%-I"), ("mm", "%M"), ("ss", "%S"), ("A", "%p"))


def _local_tz() -> Optional[tzinfo]:
    return datetime.now().astimezone().tzinfo


def _get_tz(tz_name: Optional[str]) -> Optional[tzinfo]:
    """The IANA timezone ``tz_name``; the local timezone when it is empty or ``None``."""
    if not tz_name:
        return _local_tz()
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(tz_name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ToolError(f"unknown timezone {tz_name!r}; use an IANA name such as 'UTC' or 'Asia/Shanghai'") from None


def _moment_to_strftime(fmt: str) -> str:
    """A Moment.js-style format (``YYYY-MM-DD HH:mm:ss``, ``h:mm A``...) as a ``strftime`` format."""
    out, i = [], 0
    while i < len(fmt):
        for token, directive in _TOKENS:
            if fmt.startswith(token, i):
                out.append(directive)
                i += len(token)
                break
        else:
            out.append("%%" if fmt[i] == "%" else fmt[i])
            i += 1
    return "".join(out)


def _strptime(text: str, fmt: str, expected: str) -> datetime:
    try:
        return datetime.strptime(text.strip(), fmt)
    except (ValueError, AttributeError):
        raise ToolError(f"expected a time like {expected!r}, got {text!r}") from None


def _parse_naive(time_str: str) -> datetime:
    """``YYYY-MM-DD HH:mm:ss`` or ``YYYY-MM-DD HH:mm:ss.SSS`` as a naive datetime."""
    if "." in time_str:
        main, _, frac = time_str.partition(".")
        return _strptime(f"{main}.{frac.strip()[:6]:0<6}", "%Y-%m-%d %H:%M:%S.%f", "2025-03-23 12:30:00.000")
    return _strptime(time_str, "%Y-%m-%d %H:%M:%S", "2025-03-23 12:30:00")


def _parse_dt(time_str: str) -> datetime:
    """``YYYY-MM-DD HH:mm:ss[.SSS]`` in the local timezone."""
    return _parse_naive(time_str).replace(tzinfo=_local_tz())


def _parse_date(date_str: str) -> datetime:
    """``YYYY-MM-DD`` at midnight in the local timezone."""
    return _strptime(date_str, "%Y-%m-%d", "2025-03-23").replace(tzinfo=_local_tz())


def _date_or_today(date: Optional[str]) -> datetime:
    return _parse_date(date) if date else datetime.now(tz=_local_tz())


def _relative(seconds: int) -> str:
    """``"in N unit"`` or ``"N unit ago"``: the largest whole unit (months are 30 days, years 12 months)."""
    future, value, unit = seconds > 0, abs(seconds), "seconds"
    for size, name in ((60, "minutes"), (60, "hours"), (24, "days"), (30, "months"), (12, "years")):
        if value < size:
            break
        value, unit = value // size, name
    return f"in {value} {unit}" if future else f"{value} {unit} ago"


class TimeServer(MCPServer):
    """``MCPServer`` plus ``get_tool(name)``, the handle the original GEM's tests call tools through."""

    async def get_tool(self, name: str) -> "ToolHandle":
        if name not in {tool.name for tool in await self.list_tools()}:
            raise ToolError(f"unknown tool {name!r}")
        return ToolHandle(self, name)


class ToolHandle:
    """One tool of a server: ``await handle.run({...})`` returns the MCP ``CallToolResult``."""

    def __init__(self, server: MCPServer, name: str) -> None:
        self.server, self.name = server, name

    async def run(self, arguments: Optional[dict[str, Any]] = None) -> Any:
        return await self.server.call_tool(self.name, dict(arguments or {}))


def _read_only(title: str) -> ToolAnnotations:
    return ToolAnnotations(title=title, readOnlyHint=True)


app = TimeServer("mcp-time-server", instructions="Current time, time zones, calendars and timestamps.",
                 log_level="WARNING")


@app.tool(annotations=_read_only("Get current date/time in optional timezone"))
def current_time(format: str = DEFAULT_FORMAT, timezone: Optional[str] = None) -> str:
    """The current date/time in a Moment.js-style format and an IANA timezone (default: local).

    - format: one of h:mm A, h:mm:ss A, YYYY-MM-DD HH:mm:ss, YYYY-MM-DD, YYYY-MM, MM/DD/YYYY, MM/DD/YY, YYYY/MM/DD, YYYY/MM
    - timezone: an IANA timezone such as Asia/Shanghai; omit it for the local timezone
    """
    now = datetime.now(tz=_get_tz(timezone))
    try:
        return now.strftime(_moment_to_strftime(format))
    except ValueError:
        return now.strftime(_moment_to_strftime(DEFAULT_FORMAT))


@app.tool(annotations=_read_only("Relative time from now"))
def relative_time(time: str) -> str:
    """How far a local time 'YYYY-MM-DD HH:mm:ss' is from now, e.g. 'in 3 hours' or '2 days ago'.

    - time: e.g. 2025-03-23 12:30:00
    """
    return _relative(int((_parse_dt(time) - datetime.now(tz=_local_tz())).total_seconds()))


@app.tool(annotations=_read_only("Days in month"))
def days_in_month(date: Optional[str] = None) -> str:
    """The number of days in the month of a date 'YYYY-MM-DD' (default: the current month).

    - date: e.g. 2024-02-01
    """
    day = _date_or_today(date)
    return str(calendar.monthrange(day.year, day.month)[1])


@app.tool(annotations=_read_only("Get Unix timestamp (ms)"))
def get_timestamp(time: str) -> str:
    """The Unix timestamp in milliseconds of a local time 'YYYY-MM-DD HH:mm:ss.SSS' (milliseconds optional).

    - time: e.g. 2025-03-23 12:30:00.000
    """
    moment = _parse_dt(time).astimezone(_utc_zone.utc)
    epoch = datetime(1970, 1, 1, tzinfo=_utc_zone.utc)
    delta = moment - epoch
    return str((delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000)


@app.tool(annotations=_read_only("Convert time between timezones"))
def convert_time(sourceTimezone: str, targetTimezone: str, time: str) -> str:
    """A time 'YYYY-MM-DD HH:mm:ss' read in one IANA timezone and written in another.

    - sourceTimezone: e.g. Asia/Shanghai
    - targetTimezone: e.g. Europe/London
    - time: e.g. 2025-03-23 12:30:00
    """
    source = _parse_naive(time).replace(tzinfo=_get_tz(sourceTimezone))
    return source.astimezone(_get_tz(targetTimezone)).strftime("%Y-%m-%d %H:%M:%S")


@app.tool(annotations=_read_only("Get week number and ISO week number"))
def get_week_year(date: Optional[str] = None) -> str:
    """The week number (Monday first, %W) and ISO week number of a date 'YYYY-MM-DD' (default: today).

    Returns 'week: <W>, isoWeek: <ISO_W>'.
    """
    day = _date_or_today(date)
    return f"week: {int(day.strftime('%W'))}, isoWeek: {day.isocalendar()[1]}"


def main(argv: Optional[list[str]] = None) -> int:
    """Serve the tools over stdio or streamable HTTP (the original's flags and defaults)."""
    parser = argparse.ArgumentParser(prog="python -m gem.services.mcp.time_mcp", description="Time MCP server")
    parser.add_argument("--transport", choices=["stdio", "http", "streamable-http"], default="streamable-http")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8081, help="HTTP port (default 8081)")
    parser.add_argument("--path", default="/time-mcp", help="HTTP endpoint path (default /time-mcp)")
    parser.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], default="INFO")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s - %(name)s - %(levelname)s - %(message)s")
    if args.transport == "stdio":
        app.run("stdio")
    else:
        logger.info("Time MCP server at http://%s:%d%s", args.host, args.port, args.path)
        app.run("streamable-http", host=args.host, port=args.port, streamable_http_path=args.path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
