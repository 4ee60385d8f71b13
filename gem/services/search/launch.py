"""Start and stop search servers from Python: as a child process, or inside this process on a thread.

Used by the tests, the demo and the benchmark; both bind 127.0.0.1 on a free port unless told
otherwise and always stop what they started::

    with start_server_process("gem.services.search.retrieval_server", ["--corpus_path", "c.jsonl"]) as server:
        tool = SearchTool(search_url=server.url)
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Sequence

from gem.errors import ResourceUnavailable

DEFAULT_START_TIMEOUT = 120.0


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


@dataclass
class RunningServer:
    """A started server: ``base_url`` (``http://host:port``) and ``url`` (its ``/retrieve``)."""

    host: str
    port: int
    process: Optional[subprocess.Popen] = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.base_url}/retrieve"

    def health(self, timeout: float = 5.0) -> dict[str, Any]:
        import requests

        response = requests.get(f"{self.base_url}/health", timeout=timeout)
        response.raise_for_status()
        return response.json()


def _wait_healthy(server: RunningServer, timeout: float, log: Any = None) -> None:
    import requests

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process is not None and server.process.poll() is not None:
            output = ""
            if log is not None:
                log.seek(0)
                output = log.read().decode(errors="replace")[-2000:]
            raise ResourceUnavailable(
                f"The search server exited with status {server.process.returncode} before it was ready:\n{output}"
            )
        try:
            if requests.get(f"{server.base_url}/health", timeout=1.0).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    raise ResourceUnavailable(f"The search server at {server.base_url} was not ready after {timeout:g} s.")


@contextlib.contextmanager
def start_server_process(
    module: str,
    args: Sequence[str] = (),
    host: str = "127.0.0.1",
    port: Optional[int] = None,
    timeout: float = DEFAULT_START_TIMEOUT,
    env: Optional[dict[str, str]] = None,
) -> Iterator[RunningServer]:
    """Run ``python -m module --host host --port port *args`` until the block ends."""
    import tempfile

    port = port or free_port(host)
    command = [sys.executable, "-m", module, "--host", host, "--port", str(port), "--log_level", "warning", *args]
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
        )
        server = RunningServer(host, port, process)
        try:
            _wait_healthy(server, timeout, log)
            yield server
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextlib.contextmanager
def serve_app_in_thread(app: Any, host: str = "127.0.0.1", timeout: float = 30.0) -> Iterator[RunningServer]:
    """Serve a FastAPI app with uvicorn on a background thread, on a free port, until the block ends."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    from gem.http.limits import uvicorn_config
    from gem.services.search.service import server_limits

    server = uvicorn.Server(uvicorn_config(app, host, port, server_limits(), log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    running = RunningServer(host, port)
    try:
        deadline = time.monotonic() + timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise ResourceUnavailable(f"The in-process server on port {port} did not start.")
            time.sleep(0.02)
        yield running
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
