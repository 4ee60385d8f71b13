"""A hostile OpenEnv server on 127.0.0.1: it plays, one behaviour per URL prefix, what a server
GEM imports an env from might do to it.

``HostileServer().start()`` listens on a free loopback port; ``server.url(mode)`` is the base URL of
one behaviour (``gem.make(f"openenv:{server.url('reward-nan')}")``): ``/<mode>/schema`` and
``/<mode>/ws`` answer as that mode says (see :data:`MODES`). Plain sockets, so every byte is under
the test's control: it drips, lies about lengths, redirects, sends NaN. It is bounded and stops
itself: every connection ends when the server stops, each drip and stream stops after
``lifetime`` seconds, and the server shuts down after ``lifetime`` even if nobody calls ``stop()``.
``server.requests`` records ``(path, headers)`` of every request it read.
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import socketserver
import struct
import threading
from typing import Optional

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455
HUGE = 200 * 1024 * 1024
TEXT_SCHEMA = {"action": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
               "observation": {"type": "object"}, "state": {"type": "object"}}
FIRST = {"type": "observation", "data": {"observation": {"text": "guess a number", "metadata": {}},
                                         "reward": None, "done": False}}


def _result(reward: str = "0.0", done: str = "true", metadata: str = '{"terminated": true, "truncated": false}',
            observation: Optional[str] = None) -> str:
    """A step reply written as raw JSON text, so NaN/Infinity literals and wrong types go out as they are."""
    obs = observation if observation is not None else '{"text": "over", "metadata": ' + metadata + "}"
    data = '{"observation": ' + obs + ', "reward": ' + reward + ', "done": ' + done + "}"
    return '{"type": "observation", "data": ' + data + "}"


# mode -> what its step answers (a JSON text), for the modes whose only hostility is the step reply.
STEP_REPLIES: dict[str, str] = {
    "well-behaved": _result("1.0"),
    "reward-nan": _result("NaN"),
    "reward-inf": _result("Infinity"),
    "reward-neg-inf": _result("-Infinity"),
    "reward-big": _result("1e308"),
    "reward-string": _result('"1.0"'),
    "reward-list": _result("[1.0]"),
    "reward-object": _result('{"value": 1.0}'),
    "claims-success": _result(
        "0.0", metadata='{"terminated": true, "truncated": false, "success": true, "correct": true}'),
    "inf-claims-success": _result("Infinity", metadata='{"terminated": true, "truncated": false, "success": true}'),
    "flags-not-bools": _result("1.0", metadata='{"terminated": "yes", "truncated": 0}'),
    "done-not-bool": _result("1.0", done='"true"', metadata="{}"),
    "observation-not-object": _result("1.0", observation='"you win"'),
    "metadata-not-object": _result("1.0", metadata='["success"]'),
    "data-not-object": '{"type": "observation", "data": [1, 2, 3]}',
    "reply-not-object": '"observation"',
    "not-json-ws": "{reward: 1.0, done: yes",
    "deep-json-ws": "[" * 100_000 + "]" * 100_000,
}
# Modes hostile in another way (the schema route, the socket itself).
OTHER_MODES = (
    "drip-schema",  # /schema: headers, then one byte of body every `drip` seconds
    "drip-headers",  # /schema: the status line itself, one byte every `drip` seconds
    "huge-schema",  # /schema: announces 200 MB and streams them
    "huge-schema-unannounced",  # /schema: no Content-Length, 200 MB until the client hangs up
    "deep-schema",  # /schema: JSON nested 100 000 deep
    "not-json-schema",  # /schema: not JSON
    "schema-not-object",  # /schema: JSON, but a list
    "redirect-away",  # /schema: 302 to `redirect_to` (another origin)
    "redirect-home",  # /schema: 302 to /well-behaved/schema on this same origin
    "ws-redirect-away",  # /ws: 302 to `redirect_to`
    "silent-ws",  # /ws: accepts, then never answers
    "drip-ws",  # /ws: a frame announcing 1000 bytes, one byte every `drip` seconds
    "huge-ws",  # /ws: a frame announcing 200 MB, then streams them
)
MODES = tuple(STEP_REPLIES) + OTHER_MODES


class HostileServer:
    """The server; see the module's doc. ``drip``: seconds between dripped bytes."""

    def __init__(
        self, *, drip: float = 1.0, lifetime: float = 120.0, redirect_to: str = "http://localhost:9/x"
    ) -> None:
        self.drip, self.lifetime, self.redirect_to = drip, lifetime, redirect_to
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.stopping = threading.Event()
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                self.request.settimeout(lifetime)
                try:
                    owner._serve(self.request)
                except (OSError, ValueError):
                    pass  # the client went away: that is how most of these end

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._server = Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self._timer = threading.Timer(lifetime, self.stop)
        self._timer.daemon = True

    def url(self, mode: str) -> str:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; the modes: {', '.join(MODES)}")
        return f"http://127.0.0.1:{self.port}/{mode}"

    def start(self) -> "HostileServer":
        self._thread.start()
        self._timer.start()
        return self

    def stop(self) -> None:
        if not self.stopping.is_set():
            self.stopping.set()
            self._timer.cancel()
            self._server.shutdown()
            self._server.server_close()

    # ---------------------------------------------------------------- HTTP
    def _serve(self, sock: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk or len(head) > 65536:
                return
            head += chunk
        lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
        path = lines[0].split(" ")[1]
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        self.requests.append((path, headers))
        mode, _, route = path.strip("/").partition("/")
        if route == "ws":
            self._websocket(sock, mode, headers)
        elif route == "schema":
            self._schema(sock, mode)
        else:
            self._send_http(sock, 404, b'{"detail": "not found"}')

    def _send_http(self, sock: socket.socket, status: int, body: bytes, extra: str = "") -> None:
        reason = {200: "OK", 302: "Found", 404: "Not Found"}.get(status, "Status")
        sock.sendall(f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                     f"Connection: close\r\n{extra}\r\n".encode() + body)

    def _drip(self, sock: socket.socket, data: bytes) -> None:
        for i in range(len(data)):
            if self.stopping.wait(self.drip):
                return
            sock.sendall(data[i:i + 1])

    def _stream(self, sock: socket.socket, total: int) -> None:
        block = b"[" * 65536
        sent = 0
        while sent < total and not self.stopping.is_set():
            sock.sendall(block)
            sent += len(block)

    def _schema(self, sock: socket.socket, mode: str) -> None:
        if mode == "drip-schema":
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
            self._drip(sock, json.dumps(TEXT_SCHEMA).encode().ljust(1000))
        elif mode == "drip-headers":
            self._drip(sock, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
        elif mode == "huge-schema":
            head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {HUGE}\r\n\r\n"
            sock.sendall(head.encode())
            self._stream(sock, HUGE)
        elif mode == "huge-schema-unannounced":
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
            self._stream(sock, HUGE)
        elif mode == "deep-schema":
            self._send_http(sock, 200, b"[" * 100_000 + b"]" * 100_000)
        elif mode == "not-json-schema":
            self._send_http(sock, 200, b"<html>definitely a schema</html>")
        elif mode == "schema-not-object":
            self._send_http(sock, 200, b"[1, 2, 3]")
        elif mode == "redirect-away":
            self._send_http(sock, 302, b"", f"Location: {self.redirect_to}\r\n")
        elif mode == "redirect-home":
            self._send_http(sock, 302, b"", "Location: /well-behaved/schema\r\n")
        else:
            self._send_http(sock, 200, json.dumps(TEXT_SCHEMA).encode())

    # ----------------------------------------------------------- WebSocket
    def _websocket(self, sock: socket.socket, mode: str, headers: dict[str, str]) -> None:
        if mode == "ws-redirect-away":
            self._send_http(sock, 302, b"", f"Location: {self.redirect_to}\r\n")
            return
        key = headers.get("sec-websocket-key", "")
        accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        sock.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      f"Sec-WebSocket-Accept: {accept}\r\n\r\n").encode())
        while not self.stopping.is_set():
            opcode, payload = _read_frame(sock)
            if opcode is None or opcode == 0x8:  # gone, or a close frame
                return
            if opcode != 0x1:
                continue
            message = json.loads(payload)
            kind = message.get("type")
            if kind == "close":
                return
            if mode == "silent-ws":
                self.stopping.wait(self.lifetime)
                return
            if mode == "drip-ws":
                sock.sendall(bytes([0x81, 126]) + struct.pack("!H", 1000))
                self._drip(sock, b" " * 1000)
                return
            if mode == "huge-ws":
                sock.sendall(bytes([0x81, 127]) + struct.pack("!Q", HUGE))
                self._stream(sock, HUGE)
                return
            if kind == "reset":
                _write_frame(sock, json.dumps(FIRST).encode())
            elif kind == "step":
                _write_frame(sock, STEP_REPLIES.get(mode, STEP_REPLIES["well-behaved"]).encode())
            else:
                _write_frame(sock, b'{"type": "state", "data": {"step_count": 0}}')


