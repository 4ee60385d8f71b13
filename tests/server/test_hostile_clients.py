"""Hostile clients on loopback: each attack gets its limit asserted, in bounded count and time."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

import gem  # noqa: E402
from gem.server.limits import ServerLimits, read_secret, scrub_environ  # noqa: E402
from gem.server.scheduler import CallTimeout, FairScheduler  # noqa: E402
from tests.server.conftest import gem_serve  # noqa: E402

GUESS = "game:GuessTheNumber-v0-random"
MASTERMIND = "game:Mastermind-v0-hard"
RELEASE = threading.Event()  # BlockEnv steps wait for it


class EchoEnv(gem.Env):
    def reset(self, seed=None, **kwargs):
        super().reset(seed)
        return "say something", {}

    def _step(self, action):
        return self._result(action, 0.0)


class BlockEnv(EchoEnv):
    """A step that blocks until the test releases it (a program that sleeps, a slow tool)."""

    def step(self, action):
        RELEASE.wait(20)
        return super().step(action)


@pytest.fixture(autouse=True)
def test_ids():
    gem.register("test:HostileEcho-v0", EchoEnv)
    gem.register("test:Block-v0", BlockEnv)
    RELEASE.clear()
    try:
        yield
    finally:
        RELEASE.set()
        for env_id in ("test:HostileEcho-v0", "test:Block-v0"):
            gem.envs.registration.registry.pop(env_id, None)


def ws_url(server) -> str:
    return server.url.replace("http", "ws") + "/ws"


def raw_request(server, data: bytes, timeout: float = 5.0) -> bytes:
    """Send raw bytes on a new connection; what the server answers before closing or the timeout."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as sock:
        sock.sendall(data)
        chunks = []
        try:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                if b"\r\n\r\n" in b"".join(chunks) and b"connection: close" not in b"".join(chunks).lower():
                    break
        except socket.timeout:
            pass
        return b"".join(chunks)


# ------------------------------------------------------------------ who may connect
def test_cross_origin_websocket_and_http_are_refused(serve):
    pytest.importorskip("websockets")
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    server = serve(allow_origins=["https://trainer.example"])
    with pytest.raises(InvalidStatus) as info:
        connect(ws_url(server), origin="http://evil.example", proxy=None, open_timeout=5)
    assert info.value.response.status_code == 403
    answer = httpx.post(server.url + "/sessions", json={"env_id": GUESS}, headers={"Origin": "http://evil.example"})
    assert answer.status_code == 403 and answer.json()["error"]["kind"] == "forbidden_origin"
    assert "--allow-origin" in answer.json()["error"]["message"]
    assert httpx.get(server.url + "/health", headers={"Origin": "null"}).status_code == 403
    assert httpx.get(server.url + "/docs").status_code == 404  # no page of ours runs in a browser
    with connect(ws_url(server), origin="https://trainer.example", proxy=None, open_timeout=5) as ws:
        ws.send(json.dumps({"op": "make", "env_id": GUESS}))
        assert json.loads(ws.recv(timeout=10))["ok"]
    with connect(ws_url(server), proxy=None, open_timeout=5) as ws:  # no Origin: not a browser
        ws.send(json.dumps({"op": "make", "env_id": GUESS}))
        assert json.loads(ws.recv(timeout=10))["ok"]


def test_token_flag_is_refused_and_public_bind_needs_a_token(monkeypatch, capsys):
    from gem.cli import main

    monkeypatch.delenv("GEM_SERVER_TOKEN", raising=False)
    assert main(["serve", "--token", "s3cret"]) == 2
    assert "GEM_SERVER_TOKEN" in capsys.readouterr().err
    assert main(["serve", "--host", "0.0.0.0"]) == 2
    assert "--insecure-no-token" in capsys.readouterr().err


def test_token_file(tmp_path, monkeypatch):
    monkeypatch.setenv("GEM_TEST_TOKEN", "from-env")
    assert read_secret("GEM_TEST_TOKEN") == ["from-env"]
    path = tmp_path / "tokens"
    path.write_text("# trainers\nalpha\n\nbeta\n")
    path.chmod(0o644)
    with pytest.raises(ValueError, match="chmod 600"):
        read_secret("GEM_TEST_TOKEN", str(path))
    path.chmod(0o600)
    assert read_secret("GEM_TEST_TOKEN", str(path)) == ["alpha", "beta"]


