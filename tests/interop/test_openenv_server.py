"""``gem serve --protocol openenv``: OpenEnv's routes, messages and error codes, and gem serve's
checks, spoken to with a plain WebSocket and HTTP (openenv-core's own client and models check the
same server in test_openenv_core.py)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="needs the server extra (pip install -e '.[server]' in the GEM checkout)")
from websockets.sync.client import connect  # noqa: E402

import gem  # noqa: E402
from gem.server.limits import ServerLimits  # noqa: E402
from tests.interop.families import record  # noqa: E402
from tests.server.test_client_capacity import closed_within, ws_from  # noqa: E402
from tests.interop.wire import http, ws_exchange  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
GAME = "game:GuessTheNumber-v0"
MATH = "math:Arithmetic"


# ----------------------------------------------------------------- the protocol
def test_whole_episodes_over_the_websocket_earn_local_rewards(serve):
    url = serve([GAME, MATH]).url
    for env_id, seed in ((GAME, 3), (MATH, 0)):
        trace = record(env_id, seed)
        messages = [{"type": "reset", "data": {"seed": seed, "env_id": env_id}}]
        messages += [{"type": "step", "data": {"text": action}} for action in trace.actions]
        first, *steps = ws_exchange(url, *messages)
        assert first == {"type": "observation", "data": {
            "observation": {"text": trace.first, "metadata": first["data"]["observation"]["metadata"]},
            "reward": None, "done": False}}
        for reply, (obs, reward, terminated, truncated) in zip(steps, trace.steps):
            data = reply["data"]
            assert (data["observation"]["text"], data["reward"], data["done"]) == (obs, reward, terminated or truncated)
            assert (data["observation"]["metadata"]["terminated"], data["observation"]["metadata"]["truncated"]) == (
                terminated, truncated)
    assert record(GAME, 3).total == 1.0  # the solver's episode is a win: rewards were earned, not all zero


def test_info_routes(serve):
    url = serve([GAME]).url
    assert http(url + "/health") == (200, {"status": "healthy"})
    status, schema = http(url + "/schema")
    assert set(schema) == {"action", "observation", "state"}
    assert schema["action"]["required"] == ["text"] and schema["action"]["properties"]["text"]["type"] == "string"
    status, metadata = http(url + "/metadata")
    assert metadata["name"] == GAME and metadata["version"] == gem.__version__
    assert http(url + "/state")[1]["step_count"] == 0


@pytest.mark.parametrize(
    "message, code",
    [
        ("{not json", "INVALID_JSON"),
        ({"type": "dance"}, "UNKNOWN_TYPE"),
        ({"type": "step", "data": {"txt": "x"}}, "VALIDATION_ERROR"),
        ({"type": "step", "data": {"text": 5}}, "VALIDATION_ERROR"),
        ({"type": "reset", "data": {"seed": -1}}, "VALIDATION_ERROR"),
        ({"type": "step", "data": {"text": "x"}}, "EXECUTION_ERROR"),  # no reset yet
        ({"type": "reset", "data": {"env_id": "game:NoSuchGame-v0"}}, "FACTORY_ERROR"),
        ({"type": "reset", "data": {"kwargs": {"rm_rf": True}}}, "FACTORY_ERROR"),
    ],
)
def test_ws_errors_use_openenvs_codes_and_keep_the_session(serve, message, code):
    url = serve([GAME]).url
    error, after = ws_exchange(url, message, {"type": "reset", "data": {"seed": 0}})
    assert error["type"] == "error" and set(error) == {"type", "data"}
    assert error["data"]["code"] == code and error["data"]["message"]
    assert after["type"] == "observation"  # a bad message never ends the connection


def test_capacity_is_gems_per_client_quota(serve):
    url = serve([GAME], max_sessions_per_client=1).url
    with connect(url.replace("http://", "ws://") + "/ws") as first:
        first.send(json.dumps({"type": "reset", "data": {}}))
        assert json.loads(first.recv(timeout=30))["type"] == "observation"
        with connect(url.replace("http://", "ws://") + "/ws") as second:  # as OpenEnv: told at once, then closed
            refused = json.loads(second.recv(timeout=30))
    assert refused["type"] == "error" and refused["data"]["code"] == "CAPACITY_REACHED"


def test_capacity_is_gems_session_quota(serve):
    url = serve([GAME], max_sessions=1, max_sessions_per_client=2).url
    with connect(url.replace("http://", "ws://") + "/ws") as first:
        first.send(json.dumps({"type": "reset", "data": {}}))
        assert json.loads(first.recv(timeout=30))["type"] == "observation"
        refused, state = ws_exchange(url, {"type": "reset", "data": {}}, {"type": "state"})
        assert refused["data"]["code"] == "CAPACITY_REACHED" and "maximum of 1 sessions" in refused["data"]["message"]
        assert state["type"] == "state"  # the connection stays usable
        assert http(url + "/reset", {})[0] == 429  # the stateless routes hold the same quota
    deadline = time.monotonic() + 10  # the first session is closed with its socket (just after it)
    while (ok := ws_exchange(url, {"type": "reset", "data": {}})[0])["type"] != "observation":
        assert time.monotonic() < deadline, ok
        time.sleep(0.05)


def test_env_id_selects_among_served_ids(serve):
    url = serve([GAME, MATH]).url
    (error,) = ws_exchange(url, {"type": "reset", "data": {}})
    assert error["data"]["code"] == "FACTORY_ERROR" and MATH in error["data"]["message"]
    game, math_, game_again = ws_exchange(
        url, {"type": "reset", "data": {"env_id": GAME, "seed": 2}}, {"type": "reset", "data": {"env_id": MATH, "seed": 2}},
        {"type": "reset", "data": {"env_id": GAME, "seed": 2}},
    )
    assert game["data"]["observation"]["text"] == gem.make(GAME).reset(seed=2)[0]
    assert math_["data"]["observation"]["text"] == gem.make(MATH).reset(seed=2)[0]
    assert game_again == game
    (outside,) = ws_exchange(url, {"type": "reset", "data": {"env_id": "game:Mastermind-v0-easy"}})
    assert outside["data"]["code"] == "FACTORY_ERROR"


def test_http_reset_and_step_are_stateless_with_gems_seeds(serve):
    url = serve([MATH]).url
    for seed in range(3):
        local = gem.make(MATH)
        problem, _ = local.reset(seed=seed)
        status, reset = http(url + "/reset", {"seed": seed})
        assert status == 200 and reset == {"observation": reset["observation"], "reward": None, "done": False}
        assert reset["observation"]["text"] == problem
        gold = f"\\boxed{{{local.answer}}}"
        for action in ("\\boxed{-123456789}", gold):
            _, local_reward, *_ = _local_step(seed, action)
            status, step = http(url + "/step", {"action": {"text": action}, "seed": seed})
            assert status == 200 and set(step) == {"observation", "reward", "done"} and step["done"] is True
            assert step["reward"] == local_reward
        assert _local_step(seed, gold)[1] == 1.0  # the gold answer is paid; the wrong one above is not
    status, empty = http(url + "/reset", b"")  # OpenEnv's reset takes an empty body
    assert status == 200 and empty["observation"]["text"]
    status, invalid = http(url + "/step", {"action": {"code": "x"}})
    assert status == 422 and invalid["detail"][0]["loc"] == ["text"]


def _local_step(seed: int, action: str):
    env = gem.make(MATH)
    env.reset(seed=seed)
    return env.step(action)


def test_tokens_and_origins_are_gems_checks(serve):
    url = serve([GAME], tokens=["s3cret"]).url
    assert http(url + "/health")[0] == 200  # open, as in gem serve
    assert http(url + "/schema")[0] == 401
    assert http(url + "/reset", {})[0] == 401
    assert http(url + "/schema", headers={"Authorization": "Bearer s3cret"})[0] == 200
    from websockets.exceptions import InvalidStatus

    with pytest.raises(InvalidStatus, match="403"):  # refused in the handshake, before any session
        ws_exchange(url, {"type": "reset", "data": {}})
    (ok,) = ws_exchange(url, {"type": "reset", "data": {}}, headers={"Authorization": "Bearer s3cret"})
    assert ok["type"] == "observation"
    status, _ = http(url + "/schema", headers={"Authorization": "Bearer s3cret", "Origin": "https://evil.example"})
    assert status == 403


def test_gem_serve_protocol_openenv_from_the_command_line():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("GEM_SERVER_TOKEN", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gem.cli", "serve", "--protocol", "openenv", GAME, "--port", str(port)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if http(url + "/health")[0] == 200:
                    break
            except OSError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read().decode()[-2000:]
            time.sleep(0.2)
        (reply,) = ws_exchange(url, {"type": "reset", "data": {"seed": 7}})
        assert reply["data"]["observation"]["text"] == gem.make(GAME).reset(seed=7)[0]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_body_limits_and_host_checks_are_gems(serve):
    from gem.server.limits import ServerLimits

    url = serve([GAME], limits=ServerLimits(max_body_bytes=2000), allowed_hosts=["127.0.0.1"]).url
    assert http(url + "/reset", {"seed": 1, "pad": "x" * 4000})[0] == 413
    assert http(url + "/reset", {"seed": 1})[0] == 200
    assert http(url + "/schema", headers={"Host": "evil.example"})[0] == 403
    from websockets.exceptions import ConnectionClosed

    with pytest.raises(ConnectionClosed) as closed:  # a WebSocket message over the cap closes the connection
        ws_exchange(url, {"type": "step", "data": {"text": "x" * 5000}})
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009  # "message too big"


@pytest.mark.parametrize("outside_id", ["openenv:http://169.254.169.254", "verifiers:os", "gymnasium:os:getcwd"])
def test_servers_never_build_ids_that_name_a_url_or_module(serve, outside_id):
    """Ids naming an outside env are built by gem.make only, never registered: a server that serves
    every registered id cannot be made to connect to a URL or import a module a client names."""
    from gem.envs.registration import registry
    from gem.errors import UnknownEnvError
    from gem.server.app import create_app
    from tests.server.conftest import ServerThread

    with pytest.raises(UnknownEnvError):
        gem.spec(outside_id)
    (refused,) = ws_exchange(serve(None).url, {"type": "reset", "data": {"env_id": outside_id}})
    assert refused["data"]["code"] == "FACTORY_ERROR" and "Unknown env id" in refused["data"]["message"]
    server = ServerThread(create_app(None)).start()  # gem serve's own protocol, every registered id
    try:
        status, body = http(server.url + "/sessions", {"env_id": outside_id})
    finally:
        server.stop()
    assert status == 404 and body["error"]["kind"] == "unknown_env"
    assert not any(k.startswith(("openenv:", "verifiers:", "gymnasium:")) for k in dict.keys(registry))


def test_one_client_cannot_take_every_session_by_default():
    from gem.interop.openenv.server import create_openenv_app

    app = create_openenv_app([GAME], max_sessions=1000)
    assert app.state.store.max_sessions_per_client == 250  # as gem serve: a quarter of the total
    with pytest.raises(ValueError, match="below max_sessions"):
        create_openenv_app([GAME], max_sessions=10, max_sessions_per_client=10)


def test_an_openenv_websocket_that_never_resets_is_closed_and_frees_its_slot(serve):
    # One client's idle sockets cannot keep the capacity: 8 WebSockets, 2 per client.
    server = serve([GAME], session_grace=0.5, limits=ServerLimits(max_connections=16))
    with contextlib.ExitStack() as held:
        idle = [held.enter_context(ws_from(server)) for _ in range(2)]
        with ws_from(server) as over:  # the client's share is taken: refused as OpenEnv refuses
            refused = json.loads(over.recv(timeout=10))
        assert refused["type"] == "error" and refused["data"]["code"] == "CAPACITY_REACHED"
        for ws in idle:
            code, reason, waited = closed_within(ws, 10)
            assert code == 1008 and "no session within 0.5 s" in reason and "reset" in reason and waited < 5
    with ws_from(server) as player:  # the slots came back, and a socket that resets stays open
        player.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
        assert json.loads(player.recv(timeout=30))["type"] == "observation"
        time.sleep(1.0)
        player.send(json.dumps({"type": "step", "data": {"text": "\\boxed{10}"}}))
        assert json.loads(player.recv(timeout=30))["type"] == "observation"
