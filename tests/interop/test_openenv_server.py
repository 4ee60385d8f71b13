"""``gem serve --protocol openenv``: GEM ids over OpenEnv's protocol, checked with openenv-core itself."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Optional

import pytest

pytest.importorskip("fastapi", reason="needs the server extra (pip install 'gem-llm[server]')")
openenv_core = pytest.importorskip("openenv.core", reason="needs the openenv extra (pip install 'gem-llm[openenv]')")
from openenv.core import GenericEnvClient  # noqa: E402
from openenv.core.env_server import types as oe  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

import gem  # noqa: E402
from gem.interop.openenv.server import create_openenv_app  # noqa: E402
from tests.interop.families import record  # noqa: E402
from tests.server.conftest import ServerThread  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
GAME = "game:GuessTheNumber-v0"
MATH = "math:Arithmetic"


@pytest.fixture
def serve():
    started: list[ServerThread] = []

    def start(env_ids: Optional[list[str]] = None, **kwargs: Any) -> ServerThread:
        server = ServerThread(create_openenv_app(env_ids, **kwargs), kwargs.get("limits")).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def http(url: str, body: Any = None, headers: Optional[dict[str, str]] = None) -> tuple[int, Any]:
    data = None if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def ws_exchange(url: str, *messages: Any, headers: Optional[dict[str, str]] = None) -> list[dict[str, Any]]:
    replies = []
    with connect(url.replace("http://", "ws://") + "/ws", additional_headers=headers or {}) as ws:
        for message in messages:
            ws.send(message if isinstance(message, str) else json.dumps(message))
            replies.append(json.loads(ws.recv(timeout=30)))
    return replies


# ----------------------------------------------------------------- the protocol
def test_info_routes_match_openenvs_models(serve):
    url = serve([GAME]).url
    status, health = http(url + "/health")
    assert status == 200 and oe.HealthResponse.model_validate(health).status == oe.HealthStatus.HEALTHY
    status, schema = http(url + "/schema")
    schema = oe.SchemaResponse.model_validate(schema)
    assert schema.action["required"] == ["text"] and schema.action["properties"]["text"]["type"] == "string"
    assert {"text", "done", "reward", "metadata"} <= set(schema.observation["properties"])
    status, metadata = http(url + "/metadata")
    assert oe.EnvironmentMetadata.model_validate(metadata).name == GAME
    status, state = http(url + "/state")
    assert oe.State.model_validate(state).step_count == 0


def test_generic_env_client_plays_whole_episodes_with_local_rewards(serve):
    url = serve([GAME, MATH]).url
    for env_id, seed in ((GAME, 3), (GAME, 4), (MATH, 0), (MATH, 9)):
        trace = record(env_id, seed)
        with GenericEnvClient(base_url=url).sync() as client:
            first = client.reset(seed=seed, env_id=env_id)
            assert first.observation["text"] == trace.first and first.reward is None and first.done is False
            for action, (obs, reward, terminated, truncated) in zip(trace.actions, trace.steps):
                result = client.step({"text": action})
                assert result.observation["text"] == obs
                assert result.reward == reward
                assert result.done == (terminated or truncated)
                meta = result.observation["metadata"]
                assert (meta["terminated"], meta["truncated"]) == (terminated, truncated)
            assert result.done
            state = client.state()
            assert state["step_count"] == len(trace.actions) and state["env_id"] == env_id
    assert record(GAME, 3).total == 1.0  # the solver's episode is a win: rewards were earned, not all zero


def test_ws_replies_are_openenvs_messages(serve):
    url = serve([GAME]).url
    reset, step, state = ws_exchange(
        url, {"type": "reset", "data": {"seed": 1, "episode_id": "ep-1"}}, {"type": "step", "data": {"text": "\\boxed{3}"}},
        {"type": "state"},
    )
    oe.WSObservationResponse.model_validate(reset)
    oe.ResetResponse.model_validate(reset["data"])
    oe.StepResponse.model_validate(oe.WSObservationResponse.model_validate(step).data)
    assert oe.State.model_validate(oe.WSStateResponse.model_validate(state).data).episode_id == "ep-1"
    local = gem.make(GAME)
    assert reset["data"]["observation"]["text"] == local.reset(seed=1)[0]


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
    parsed = oe.WSErrorResponse.model_validate(error)
    assert parsed.data["code"] == oe.WSErrorCode(code).value and parsed.data["message"]
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
    url = serve([GAME], max_sessions=1).url
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
        assert status == 200 and oe.ResetResponse.model_validate(reset).observation["text"] == problem
        gold = f"\\boxed{{{local.answer}}}"
        for action in ("\\boxed{-123456789}", gold):
            _, local_reward, *_ = _local_step(seed, action)
            status, step = http(url + "/step", {"action": {"text": action}, "seed": seed})
            assert status == 200 and oe.StepResponse.model_validate(step).done is True
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
    with pytest.raises(Exception):
        ws_exchange(url, {"type": "reset", "data": {}})
    (ok,) = ws_exchange(url, {"type": "reset", "data": {}}, headers={"Authorization": "Bearer s3cret"})
    assert ok["type"] == "observation"
    status, _ = http(url + "/schema", headers={"Authorization": "Bearer s3cret", "Origin": "https://evil.example"})
    assert status == 403


def test_gem_serve_protocol_openenv_from_the_command_line(tmp_path):
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
        with GenericEnvClient(base_url=url).sync() as client:
            assert client.reset(seed=7).observation["text"] == gem.make(GAME).reset(seed=7)[0]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
