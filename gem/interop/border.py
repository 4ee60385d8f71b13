"""What crosses a bridge into GEM is untrusted input; these are the checks every inbound bridge makes.

An env imported from elsewhere (an OpenEnv server, a Gymnasium env, a verifiers environment) is
someone else's code, often on someone else's machine. Whatever it answers is checked before GEM
uses it:

- **Rewards** are finite numbers of magnitude at most :data:`MAX_ABS_REWARD`; anything else (NaN,
  inf, ``1e308``, a string, a list) is an :class:`~gem.errors.InfrastructureError`, so the
  episode is an infrastructure error, never a reward and never a success.
- **Success** is decided on GEM's side: the other side's ``info["success"]``/``info["correct"]``
  are kept only as ``info["remote_success"]``/``info["remote_correct"]``, and on the step that
  ends an episode the bridge sets ``info["success"]`` to "terminated with a reward at the env's
  success level" (:func:`gem_side_info`).
- **HTTP** (:func:`fetch_json`): one total deadline per call (connecting, headers and body
  together, however slowly the server drips them), a size cap on the reply, redirects followed
  only within the origin the URL names (so a token given for it never goes elsewhere), and a reply
  that is not JSON (or too deeply nested to parse) is an ``InfrastructureError`` with the cause.
"""

from __future__ import annotations

import http.client
import json
import math
import numbers
import random
import socket
import string
import threading
import time
import urllib.parse
from collections.abc import Mapping
from typing import Any, Optional

from gem.errors import InfrastructureError
from gem.utils.text import preview

MAX_ABS_REWARD = 1e6  # no reward of GEM's (or any sane env's) is larger; 1e308 sums to inf
DEFAULT_MAX_REPLY_BYTES = 16 << 20
MAX_REDIRECTS = 5
REMOTE_CLAIMS = {"success": "remote_success", "correct": "remote_correct"}
_REDIRECTS = (301, 302, 303, 307, 308)


def finite_reward(value: Any, source: str, *, none_is: Optional[float] = None) -> float:
    """``value`` as a float if it is a finite number of magnitude at most :data:`MAX_ABS_REWARD`.

    ``None`` is ``none_is`` when given (OpenEnv sends ``None`` for "no reward"). Anything else raises
    :class:`InfrastructureError` naming ``source`` and what it sent.
    """
    if value is None and none_is is not None:
        return float(none_is)
    if not isinstance(value, numbers.Real) and not is_numpy_scalar(value, "biuf"):  # numpy's bool is no Real
        raise InfrastructureError(
            f"{source} sent a reward that is not a number: {preview(repr(value), 80)} ({type(value).__name__})."
        )
    try:
        reward = float(value)
    except (OverflowError, ValueError, TypeError) as exc:
        raise InfrastructureError(f"{source} sent a reward that is not a float: {preview(repr(value), 80)}.") from exc
    if not math.isfinite(reward) or abs(reward) > MAX_ABS_REWARD:
        raise InfrastructureError(
            f"{source} sent the reward {reward!r}; a reward crossing into GEM is a finite number of magnitude "
            f"at most {MAX_ABS_REWARD:g}. The episode is an infrastructure error, not a result."
        )
    return reward


def is_numpy_scalar(value: Any, kinds: str) -> bool:
    """Whether ``value`` is a numpy scalar (0-d) of one of the dtype ``kinds`` ("b" bool, "f" float...)."""
    dtype = getattr(value, "dtype", None)
    return getattr(value, "shape", None) == () and getattr(dtype, "kind", None) in tuple(kinds)


def gem_side_info(
    info: Any, source: str, *, reward: float, terminated: bool, truncated: bool, success_reward: float
) -> dict[str, Any]:
    """A copy of the other side's ``info`` with success decided by GEM.

    The other side's ``success``/``correct`` become ``remote_success``/``remote_correct`` (kept, never
    believed). On a step that ends the episode, ``success`` is ``terminated and reward >=
    success_reward``: the finite reward GEM checked, at the env's success level.
    """
    if not isinstance(info, Mapping):
        raise InfrastructureError(f"{source} sent an info that is not a mapping: {type(info).__name__}.")
    info = dict(info)
    for claim, kept in REMOTE_CLAIMS.items():
        if claim in info:
            info[kept] = info.pop(claim)
    if terminated or truncated:
        info["success"] = bool(terminated) and reward >= success_reward
    return info