def test_scrub_environ_hides_the_token_from_proc():
    code = (
        "import os; from gem.server.limits import scrub_environ\n"
        "before = open('/proc/self/environ', 'rb').read()\n"
        "scrub_environ('GEM_SERVER_TOKEN')\n"
        "after = open('/proc/self/environ', 'rb').read()\n"
        "print(b'tok-hidden-123' in before, b'tok-hidden-123' in after, 'GEM_SERVER_TOKEN' in os.environ)\n"
    )
    env = {**os.environ, "GEM_SERVER_TOKEN": "tok-hidden-123", "PYTHONPATH": os.getcwd()}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["True", "False", "False"], out.stderr
    scrub_environ("GEM_NOT_SET_ANYWHERE")  # nothing to do: no error


SCANNER = r'''
import os, sys
found, procs, files = [], 0, 0
def look(where, data):
    if isinstance(data, bytes):
        data = data.decode("latin-1")
    i = data.find("gemtok-")
    if i >= 0:
        found.append(where + "=" + data[i:i + 40])
for k, v in os.environ.items():
    look("env:" + k, k + "=" + v)
look("argv", " ".join(sys.argv))
for pid in os.listdir("/proc"):
    if pid.isdigit():
        procs += 1
        for name in ("cmdline", "environ"):
            try:
                look(pid + "/" + name, open("/proc/%s/%s" % (pid, name), "rb").read())
            except OSError:
                pass
for top in ("/tmp", os.getcwd(), os.path.expanduser("~")):
    for root, dirs, names in os.walk(top):
        for n in names[:200]:
            if files > 3000:
                break
            try:
                p = os.path.join(root, n)
                if os.path.getsize(p) < 100000:
                    files += 1
                    look(p, open(p, "rb").read())
            except OSError:
                pass
raise SystemExit("SCANNED %d procs %d files; found: %s" % (procs, files, found or "nothing"))
'''


def test_code_run_through_the_server_cannot_find_the_token(tmp_path):
    """A program run by a code env scans env vars, every visible process's argv and environment,
    and files: the server's token is nowhere it can read."""
    token = "gemtok-" + os.urandom(12).hex()
    with gem_serve(["code:Bundled"], {"GEM_SERVER_TOKEN": token}, cwd=str(tmp_path)) as url:
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
            sid = client.post("/sessions", json={"env_id": "code:Bundled", "kwargs": {"max_tests": 1}}).json()
            path = f"/sessions/{sid['session_id']}"
            client.post(path + "/reset", json={"seed": 0}).raise_for_status()
            reply = client.post(path + "/step", json={"action": f"```python\n{SCANNER}\n```"}).json()
    observation = reply["observation"]
    assert "SCANNED" in observation, observation  # the scan ran and reported back
    assert token not in json.dumps(reply) and "gemtok-" not in observation, observation


# ------------------------------------------------------------------ what a client may ask
def test_kwargs_are_checked_before_anything_is_built(serve):
    server = serve(env_ids=[MASTERMIND, "code:Bundled", "test:HostileEcho-v0"])
    start = time.monotonic()
    r = httpx.post(server.url + "/sessions", json={"env_id": MASTERMIND, "kwargs": {"code_length": 100_000_000}})
    assert r.status_code == 400 and "code_length must be an integer from 1 to 8" in r.json()["error"]["message"]
    assert time.monotonic() - start < 5
    r = httpx.post(server.url + "/sessions", json={"env_id": MASTERMIND, "kwargs": {"code_length": 5, "turbo": 1}})
    assert r.status_code == 400 and "may not set 'turbo'" in r.json()["error"]["message"]
    assert "max_turns (an integer from 1 to 10000" in r.json()["error"]["message"]
    r = httpx.post(server.url + "/sessions", json={"env_id": MASTERMIND, "kwargs": {"max_turns": True}})
    assert r.status_code == 400
    r = httpx.post(server.url + "/sessions", json={"env_id": "code:Bundled", "kwargs": {"dataset_name": "/etc/passwd"}})
    assert r.status_code == 400 and "may not set 'dataset_name'" in r.json()["error"]["message"]
    r = httpx.post(server.url + "/sessions", json={"env_id": "test:HostileEcho-v0", "kwargs": {"anything": 1}})
    assert r.status_code == 400 and "declares no kwargs" in r.json()["error"]["message"]
    ok = httpx.post(server.url + "/sessions", json={"env_id": MASTERMIND, "kwargs": {"code_length": 5, "seed": 3}})
    assert ok.status_code == 201
    ok = httpx.post(server.url + "/sessions", json={"env_id": "test:HostileEcho-v0", "kwargs": {"seed": 1}})
    assert ok.status_code == 201


def test_operator_may_allow_undeclared_kwargs(serve):
    server = serve(client_kwargs="any")
    for kwargs in ({"anything": 1}, {"client": "x", "on_done": 2, "fn": 3}):  # names of the server's own
        r = httpx.post(server.url + "/sessions", json={"env_id": "test:HostileEcho-v0", "kwargs": kwargs})
        assert r.status_code == 400 and "unknown argument" in r.json()["error"]["message"]  # reached the constructor