def _recv_exact(sock: socket.socket, n: int) -> Optional[bytes]:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _read_frame(sock: socket.socket) -> tuple[Optional[int], bytes]:
    """One client frame (masked, as RFC 6455 has clients send them): ``(opcode, payload)``."""
    head = _recv_exact(sock, 2)
    if head is None:
        return None, b""
    opcode, length = head[0] & 0x0F, head[1] & 0x7F
    if length == 126:
        length = struct.unpack("!H", _recv_exact(sock, 2) or b"\0\0")[0]
    elif length == 127:
        length = struct.unpack("!Q", _recv_exact(sock, 8) or b"\0" * 8)[0]
    if length > 1 << 20:
        return None, b""
    mask = _recv_exact(sock, 4) if head[1] & 0x80 else b"\0\0\0\0"
    payload = _recv_exact(sock, length) if length else b""
    if mask is None or payload is None:
        return None, b""
    return opcode, bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def _write_frame(sock: socket.socket, payload: bytes, opcode: int = 0x1) -> None:
    """One unmasked server frame."""
    n = len(payload)
    if n < 126:
        head = bytes([0x80 | opcode, n])
    elif n < 1 << 16:
        head = bytes([0x80 | opcode, 126]) + struct.pack("!H", n)
    else:
        head = bytes([0x80 | opcode, 127]) + struct.pack("!Q", n)
    sock.sendall(head + payload)

