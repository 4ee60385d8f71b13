"""What every GEM server enforces before its routes run: who may connect and how much they may send.

Shared by ``gem serve``, the retrieval server and the bundled MCP server:

- :class:`ServerLimits`: the numbers (body and message caps, header, body and request time
  limits, open connections).
- :class:`GuardMiddleware`: an ASGI middleware that refuses cross-origin browser requests (unless
  the origin is allowed), checks bearer tokens in constant time and names the client (for quotas),
  reads a request body with a cap and a deadline before the app sees it (``Content-Length`` is
  checked first, so an oversized body is refused unread), and bounds each request's time.
- :func:`uvicorn_config`: a uvicorn config whose HTTP protocol cuts slow clients (a connection must
  deliver a complete request head within ``header_timeout`` seconds of opening or of its last
  answer) and caps open connections: over the cap, the longest-idle connection that is not
  being answered is closed, so a flood of half-open connections cannot lock out ``/health``.
- :func:`read_secret` / :func:`scrub_environ`: a token from an environment variable or a file, and
  its removal from this process's environment (so programs an env runs cannot find it).
- :func:`client_of_peer`: who a client is without tokens, counted so that one user cannot
  multiply themself by picking source addresses.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import os
import resource
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, Optional, Sequence

logger = logging.getLogger(__name__)

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

CLIENT_SCOPE_KEY = "gem.client"  # the scope key naming the client (``token:N`` or ``peer:...``)
LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")


@dataclass(frozen=True)
class ServerLimits:
    """The limits a server holds to whatever its clients do.

    Attributes:
        max_body_bytes: the largest request body (and WebSocket message) read; larger gets 413.
        header_timeout: seconds a connection may take to send a complete request head (counted
            from its opening or from its previous answer); slower connections are closed.
        body_timeout: seconds to receive a request's whole body; slower gets 408.
        request_timeout: seconds one request may take in all; longer gets 504.
        keep_alive_timeout: seconds an idle kept-alive connection stays open.
        max_connections: open connections at once (HTTP and WebSocket); see :func:`uvicorn_config`.
    """

    max_body_bytes: int = 4 * 1024 * 1024
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    request_timeout: float = 300.0
    keep_alive_timeout: float = 5.0
    max_connections: int = 2048

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_connections"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}.")
        for name in ("header_timeout", "body_timeout", "request_timeout", "keep_alive_timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be positive seconds, got {value!r}.")


# ---------------------------------------------------------------------- secrets
def read_secret(env_var: str, path: Optional[str] = None) -> list[str]:
    """The tokens from ``path`` (one per line; blank and ``#`` lines skipped) or else ``$env_var``.

    A token file readable by other users is refused (as ssh refuses such keys).
    """
    if path:
        file = Path(path).expanduser()
        try:
            mode = file.stat().st_mode
            text = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"Cannot read the token file {path}: {exc.strerror or exc}.") from exc
        if mode & 0o077:
            raise ValueError(
                f"The token file {path} can be read by other users (mode {mode & 0o777:o}); "
                f"run `chmod 600 {path}` first."
            )
        tokens = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
        if not tokens:
            raise ValueError(f"The token file {path} holds no token.")
        return tokens
    value = os.environ.get(env_var, "").strip()
    return [value] if value else []


def scrub_environ(name: str) -> None:
    """Remove ``name`` from this process's environment, including the copy the kernel shows.

    ``os.environ.pop`` keeps it out of child processes; the original environment block (what
    ``/proc/<pid>/environ`` shows to processes of the same user) is overwritten in place through
    ``/proc/self/mem`` where Linux allows it.
    """
    os.environ.pop(name, None)
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        # fields[0] is field 3 of proc(5); env_start and env_end are fields 50 and 51.
        start, end = int(fields[47]), int(fields[48])
        if not 0 < start < end:
            return
        with open("/proc/self/mem", "r+b", buffering=0) as mem:
            mem.seek(start)
            block = mem.read(end - start)
            prefix = name.encode() + b"="
            offset = 0
            for entry in block.split(b"\0"):
                if entry.startswith(prefix):
                    mem.seek(start + offset + len(prefix))
                    mem.write(b"\0" * (len(entry) - len(prefix)))
                offset += len(entry) + 1
    except (OSError, ValueError, IndexError):
        logger.debug("Could not overwrite %s in /proc/self/environ", name, exc_info=True)


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# ---------------------------------------------------------------------- who is a client
THIS_MACHINE = "peer:this-machine"
_LOCAL_CACHE_SECONDS = 60.0
_LOCAL_CACHE_SIZE = 4096
_local_cache: dict[str, tuple[bool, float]] = {}
_local_lock = threading.Lock()


def _nonlocal_bind() -> bool:
    """Whether this machine lets a socket bind addresses it does not have (then binding tells nothing)."""
    for path in ("/proc/sys/net/ipv4/ip_nonlocal_bind", "/proc/sys/net/ipv6/ip_nonlocal_bind"):
        try:
            with open(path) as f:
                if f.read().strip() not in ("", "0"):
                    return True
        except OSError:
            continue
    return False


def _is_this_machine(addr: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether ``addr`` is one of this machine's own addresses: a socket can bind it.

    Answers are kept for a minute (addresses change rarely; a new peer costs one ``bind``).
    """
    key, now = str(addr), time.monotonic()
    with _local_lock:
        hit = _local_cache.get(key)
        if hit is not None and hit[1] > now:
            return hit[0]
    family = socket.AF_INET if addr.version == 4 else socket.AF_INET6
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind((key, 0))
        local = not _nonlocal_bind()
    except OSError:  # EADDRNOTAVAIL: another machine's address (a link-local one needs a scope: not ours)
        local = False
    with _local_lock:
        if len(_local_cache) >= _LOCAL_CACHE_SIZE:
            _local_cache.clear()
        _local_cache[key] = (local, now + _LOCAL_CACHE_SECONDS)
    return local


def client_of_peer(host: Optional[str]) -> str:
    """The client a connection from ``host`` counts as when the server has no tokens.

    Counted by what one user cannot multiply: every connection from this machine (any loopback
    address, 127.0.0.0/8 and ::1, or any of the machine's own addresses, which a local user may
    pick as a source address) is one client, ``peer:this-machine``; an IPv6 peer is its /64
    network (one host is usually given a whole /64 and may use any address in it); an IPv4 peer is
    its address. (Users behind one NAT address share a client; give each trainer a token instead.)
    """
    if not host:
        return "peer:unknown"
    try:
        addr = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:  # a Unix socket path: only this machine reaches it
        return THIS_MACHINE
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    if addr.is_loopback or addr.is_unspecified or _is_this_machine(addr):
        return THIS_MACHINE
    if addr.version == 6:
        return f"peer:{ipaddress.IPv6Network((addr, 64), strict=False)}"
    return f"peer:{addr}"


# ---------------------------------------------------------------------- ASGI guard
class _BodyTooLarge(Exception):
    pass


class _Disconnected(Exception):
    pass


def error_body(kind: str, message: str, type_name: Optional[str] = None) -> dict[str, Any]:
    """The JSON error every GEM server answers: ``{"error": {"kind", "type", "message"}}``."""
    return {"error": {"kind": kind, "type": type_name or kind, "message": message}}


async def send_json(send: Send, status: int, payload: dict[str, Any], close: bool = False) -> None:
    """Send a whole JSON response (ASCII, so any string survives)."""
    body = json.dumps(payload, separators=(",", ":")).encode("ascii")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class GuardMiddleware:
    """Origin, token, body-size, body-time and request-time checks in front of an ASGI app.

    Args:
        app: the app to guard.
        limits: the numbers to hold.
        tokens: accepted bearer tokens; empty means no token is needed. Token number ``i`` (from 0)
            names the client ``token:i``; without tokens a client is :func:`client_of_peer`.
        allow_origins: browser origins (``https://host:port``) allowed to call; ``"*"`` allows any.
            A request with any other ``Origin`` header is refused with 403 (WebSocket: closed
            during the handshake), since a browser sends one for cross-origin requests.
        open_paths: paths that need no token (``/health``).
        error: ``f(kind, message) -> JSON`` for refusals (default :func:`error_body`).
        allowed_hosts: if given, the ``Host`` header's name must be one of these (a server on
            127.0.0.1 refuses ``Host: evil.example``: a page whose name was re-pointed at 127.0.0.1,
            DNS rebinding, sends no ``Origin`` on its same-site GETs).
    """

    def __init__(
        self,
        app: Any,
        limits: ServerLimits,
        tokens: Sequence[str] = (),
        allow_origins: Iterable[str] = (),
        open_paths: Iterable[str] = ("/health",),
        error: Callable[[str, str], dict[str, Any]] = error_body,
        allowed_hosts: Optional[Iterable[str]] = None,
    ) -> None:
        self.app = app
        self.allowed_hosts = None if allowed_hosts is None else {h.strip("[]").lower() for h in allowed_hosts}
        self.limits = limits
        self.tokens = [t.encode() for t in tokens]
        if any(not t for t in self.tokens):
            raise ValueError("A token must not be empty.")
        self.allow_origins = {o.rstrip("/").lower() for o in allow_origins}
        self.open_paths = set(open_paths)
        self.error = error

    # ------------------------------------------------------------------ checks
    def origin_allowed(self, origin: str) -> bool:
        return "*" in self.allow_origins or origin.rstrip("/").lower() in self.allow_origins

    def identify(self, scope: Scope, headers: dict[bytes, bytes]) -> Optional[str]:
        """The client's name, or None when a token is needed and the one given is wrong."""
        peer = scope.get("client")
        if not self.tokens:
            return client_of_peer(peer[0] if peer else None)
        given = b""
        auth = headers.get(b"authorization", b"")
        if auth[:7].lower() == b"bearer ":
            given = auth[7:].strip()
        elif scope["type"] == "websocket":
            from urllib.parse import parse_qs

            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = (query.get("token") or [""])[0].encode("latin-1", "replace")
        found = None
        for i, token in enumerate(self.tokens):  # every token is compared, in constant time each
            if hmac.compare_digest(given, token) and found is None:
                found = i
        return None if found is None else f"token:{found}"

    # -------------------------------------------------------------------- ASGI
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        origin = headers.get(b"origin")
        if origin is not None and not self.origin_allowed(origin.decode("latin-1")):
            shown = origin.decode("latin-1")[:200]
            await self._refuse(
                scope, send, 403, "forbidden_origin",
                f"Requests from the web origin {shown!r} are refused: a web page may not drive this server. "
                f"Start the server with --allow-origin {shown} to allow it.",
            )
            return
        if self.allowed_hosts is not None:
            host = headers.get(b"host", b"").decode("latin-1").lower()
            name = host[1:].split("]")[0] if host.startswith("[") else host.rsplit(":", 1)[0] if ":" in host else host
            if name not in self.allowed_hosts:
                await self._refuse(
                    scope, send, 403, "forbidden_host",
                    f"Requests for the host {host[:100]!r} are refused; this server answers to "
                    f"{', '.join(sorted(self.allowed_hosts))}.",
                )
                return
        client = self.identify(scope, headers)
        if client is None:
            if scope.get("path") not in self.open_paths:
                await self._refuse(
                    scope, send, 401, "unauthorized", "Missing or wrong token: send 'Authorization: Bearer <token>'."
                )
                return
            client = "anonymous"
        scope[CLIENT_SCOPE_KEY] = client
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return
        await self._http(scope, receive, send, headers)

    async def _refuse(self, scope: Scope, send: Send, status: int, kind: str, message: str) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})
        else:
            await send_json(send, status, self.error(kind, message), close=True)

    async def _read_body(self, receive: Receive, cap: int) -> bytes:
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Disconnected
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > cap:
                raise _BodyTooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _http(self, scope: Scope, receive: Receive, send: Send, headers: dict[bytes, bytes]) -> None:
        cap = self.limits.max_body_bytes
        length = headers.get(b"content-length")
        if length is not None:
            if not length.strip().isdigit():
                await send_json(send, 400, self.error("bad_request", "Content-Length is not a number."), close=True)
                return
            if int(length) > cap:
                await send_json(
                    send, 413,
                    self.error("body_too_large", f"The body is {int(length)} bytes; the limit is {cap}."),
                    close=True,
                )
                return
        try:
            body = await asyncio.wait_for(self._read_body(receive, cap), self.limits.body_timeout)
        except _Disconnected:
            return
        except _BodyTooLarge:
            await send_json(send, 413, self.error("body_too_large", f"The body is over the limit of {cap} bytes."), True)
            return
        except asyncio.TimeoutError:
            message = f"The body did not arrive within {self.limits.body_timeout:g} s."
            await send_json(send, 408, self.error("request_timeout", message), close=True)
            return

        delivered = False

        async def replay() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()  # waits for the disconnect

        started = False

        async def tracked_send(message: dict[str, Any]) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await asyncio.wait_for(self.app(scope, replay, tracked_send), self.limits.request_timeout)
        except asyncio.TimeoutError:
            if not started:
                message = f"The request took longer than {self.limits.request_timeout:g} s."
                await send_json(send, 504, self.error("timeout", message), close=True)


