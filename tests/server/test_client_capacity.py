"""Who a client is and how much of the server it may hold: loopback servers, real connections.

Without tokens, this machine is one client whatever source address a program picks (127.0.0.2 and
127.0.0.3 are the same user); per-client caps are a share of each total; a WebSocket that makes
no session within the grace period is closed, so idle sockets cannot hold the server's capacity.
Every test is bounded in connections and time, on loopback only.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")
pytest.importorskip("websockets")
from websockets.exceptions import ConnectionClosed  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from gem.server.limits import THIS_MACHINE, ServerLimits, client_of_peer  # noqa: E402
from gem.server.protocol import client_share  # noqa: E402

GUESS = "game:GuessTheNumber-v0-random"


def _loopback_alias_works(address: str) -> bool:
    try:
        with socket.socket() as sock:
            sock.bind((address, 0))
        return True
    except OSError:
        return False


needs_aliases = pytest.mark.skipif(
    not _loopback_alias_works("127.0.0.2"), reason="this host cannot bind 127.0.0.2 (no 127/8 loopback)"
)


def _from(source: str, port: int) -> socket.socket:
    """A TCP connection to the server on 127.0.0.1:port whose source address is ``source``."""
    sock = socket.socket()
    sock.settimeout(10)
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", port))
    return sock


def ws_from(server, source: str = "127.0.0.1", token: str = "") -> object:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return connect(
        f"ws://127.0.0.1:{server.port}/ws", sock=_from(source, server.port), additional_headers=headers,
        proxy=None, open_timeout=10,
    )


# ----------------------------------------------------------------- who is a client
def test_every_address_of_this_machine_is_one_client():
    for host in ("127.0.0.1", "127.0.0.2", "127.255.0.9", "::1", "::ffff:127.0.0.3", "0.0.0.0", "::"):
        assert client_of_peer(host) == THIS_MACHINE, host
    own = socket.gethostbyname_ex(socket.gethostname())[2]
    for host in own:  # a local user may pick any of the machine's addresses as a source
        assert client_of_peer(host) == THIS_MACHINE, host


def test_remote_peers_count_by_ipv4_address_and_ipv6_slash_64():
    assert client_of_peer("203.0.113.5") == "peer:203.0.113.5"  # (documentation ranges: never local)
    assert client_of_peer("203.0.113.6") != client_of_peer("203.0.113.5")
    assert client_of_peer("::ffff:203.0.113.5") == "peer:203.0.113.5"
    # One host holds a whole /64 and may use any address in it.
    same_host = ("2001:db8:0:7::1", "2001:db8:0:7:ffff::2")
    assert {client_of_peer(host) for host in same_host} == {"peer:2001:db8:0:7::/64"}
    assert client_of_peer("2001:db8:0:8::1") != client_of_peer("2001:db8:0:7::1")
    assert client_of_peer(None) == "peer:unknown"


@needs_aliases
def test_two_loopback_addresses_share_one_clients_sessions(serve):
    server = serve(env_ids=[GUESS], max_sessions=8)  # a client holds a quarter: 2
    statuses = []
    for source in ("127.0.0.2", "127.0.0.3", "127.0.0.3"):
        transport = httpx.HTTPTransport(local_address=source)
        with httpx.Client(transport=transport, timeout=30) as client:
            statuses.append(client.post(server.url + "/sessions", json={"env_id": GUESS}).status_code)
    assert statuses == [201, 201, 429]  # the second address did not get a quota of its own


@needs_aliases
def test_two_loopback_addresses_share_one_clients_websockets(serve):
    server = serve(env_ids=[GUESS], limits=ServerLimits(max_connections=16))  # 8 WebSockets, 2 per client
    with contextlib.ExitStack() as held:
        for source in ("127.0.0.2", "127.0.0.3"):
            ws = held.enter_context(ws_from(server, source))
            ws.send(json.dumps({"op": "make", "env_id": GUESS}))
            assert json.loads(ws.recv(timeout=30))["ok"]
        with pytest.raises(ConnectionClosed) as refused:
            with ws_from(server, "127.0.0.4") as third:
                third.recv(timeout=10)
        assert refused.value.rcvd.code == 1013


# ----------------------------------------------------------------- shares of each total
def test_per_client_caps_are_a_share_of_each_total():
    from gem.server.app import WebSocketGate, per_client_sessions

    assert client_share(1024) == 256 and client_share(3) == 1
    assert per_client_sessions(10_000) == 1000 and per_client_sessions(1000) == 250
    gate = WebSocketGate(2048, 600, 10)  # gem serve's defaults: 1024 WebSockets
    assert (gate.total, gate.per_client) == (1024, 256)  # was 1000 of 1024: one client and a friend filled it
    assert WebSocketGate(2048, 600, 10, asked_per_client=5000).per_client == 1023  # never all of them
    assert WebSocketGate(16, 600, 10, asked_per_client=3).per_client == 3  # the operator's own choice stands
    with pytest.raises(ValueError, match="session_grace"):
        WebSocketGate(16, 600, 0)


def test_each_client_holds_a_share_of_the_websockets_and_others_still_get_in(serve):
    limits = ServerLimits(max_connections=16)  # 8 WebSockets, 2 per client
    server = serve(env_ids=[GUESS], tokens=["alpha", "beta", "gamma"], limits=limits)
    with contextlib.ExitStack() as held:
        for token in ("alpha", "alpha"):
            ws = held.enter_context(ws_from(server, token=token))
            ws.send(json.dumps({"op": "make", "env_id": GUESS}))
            assert json.loads(ws.recv(timeout=30))["ok"]
        with pytest.raises(ConnectionClosed) as refused:
            with ws_from(server, token="alpha") as more:
                more.recv(timeout=10)
        assert refused.value.rcvd.code == 1013 and "too many open WebSockets" in refused.value.rcvd.reason
        for token in ("beta", "gamma"):  # the others keep their share
            with ws_from(server, token=token) as ws:
                ws.send(json.dumps({"op": "make", "env_id": GUESS}))
                assert json.loads(ws.recv(timeout=30))["ok"]


# ----------------------------------------------------------------- the grace period
def closed_within(ws, seconds: float) -> tuple[int, str, float]:
    start = time.monotonic()
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            ws.recv(timeout=seconds)
    return closed.value.rcvd.code, closed.value.rcvd.reason, time.monotonic() - start


def test_a_gem_websocket_that_makes_no_session_is_closed_after_the_grace(serve):
    server = serve(env_ids=[GUESS], session_grace=0.5)
    with ws_from(server) as silent:
        code, reason, waited = closed_within(silent, 10)
    assert code == 1008 and "no session within 0.5 s" in reason and "make" in reason and waited < 5
    with ws_from(server) as chatty:  # messages that make no session do not extend the grace
        start = time.monotonic()
        with pytest.raises(ConnectionClosed) as closed:
            while time.monotonic() - start < 10:
                chatty.send(json.dumps({"op": "sample"}))
                assert json.loads(chatty.recv(timeout=10))["ok"] is False
                time.sleep(0.1)
        assert closed.value.rcvd.code == 1008 and time.monotonic() - start < 5
    with ws_from(server) as working:  # a socket with a session stays past the grace
        working.send(json.dumps({"op": "make", "env_id": GUESS}))
        assert json.loads(working.recv(timeout=30))["ok"]
        time.sleep(1.0)
        working.send(json.dumps({"op": "reset", "seed": 1}))
        assert json.loads(working.recv(timeout=30))["ok"]