def random_text(rng: random.Random, max_chars: int = 24) -> str:
    """Random printable text from ``rng``: a bridge's ``sample_random_action`` when the other side
    does not say what its actions look like (a well-formed string, not necessarily a valid move)."""
    alphabet = string.ascii_letters + string.digits + " "
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, max_chars))).strip() or "a"


def parse_json(data: bytes | str, source: str) -> Any:
    """``data`` parsed as JSON, or :class:`InfrastructureError` saying why not (nesting too deep included)."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise InfrastructureError(f"{source} sent a reply that is not JSON GEM can read: {type(exc).__name__}: "
                                  f"{preview(str(exc), 200)}") from exc


def origin(url: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of ``url``, the default port filled in."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"{url!r} has an invalid port.") from exc
    default = {"http": 80, "ws": 80, "https": 443, "wss": 443}.get(scheme, 0)
    return scheme, (parts.hostname or "").lower(), port or default


def _same_origin(a: str, b: str) -> bool:
    (sa, ha, pa), (sb, hb, pb) = origin(a), origin(b)
    web = {"ws": "http", "wss": "https"}
    return (web.get(sa, sa), ha, pa) == (web.get(sb, sb), hb, pb)


def fetch_json(
    url: str,
    *,
    headers: Optional[dict[str, str]] = None,
    timeout: float,
    max_bytes: int = DEFAULT_MAX_REPLY_BYTES,
) -> Any:
    """GET ``url`` and parse its JSON, within ``timeout`` seconds in all and ``max_bytes`` of body.

    Redirects are followed (at most :data:`MAX_REDIRECTS`) only to the same scheme, host and port;
    one to another origin is refused, so ``headers`` (a bearer token) never leave the origin.
    Every failure (refused, too slow, too big, a redirect elsewhere, not 200, not JSON) raises
    :class:`InfrastructureError` with the cause.
    """
    deadline = time.monotonic() + timeout
    current = url
    for _ in range(MAX_REDIRECTS + 1):
        status, location, body = _get(current, headers or {}, deadline, timeout, max_bytes)
        if status in _REDIRECTS:
            if not location:
                raise InfrastructureError(f"{current} answered {status} without a Location.")
            target = urllib.parse.urljoin(current, location)
            if not _same_origin(target, url):
                scheme, host, port = origin(target)
                raise InfrastructureError(
                    f"{current} redirected to another origin ({scheme}://{host}:{port}); GEM follows redirects "
                    f"only within the origin it was given, so its credentials never leave it."
                )
            current = target
            continue
        if status != 200:
            text = preview(body.decode("utf-8", "replace"), 200)
            raise InfrastructureError(f"{current} answered HTTP {status}: {text}")
        return parse_json(body, current)
    raise InfrastructureError(f"{url}: more than {MAX_REDIRECTS} redirects.")


def _get(url: str, headers: dict[str, str], deadline: float, timeout: float, max_bytes: int) -> tuple[int, str, bytes]:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InfrastructureError(f"Cannot fetch {url!r}: only http:// and https:// URLs.")
    left = deadline - time.monotonic()
    if left <= 0:
        raise InfrastructureError(f"{url}: no answer within {timeout:g} s in all.")
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.hostname, parts.port, timeout=left)
    expired = threading.Event()

    def expire() -> None:  # the total deadline: unblock whatever read is waiting, however slow the drip
        expired.set()
        sock = conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    watchdog = threading.Timer(left, expire)
    watchdog.daemon = True
    watchdog.start()
    try:
        path = parts.path or "/"
        conn.request("GET", path + (f"?{parts.query}" if parts.query else ""), headers=headers)
        response = conn.getresponse()
        declared = response.getheader("Content-Length")
        if declared and declared.strip().isdigit() and int(declared) > max_bytes:
            raise InfrastructureError(f"{url} announced a reply of {int(declared)} bytes; the cap is {max_bytes}.")
        body = response.read(max_bytes + 1)
        if len(body) > max_bytes:
            raise InfrastructureError(f"{url} sent a reply over the cap of {max_bytes} bytes.")
        if expired.is_set():
            raise InfrastructureError(f"{url}: no complete answer within {timeout:g} s in all.")
        return response.status, response.getheader("Location") or "", body
    except InfrastructureError:
        raise
    except (OSError, http.client.HTTPException, ValueError) as exc:
        if expired.is_set():
            raise InfrastructureError(f"{url}: no complete answer within {timeout:g} s in all.") from exc
        raise InfrastructureError(f"Could not read {url}: {type(exc).__name__}: {exc}") from exc
    finally:
        watchdog.cancel()
        conn.close()
