"""``gem serve`` as a process: its start line, a clean stop on Ctrl-C, and its open-files limit."""

from __future__ import annotations

import os
import queue
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Callable, Optional, Sequence

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

GUESS = "game:GuessTheNumber-v0-random"


class ServeProcess:
    """``gem serve ARGS`` on a free loopback port; its stderr lines arrive in ``lines``."""

    def __init__(self, args: Sequence[str], env: Optional[dict[str, str]] = None,
                 preexec_fn: Optional[Callable[[], None]] = None) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gem.cli", "serve", *args, "--port", str(self.port)],
            env={**os.environ, "PYTHONPATH": os.getcwd(), "GEM_SERVER_TOKEN": "", **(env or {})},
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=preexec_fn,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line.rstrip("\n"))
        self.lines.put("")  # end of output

    def wait_for(self, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            self.seen.append(line)
            if text in line:
                return line
            if line == "" and self.proc.poll() is not None:
                break
        raise AssertionError(f"gem serve never wrote {text!r}; it wrote: {self.seen}")

    def rest(self, timeout: float = 20) -> list[str]:
        """The lines written until the process ended."""
        self.proc.wait(timeout=timeout)
        out = []
        while True:
            line = self.lines.get(timeout=5)
            if line == "":
                return out
            out.append(line)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def test_gem_serve_logs_its_address_and_stops_cleanly_on_ctrl_c():
    server = ServeProcess([GUESS])
    try:
        line = server.wait_for("listening")
        assert f"http://127.0.0.1:{server.port}" in line and "no token" in line
        assert httpx.get(server.url + "/health").status_code == 200
        sid = httpx.post(server.url + "/sessions", json={"env_id": GUESS}).json()["session_id"]
        assert sid
        server.proc.send_signal(signal.SIGINT)
        after = server.rest()
        assert server.proc.returncode == 0  # not killed by the signal (-2), not 130
        assert len(after) == 1 and "stopped (Ctrl-C)" in after[0], after
    finally:
        server.stop()


def test_the_start_line_names_the_token_mode_and_sigterm_stops_cleanly(tmp_path):
    path = tmp_path / "tokens"
    path.write_text("alpha\nbeta\n")
    path.chmod(0o600)
    server = ServeProcess([GUESS, "--token-file", str(path)])
    try:
        line = server.wait_for("listening")
        assert "token required (2 accepted" in line
        assert "alpha" not in line and "beta" not in line
        server.proc.send_signal(signal.SIGTERM)
        after = server.rest()
        assert server.proc.returncode == 0 and len(after) == 1 and "stopped (SIGTERM)" in after[0], after
    finally:
        server.stop()


def _descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


HALF_OPEN = {  # what each of 300 connections sends, and then nothing more
    "a part of a request head": b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ",
    "a head whose body never finishes": (
        b"POST /sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 1000\r\n\r\n{\"env_id\": "
    ),
    "a WebSocket upgrade, then silence": (
        b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    ),
}


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors through /proc")
@pytest.mark.parametrize("protocol, sent", [
    ("gem", "a part of a request head"),
    ("gem", "a head whose body never finishes"),
    ("openenv", "a head whose body never finishes"),
    ("openenv", "a WebSocket upgrade, then silence"),
])
def test_with_256_descriptors_300_half_open_requests_do_not_starve_health(protocol, sent):
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    server = ServeProcess([GUESS, "--protocol", protocol], preexec_fn=limit)
    slow = []
    try:
        server.wait_for("listening")
        for _ in range(300):  # more than the process can hold open
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            sock.sendall(HALF_OPEN[sent])
            slow.append(sock)
        time.sleep(0.5)
        assert _descriptors(server.proc.pid) < 256  # accept never ran out of descriptors
        for _ in range(5):
            start = time.monotonic()
            assert httpx.get(server.url + "/health", timeout=5).status_code == 200
            assert time.monotonic() - start < 3  # answered at once (a loaded machine may be slow)
        for sock in slow:
            sock.close()
        server.proc.send_signal(signal.SIGINT)
        after = server.rest()
        logged = "\n".join(server.seen + after)
        assert "Too many open files" not in logged
        assert "serving at most 144 connections" in logged  # the cap fitted to 256 descriptors
    finally:
        for sock in slow:
            sock.close()
        server.stop()


def test_connection_cap_and_accept_burst_fit_the_descriptor_limit():
    from gem.server.limits import BURSTS_IN_FLIGHT, FD_RESERVE, fit_connections

    assert fit_connections(2048, 1 << 20) == (2048, 2048)  # plenty: uvicorn's own numbers
    for open_files in (64, 256, 1024, 4096):
        connections, burst = fit_connections(2048, open_files)
        assert connections + BURSTS_IN_FLIGHT * burst + FD_RESERVE <= max(open_files, FD_RESERVE + 16)
        assert connections >= 8 and burst >= 1
    assert fit_connections(2048, 256) == (144, 16)
    assert fit_connections(100, 1000) == (100, 100)
