"""What client and server agree on: defaults, routes, error kinds, and JSON-safe values."""

from __future__ import annotations

import math
from typing import Any

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_SESSION_TTL = 600.0  # seconds a session may stay idle before the server closes it
DEFAULT_MAX_SESSIONS = 10_000
DEFAULT_MAX_SESSIONS_PER_CLIENT = 1_000  # a client is a token (or, without tokens, see client_of_peer)
CLIENT_SHARE = 4  # by default a client holds at most 1/CLIENT_SHARE of each capacity (see client_share)
DEFAULT_SESSION_GRACE = 10.0  # seconds a new WebSocket has to make its session before it is closed
DEFAULT_WORKERS = 64  # threads running env calls (make, reset, step, sample)
DEFAULT_CALL_TIMEOUT = 120.0  # seconds one env call may wait for a worker and run
DEFAULT_CLIENT_TIMEOUT = 60.0  # seconds a client waits for one reset/step
TOKEN_ENV_VAR = "GEM_SERVER_TOKEN"  # the server reads its token here (never from the command line)
URL_ENV_VAR = "GEM_SERVER_URL"

# Error kinds the server reports (JSON {"error": {"kind", "type", "message"}}) and their HTTP status.
ERROR_STATUS = {
    "bad_request": 400,
    "unauthorized": 401,
    "unknown_env": 404,
    "unknown_session": 404,
    "forbidden_origin": 403,
    "forbidden_host": 403,
    "request_timeout": 408,
    "reset_needed": 409,
    "body_too_large": 413,
    "too_many_sessions": 429,
    "env_error": 500,
    "server_busy": 503,
    "timeout": 504,
}


def client_share(total: int) -> int:
    """The default per-client cap on a capacity of ``total``: a ``1/CLIENT_SHARE`` of it (at least 1).

    Caps are fractions of their totals, not fixed numbers, so that however the totals are set it
    takes :data:`CLIENT_SHARE` clients to fill a server: one or two clients (or one client and a
    friend) cannot lock every other client out.
    """
    return max(1, total // CLIENT_SHARE)


def jsonable(value: Any) -> Any:
    """``value`` as JSON-safe data: NumPy numbers and arrays become Python ones, the rest ``str``."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    tolist = getattr(value, "tolist", None)  # NumPy scalars and arrays
    if callable(tolist):
        return jsonable(tolist())
    return str(value)
