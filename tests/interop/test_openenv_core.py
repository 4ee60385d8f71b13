"""GEM and OpenEnv checked with openenv-core itself (the ``openenv`` extra): its models, its
GenericEnvClient, its runtime and package validators, and servers built with its ``create_app``."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional

import pytest

pytest.importorskip("fastapi", reason="needs the server extra (pip install -e '.[server]' in the GEM checkout)")
pytest.importorskip("openenv.core", reason="needs the openenv extra (pip install -e '.[openenv]' in the GEM checkout)")
from openenv.cli._validation import validate_multi_mode_deployment, validate_running_environment  # noqa: E402
from openenv.core import Action, Environment, GenericEnvClient, Observation, State, create_app  # noqa: E402
from openenv.core.env_server import types as oe  # noqa: E402

import gem  # noqa: E402
from gem.interop.openenv.client import OpenEnvEnv, OpenEnvError  # noqa: E402
from gem.interop.openenv.export import export_openenv  # noqa: E402
from tests.interop.families import record, replay  # noqa: E402
from tests.interop.wire import http, ws_exchange  # noqa: E402
from tests.server.conftest import ServerThread  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
GAME = "game:GuessTheNumber-v0"
MATH = "math:Arithmetic"


# ----------------------------------------------------------------- GEM -> OpenEnv
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


def test_openenvs_runtime_validator_passes(serve):
    report = validate_running_environment(serve([GAME]).url)
    assert report["passed"], [c for c in report["criteria"] if not c["passed"]]
    assert report["mode"] == "simulation"


def test_exported_package_is_an_openenv_package_whose_app_serves_the_id(tmp_path):
    out = export_openenv(GAME, tmp_path / "pkg", lock=False)  # uv lock: test_openenv010.py
    issues = validate_multi_mode_deployment(out)[1]
    assert issues == ["Missing uv.lock - run 'uv lock' to generate it"]  # needs uv and the network
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(out), str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.pop("GEM_SERVER_TOKEN", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "server.app", "--port", str(port)], cwd=out, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc)
        assert validate_running_environment(url)["passed"]
        trace = record(GAME, 21)
        with GenericEnvClient(base_url=url).sync() as client:
            assert client.reset(seed=21).observation["text"] == trace.first
            rewards = [client.step({"text": a}).reward for a in trace.actions]
        assert rewards == [s[1] for s in trace.steps] and sum(rewards) == 1.0
        remote = gem.make(f"openenv:{url}")  # and back into GEM: the round trip
        assert replay(remote, 21, trace.actions) == trace
        remote.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    refused = subprocess.run(
        [sys.executable, "-m", "server.app", "--host", "0.0.0.0", "--port", str(port)], cwd=out, env=env,
        capture_output=True, text=True, timeout=120,
    )
    assert refused.returncode != 0 and "without a token" in refused.stderr


def _wait_healthy(url: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            if http(url + "/health")[0] == 200:
                return
        except OSError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read().decode()[-2000:]
        time.sleep(0.2)


# ----------------------------------------------------------------- OpenEnv -> GEM
class GuessAction(Action):
    message: str


class PromptObservation(Observation):
    prompt: str


class ScoreObservation(Observation):
    prompt: str
    tries: int


class MoveAction(Action):
    x: int
    y: int


class GuessEnvironment(Environment):
    """An OpenEnv env written as OpenEnv's docs say: guess a digit in three tries."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    observation_cls: type = PromptObservation

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=None, step_count=0)
        self.target = 0

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, **kwargs: Any) -> Observation:
        self.target = random.Random(seed).randint(0, 9)
        self._state = State(episode_id=episode_id, step_count=0)
        return self._observe(f"Guess my digit (seed {seed}).", None, False)

    def step(self, action: Any, timeout_s: Optional[float] = None, **kwargs: Any) -> Observation:
        self._state.step_count += 1
        guess = getattr(action, "message", None)
        if guess == str(self.target):
            return self._observe("Right!", 1.0, True)
        return self._observe("Wrong.", 0.0, self._state.step_count >= 3)

    def _observe(self, text: str, reward: Optional[float], done: bool) -> Observation:
        if self.observation_cls is ScoreObservation:
            return ScoreObservation(prompt=text, tries=self._state.step_count, reward=reward, done=done)
        return PromptObservation(prompt=text, reward=reward, done=done)

    @property
    def state(self) -> State:
        return self._state