# ------------------------------------------------------------------ limits that hold
def test_slowloris_is_cut_and_health_stays_answerable(serve):
    limits = ServerLimits(header_timeout=0.5, max_connections=40)
    server = serve(limits=limits)
    slow = []
    for _ in range(120):  # three times the connection cap, none finishing its head
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        slow.append(sock)
    try:
        start = time.monotonic()
        assert httpx.get(server.url + "/health", timeout=5).status_code == 200  # evicts an idle one
        assert time.monotonic() - start < 2
        time.sleep(1.0)
        closed = 0
        for sock in slow:
            sock.settimeout(2)
            try:
                closed += sock.recv(100) == b""
            except (ConnectionResetError, socket.timeout):
                closed += 1
        assert closed == len(slow)  # every slow head was cut
    finally:
        for sock in slow:
            sock.close()


def test_a_body_that_never_arrives_times_out(serve):
    server = serve(limits=ServerLimits(body_timeout=0.5))
    answer = raw_request(server, b"POST /sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{", timeout=5)
    assert answer.startswith(b"HTTP/1.1 408")


def test_large_bodies_are_refused_unread(serve):
    server = serve(limits=ServerLimits(max_body_bytes=64 * 1024))
    # a declared 400 MB body is refused at once, without waiting for (or reading) it
    answer = raw_request(server, b"POST /sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 400000000\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 413") and b"body_too_large" in answer
    # a chunked body is counted as it arrives and refused past the cap
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(b"POST /sessions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"%x\r\n%s\r\n" % (16384, b"x" * 16384)
        answer = b""
        try:
            for _ in range(64):  # at most 1 MB sent; the server answers after 64 KB
                sock.sendall(chunk)
                sock.settimeout(0.05)
                try:
                    answer += sock.recv(4096)
                except socket.timeout:
                    continue
                if answer:
                    break
        except (BrokenPipeError, ConnectionResetError):
            pass
        sock.settimeout(5)
        while b"\r\n\r\n" not in answer:
            more = sock.recv(4096)
            if not more:
                break
            answer += more
    assert answer.startswith(b"HTTP/1.1 413")
    assert httpx.get(server.url + "/health").status_code == 200


def test_large_websocket_messages_are_refused(serve):
    pytest.importorskip("websockets")
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    server = serve(limits=ServerLimits(max_body_bytes=64 * 1024))
    with connect(ws_url(server), proxy=None, max_size=None) as ws:
        ws.send(json.dumps({"op": "step", "action": "x" * 200_000}))
        with pytest.raises(ConnectionClosed) as info:
            ws.recv(timeout=10)
    assert info.value.rcvd is not None and info.value.rcvd.code == 1009  # message too big
    assert httpx.get(server.url + "/health").status_code == 200


def test_sessions_per_client_and_in_total_are_capped_exactly(serve):
    server = serve(tokens=["alpha", "beta"], max_sessions=7, max_sessions_per_client=5)

    async def flood(token: str, count: int) -> list[int]:
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=30) as client:
            replies = await asyncio.gather(
                *(client.post("/sessions", json={"env_id": MASTERMIND}) for _ in range(count))
            )
        return sorted(r.status_code for r in replies)

    assert asyncio.run(flood("alpha", 20)) == [201] * 5 + [429] * 15  # no race lets a sixth through
    assert asyncio.run(flood("beta", 4)) == [201] * 2 + [429] * 2  # the total cap: 7
    metrics = httpx.get(server.url + "/metrics", headers={"Authorization": "Bearer beta"}).text
    assert "gem_sessions_active 7" in metrics


def test_one_client_cannot_starve_another(serve):
    """Client alpha's steps all block; client beta's steps still run at once."""
    server = serve(tokens=["alpha", "beta"], workers=8, per_client_workers=4)
    alpha = {"Authorization": "Bearer alpha"}
    beta = {"Authorization": "Bearer beta"}

    def session(headers: dict, env_id: str) -> str:
        sid = httpx.post(server.url + "/sessions", json={"env_id": env_id}, headers=headers).json()["session_id"]
        httpx.post(f"{server.url}/sessions/{sid}/reset", json={}, headers=headers).raise_for_status()
        return sid

    blocked = [session(alpha, "test:Block-v0") for _ in range(12)]
    theirs = session(beta, "test:HostileEcho-v0")
    pending = []

    def step(sid: str, headers: dict) -> None:
        pending.append(httpx.post(f"{server.url}/sessions/{sid}/step", json={"action": "x"}, headers=headers, timeout=30))

    threads = [threading.Thread(target=step, args=(sid, alpha)) for sid in blocked]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while "gem_calls_queued 8" not in httpx.get(server.url + "/metrics", headers=beta).text:
        assert time.monotonic() < deadline, "alpha's steps did not queue"
        time.sleep(0.05)
    metrics = httpx.get(server.url + "/metrics", headers=beta).text
    assert "gem_workers_busy 4" in metrics  # alpha holds its share, no more
    for _ in range(5):
        r = httpx.post(f"{server.url}/sessions/{theirs}/step", json={"action": "hi"}, headers=beta, timeout=10)
        assert r.json()["observation"] == "hi"
    assert pending == []  # alpha's steps are all still blocked
    RELEASE.set()
    for t in threads:
        t.join(30)
    assert [r.status_code for r in pending] == [200] * 12