# ------------------------------------------------------------------- uvicorn
def _guarded_protocols(limits: ServerLimits) -> tuple[type, Any]:
    """An h11 protocol class that cuts slow request heads and caps open connections, and the
    WebSocket protocol that goes with it.

    Connections that nobody is being answered on are kept in queues, oldest first: WebSockets the
    server has closed that wait for the client's closing reply (up to 10 s), those that have sent
    part of a request head (slowloris) or a request head whose body is still arriving, new ones
    that have sent nothing yet, and kept-alive ones that were answered and wait for their next
    request. Over the cap, a new connection closes the oldest of the first non-empty queue, in that
    order; never one whose request is being answered, nor an open WebSocket (those are capped by
    the app: half of the connections, :class:`gem.server.app.WebSocketGate`). So a flood of
    half-open connections, bodies that never finish or refused WebSockets displaces itself, not
    ``/health`` nor the trainers' kept-alive connections.
    """
    import collections

    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    closing: collections.OrderedDict[Any, None] = collections.OrderedDict()
    half_sent: collections.OrderedDict[Any, None] = collections.OrderedDict()
    fresh: collections.OrderedDict[Any, None] = collections.OrderedDict()
    kept: collections.OrderedDict[Any, None] = collections.OrderedDict()

    class GuardedH11Protocol(H11Protocol):
        header_timeout = limits.header_timeout
        max_connections = limits.max_connections

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._deadline: Optional[asyncio.TimerHandle] = None
            over = len(self.connections) > self.max_connections
            if over and not self._evict_one():
                logger.warning("Refusing a connection: %d open, none idle", len(self.connections))
                body = json.dumps(error_body("server_busy", "Too many open connections; retry later.")).encode()
                transport.write(
                    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nconnection: close\r\n"
                    + b"content-length: %d\r\n\r\n" % len(body) + body
                )
                transport.close()
                return
            self._go_idle(fresh)

        @staticmethod
        def _evict_one() -> bool:
            for queue in (closing, half_sent, fresh, kept):
                while queue:
                    oldest, _ = queue.popitem(last=False)
                    if not oldest.transport.is_closing():
                        oldest._cut()
                        return True
            return False

        def _forget(self) -> None:
            half_sent.pop(self, None)
            fresh.pop(self, None)
            kept.pop(self, None)

        def _go_idle(self, queue: collections.OrderedDict) -> None:
            self._forget()
            queue[self] = None
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline = self.loop.call_later(self.header_timeout, self._on_deadline)

        def _go_busy(self) -> None:
            self._forget()
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _on_deadline(self) -> None:
            self._deadline = None
            if self.transport.get_protocol() is self and (self in half_sent or self in fresh or self in kept):
                self._cut()

        def _cut(self) -> None:
            self._go_busy()
            if self.transport.is_closing():
                return
            if self.conn.our_state not in (h11.ERROR, h11.CLOSED, h11.MUST_CLOSE):
                try:
                    self.conn.send(h11.ConnectionClosed())
                except h11.LocalProtocolError:
                    pass
            self.transport.close()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if (self in fresh or self in kept) and (self.cycle is None or self.cycle.response_complete):
                self._forget()  # part of a head arrived, no request yet: half-sent
                half_sent[self] = None

        def handle_events(self) -> None:
            super().handle_events()
            if self.cycle is not None and not self.cycle.response_complete:
                if self.conn.their_state is h11.SEND_BODY and not self.cycle.response_started:
                    self._go_busy()  # a body still arriving (the guard's body time limit bounds it)
                    half_sent[self] = None  # ... holds nothing being answered yet: it may be closed
                else:
                    self._go_busy()

        def handle_websocket_upgrade(self, event: Any) -> None:
            self._go_busy()
            super().handle_websocket_upgrade(event)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            pipelined = self.cycle is not None and not self.cycle.response_complete
            if not self.transport.is_closing() and not pipelined:
                self._go_idle(kept)

        def connection_lost(self, exc: Optional[Exception]) -> None:
            self._go_busy()
            super().connection_lost(exc)

    return GuardedH11Protocol, _quiet_websocket_protocol(closing)