class ScoreEnvironment(GuessEnvironment):
    observation_cls = ScoreObservation


@pytest.fixture
def openenv_server():
    started: list[ServerThread] = []

    def start(env_cls: type, action_cls: type, observation_cls: type) -> str:
        app = create_app(env_cls, action_cls, observation_cls, env_name="guess", max_concurrent_envs=4)
        server = ServerThread(app).start()
        started.append(server)
        return server.url

    yield start
    for server in started:
        server.stop()


def test_gem_plays_an_openenv_server_built_with_create_app(openenv_server):
    url = openenv_server(GuessEnvironment, GuessAction, PromptObservation)
    env = gem.make(f"openenv:{url}")
    assert env.action_field == "message"
    obs, info = env.reset(seed=4)
    assert obs == "Guess my digit (seed 4)." and info == {}
    target = random.Random(4).randint(0, 9)
    wrong = str((target + 1) % 10)
    assert env.step(wrong) == ("Wrong.", 0.0, False, False, {})
    assert env.step(str(target)) == ("Right!", 1.0, True, False, {"success": True})  # decided by GEM
    env.reset(seed=4)
    for _ in range(2):
        env.step(wrong)
    assert env.step(wrong)[1:4] == (0.0, True, False)  # done without a win: terminated, no reward
    env.close()


def test_observations_with_several_fields_become_json(openenv_server):
    url = openenv_server(ScoreEnvironment, GuessAction, ScoreObservation)
    env = gem.make(f"openenv:{url}")
    obs, _ = env.reset(seed=1)
    assert obs == '{"prompt": "Guess my digit (seed 1).", "tries": 0}'
    env.close()
    custom = gem.make(f"openenv:{url}", observation_fn=lambda o: f"{o['prompt']} [{o['tries']}]")
    assert custom.reset(seed=1)[0] == "Guess my digit (seed 1). [0]"
    custom.close()


def test_a_server_without_a_text_action_needs_the_mapping_hook(openenv_server):
    url = openenv_server(GuessEnvironment, MoveAction, PromptObservation)
    with pytest.raises(ValueError, match=r"does not take a text action.*x: integer.*action_fn"):
        gem.make(f"openenv:{url}")
    env = gem.make(f"openenv:{url}", action_fn=lambda text: {"x": len(text), "y": 0})
    env.reset(seed=0)
    assert env.step("abc")[:4] == ("Wrong.", 0.0, False, False)
    env.close()
    bad = gem.make(f"openenv:{url}", action_fn=lambda text: {"x": text})
    bad.reset(seed=0)
    with pytest.raises(OpenEnvError, match="VALIDATION_ERROR"):
        bad.step("not a number")
    bad.close()


def test_an_unreachable_server_is_a_clear_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(gem.errors.InfrastructureError, match="schema"):
        OpenEnvEnv(f"http://127.0.0.1:{port}")
    with pytest.raises(ValueError, match="http://"):
        OpenEnvEnv("ftp://example.org", action_fn=lambda t: {"text": t})


def test_round_trip_through_gems_own_server_with_several_ids_and_a_token(serve):
    url = serve([GAME, MATH], tokens=["tok"]).url
    for env_id, seed in ((GAME, 5), (MATH, 2)):
        trace = record(env_id, seed)
        remote = gem.make(f"openenv:{url}", remote_env_id=env_id, token="tok")
        assert replay(remote, seed, trace.actions) == trace
        remote.close()
    with pytest.raises(gem.errors.InfrastructureError):
        gem.make(f"openenv:{url}", remote_env_id=GAME)  # no token: the schema is refused