def test_a_step_over_its_time_limit_gets_504_and_closes_the_session(serve):
    server = serve(call_timeout=0.5)
    sid = httpx.post(server.url + "/sessions", json={"env_id": "test:Block-v0"}).json()["session_id"]
    httpx.post(f"{server.url}/sessions/{sid}/reset", json={}).raise_for_status()
    r = httpx.post(f"{server.url}/sessions/{sid}/step", json={"action": "x"}, timeout=10)
    assert r.status_code == 504 and "session was closed" in r.json()["error"]["message"]
    assert httpx.post(f"{server.url}/sessions/{sid}/step", json={"action": "x"}).status_code == 404
    RELEASE.set()


def test_fair_scheduler_round_robin_and_timeouts():
    async def main() -> None:
        scheduler = FairScheduler(workers=2, per_client=2)
        order: list[str] = []
        gate = threading.Event()

        def work(name: str) -> str:
            gate.wait(5)
            order.append(name)
            return name

        calls = [scheduler.run("a", work, f"a{i}", timeout=10) for i in range(4)]
        calls += [scheduler.run("b", work, f"b{i}", timeout=10) for i in range(2)]
        tasks = [asyncio.ensure_future(c) for c in calls]
        await asyncio.sleep(0.1)
        assert scheduler.busy == 2 and scheduler.queued == 4
        gate.set()
        assert await asyncio.gather(*tasks) == ["a0", "a1", "a2", "a3", "b0", "b1"]
        # after a's first two, b's calls alternate with a's rather than waiting behind them
        assert order.index("b0") < order.index("a3")
        gate.clear()
        with pytest.raises(CallTimeout, match="ran longer"):
            await scheduler.run("a", work, "slow", timeout=0.2)
        gate.set()
        scheduler.shutdown()

    asyncio.run(main())


def test_malformed_frames_and_json_get_errors_not_tracebacks(serve, caplog):
    pytest.importorskip("websockets")
    from websockets.sync.client import connect

    server = serve()
    deep = "[" * 100_000 + "]" * 100_000
    r = httpx.post(server.url + "/sessions", content=deep, headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and "nested too deeply" in r.json()["error"]["message"]
    r = httpx.post(server.url + "/sessions", content=b'{"env_id": "\xff\xfe"}')
    assert r.status_code == 400
    r = httpx.post(server.url + "/sessions", content=b"[1, 2]")
    assert r.status_code == 400 and "JSON object" in r.json()["error"]["message"]
    with connect(ws_url(server), proxy=None) as ws:
        ws.send(b"\x00\x01binary")
        assert "text frame" in json.loads(ws.recv(timeout=10))["error"]["message"]
        ws.send(deep)
        assert "nested too deeply" in json.loads(ws.recv(timeout=10))["error"]["message"]
        ws.send(json.dumps({"op": "make", "env_id": GUESS}))  # the connection still works
        assert json.loads(ws.recv(timeout=10))["ok"]
    from websockets.exceptions import ConnectionClosed

    with connect(ws_url(server), proxy=None) as ws:
        ws.send(b"\xff\xfe{", text=True)  # invalid UTF-8 in a text frame: RFC 6455 closes with 1007
        with pytest.raises(ConnectionClosed) as info:
            ws.recv(timeout=10)
        assert info.value.rcvd.code == 1007 and "invalid UTF-8" in info.value.rcvd.reason
    assert httpx.get(server.url + "/health").status_code == 200
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]


def test_dns_rebinding_is_refused_on_loopback(serve):
    server = serve(allowed_hosts=["127.0.0.1", "localhost", "::1"])
    assert httpx.get(server.url + "/envs").status_code == 200
    answer = httpx.get(server.url + "/envs", headers={"Host": f"evil.example:{server.port}"})
    assert answer.status_code == 403 and answer.json()["error"]["kind"] == "forbidden_host"
    assert httpx.get(f"http://localhost:{server.port}/health").status_code == 200