def _quiet_websocket_protocol(closing: Optional[Any] = None) -> Any:
    """uvicorn's WebSocket protocol, answering a text frame of invalid UTF-8 with close code 1007
    and a reason, as RFC 6455 asks, without logging a traceback for it. Once the server has sent
    its close frame, the connection joins ``closing`` (connections the guard may cut first)."""
    try:
        from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
    except ImportError:  # no websockets: uvicorn's default (wsproto or none)
        return "auto"
    closing = {} if closing is None else closing

    class QuietWebSocketProtocol(WebSocketsSansIOProtocol):
        async def send(self, message: Any) -> None:
            await super().send(message)
            if self.close_sent and not self.transport.is_closing():
                closing[self] = None  # only the client's closing reply is awaited

        def _cut(self) -> None:
            closing.pop(self, None)
            if not self.transport.is_closing():
                self.transport.close()

        def connection_lost(self, exc: Optional[Exception]) -> None:
            closing.pop(self, None)
            super().connection_lost(exc)

        def send_receive_event_to_app(self) -> None:
            if self.curr_msg_data_type == "text" and not self.close_sent:
                try:
                    b"".join(self.frames).decode()  # frames may split a character: check the whole message
                except UnicodeDecodeError:
                    self.frames = []
                    self.logger.info("Closed a WebSocket that sent invalid UTF-8 (1007)")
                    self.conn.send_close(1007, "invalid UTF-8 in a text frame")
                    self.handle_parser_exception()
                    return
            super().send_receive_event_to_app()

    return QuietWebSocketProtocol


def raise_open_files(wanted: int) -> int:
    """Raise this process's soft open-files limit towards ``wanted``; returns the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft


FD_RESERVE = 64  # descriptors kept for the process itself (its files, sandbox sockets, pipes)
MAX_ACCEPT_BURST = 2048  # uvicorn's default listen backlog
BURSTS_IN_FLIGHT = 3  # accepted, then handed to a transport, then evicted but not yet closed


def fit_connections(max_connections: int, open_files: int) -> tuple[int, int]:
    """``(connections, accept_burst)`` that fit in ``open_files`` descriptors.

    The event loop accepts up to ``accept_burst`` connections in one go (the listen backlog). A
    socket accepted in one loop turn reaches its protocol in the next turn or the one after, and
    a connection evicted for it is closed one turn later still; so under a sustained flood up to
    :data:`BURSTS_IN_FLIGHT` bursts are open beyond the connection cap, and at worst the server
    holds ``connections + 3 * accept_burst`` sockets plus :data:`FD_RESERVE` of its own. When that
    exceeds the open-files limit, accept fails (EMFILE), the event loop stops accepting for a
    second, and ``/health`` waits behind the flood; so both numbers are cut to fit, three
    quarters of what is left to connections and the rest to the bursts.
    """
    budget = max(open_files - FD_RESERVE, 16)
    burst = min(MAX_ACCEPT_BURST, max_connections)
    if max_connections + BURSTS_IN_FLIGHT * burst <= budget:
        return max_connections, burst
    connections = max(8, min(max_connections, budget * 3 // 4))
    return connections, max(1, min(MAX_ACCEPT_BURST, (budget - connections) // BURSTS_IN_FLIGHT))


def fit_limits(limits: ServerLimits) -> tuple[ServerLimits, int]:
    """``(limits, accept_burst)`` with the connection cap fitted to this process's open-files limit.

    The limit is raised as far as allowed first; the cap is lowered (with a warning) only when the
    limit cannot hold it (:func:`fit_connections`). Fitting fitted limits changes nothing.
    """
    wanted = limits.max_connections + BURSTS_IN_FLIGHT * min(MAX_ACCEPT_BURST, limits.max_connections) + FD_RESERVE
    open_files = raise_open_files(wanted)
    connections, burst = fit_connections(limits.max_connections, open_files)
    if connections < limits.max_connections:
        logger.warning(
            "The open-files limit is %d: serving at most %d connections instead of %d "
            "(raise it with `ulimit -n` to serve more).",
            open_files, connections, limits.max_connections,
        )
        from dataclasses import replace

        limits = replace(limits, max_connections=connections)
    return limits, burst


def uvicorn_config(app: Any, host: str, port: int, limits: ServerLimits, **kwargs: Any) -> Any:
    """A ``uvicorn.Config`` that holds ``limits``: guarded HTTP protocol, capped WebSocket messages.

    The open-files limit is raised as far as allowed; the connection cap and the accept burst are
    then fitted to it (:func:`fit_limits`).
    """
    import uvicorn

    limits, burst = fit_limits(limits)
    kwargs.setdefault("backlog", burst)
    http, ws = _guarded_protocols(limits)
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=http,
        ws=ws,
        ws_max_size=limits.max_body_bytes,
        timeout_keep_alive=max(1, int(limits.keep_alive_timeout)),
        h11_max_incomplete_event_size=64 * 1024,
        **kwargs,
    )
