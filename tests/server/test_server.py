"""The env server and RemoteEnv: same episodes as local envs, errors, auth, expiry, load."""

from __future__ import annotations

import asyncio
import json
import socket
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

import gem  # noqa: E402
from gem.envs.game_env.guess_the_number import GuessTheNumberSolver  # noqa: E402
from gem.core import strict_step  # noqa: E402
from gem.errors import ResetNeeded, ResourceUnavailable, UnknownEnvError  # noqa: E402
from gem.server.client import RemoteEnv, RemoteEnvError  # noqa: E402
from gem.vector.remote_vector_env import RemoteVectorEnv  # noqa: E402
from tests.server.conftest import gem_serve  # noqa: E402
from tests.vector.test_process_vector_env import MIXED_IDS, play, registered_test_ids, sync_trace  # noqa: E402

GUESS = "game:GuessTheNumber-v0-random"


def needs(transport: str) -> None:
    if transport == "websocket":
        pytest.importorskip("websockets")


class EchoEnv(gem.Env):
    """Returns the action as the observation, raw: the server must cope with any string."""

    def reset(self, seed=None, **kwargs):
        super().reset(seed)
        return "say something", {"raw": "\ud800"}

    def _step(self, action):
        return self._result(action, 0.0, info={"length": len(action)})


@pytest.fixture(autouse=True)
def test_ids():
    gem.register("test:Echo-v0", EchoEnv)
    try:
        with registered_test_ids():
            yield
    finally:
        gem.envs.registration.registry.pop("test:Echo-v0", None)


def local_episode(env_id: str, seed: int) -> list:
    """The solver's episode on a local env: the observations and rewards, in order."""
    env = gem.make(env_id)
    return solve(env, seed)


def solve(env, seed: int) -> list:
    solver = GuessTheNumberSolver()
    obs, _ = env.reset(seed=seed)
    solver.reset(obs)
    trace, done = [obs], False
    while not done:
        obs, reward, terminated, truncated, info = env.step(solver.act(obs))
        trace.append((obs, reward, terminated, truncated, info.get("success")))
        done = terminated or truncated
    return trace


@pytest.mark.parametrize("transport", ["http", "websocket"])
def test_remote_env_plays_the_same_episode_as_a_local_one(serve, transport):
    needs(transport)
    server = serve()
    env = RemoteEnv(server.url, GUESS, transport=transport)
    try:
        assert env.env_id == GUESS and isinstance(env, gem.Env)
        for seed in (0, 1, 2):
            assert solve(env, seed) == local_episode(GUESS, seed)
        assert env.sample_random_action().startswith("\\boxed{")
        with strict_step(), pytest.raises(ResetNeeded, match="reset"):
            env.step("\\boxed{1}")
    finally:
        env.close()


@pytest.mark.parametrize("transport", ["http", "websocket"])
def test_any_string_survives_the_round_trip(serve, transport):
    needs(transport)
    server = serve()
    env = RemoteEnv(server.url, "test:Echo-v0", transport=transport)
    try:
        assert env.reset()[1] == {"raw": "\ud800"}
        for action in ("", "nul\x00byte", "lone \ud800 surrogate", "<python>unbalanced", "x" * 1_000_000):
            obs, _, _, _, info = env.step(action)
            assert obs == action and info == {"length": len(action)}
    finally:
        env.close()


@pytest.mark.parametrize("mode", ["same_step", "next_step"])
def test_remote_backend_gives_the_same_episodes_as_sync(serve, mode):
    server = serve()
    expected = sync_trace(MIXED_IDS, mode)
    vec = gem.make_vec(MIXED_IDS, backend="remote", url=server.url, autoreset_mode=mode, seed=7)
    try:
        assert isinstance(vec, RemoteVectorEnv)
        assert all(isinstance(e, RemoteEnv) and e.url == server.url for e in vec.envs)
        assert play(vec) == expected
    finally:
        vec.close()


def test_remote_backend_needs_a_url(monkeypatch):
    monkeypatch.delenv("GEM_SERVER_URL", raising=False)
    with pytest.raises(ValueError, match="url="):
        gem.make_vec(GUESS, num_envs=2, backend="remote")


def test_errors_are_clear(serve):
    server = serve(env_ids=[GUESS, "test:Boom-v0"])
    with pytest.raises(UnknownEnvError, match="does not serve 'game:GuessTheNumber-v0'"):
        RemoteEnv(server.url, "game:GuessTheNumber-v0")
    with pytest.raises(ValueError, match="max_turns"):
        RemoteEnv(server.url, GUESS, max_turns=-1)
    boom = RemoteEnv(server.url, "test:Boom-v0")
    boom.reset(seed=0)
    boom.step("\\boxed{+}")
    with pytest.raises(RemoteEnvError, match="raised RuntimeError: boom") as info:
        boom.step("\\boxed{+}")
    assert info.value.remote_type == "RuntimeError"
    boom.close()
    env = RemoteEnv(server.url, GUESS)
    env.reset(seed=0)
    server.stop()
    with pytest.raises(ResourceUnavailable, match=f"server at {server.url} is unreachable"):
        env.step("\\boxed{3}")
    env.close()  # closing against a dead server does not raise


def test_unreachable_server_at_construction():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here once the socket is closed
    with pytest.raises(ResourceUnavailable, match="gem serve"):
        RemoteEnv(f"http://127.0.0.1:{port}", GUESS, timeout=5)


def test_bearer_token(serve):
    needs("websocket")
    server = serve(token="s3cret")
    with pytest.raises(ResourceUnavailable, match="refused the token"):
        RemoteEnv(server.url, GUESS)
    with pytest.raises(ResourceUnavailable, match="refused the token"):
        RemoteEnv(server.url, GUESS, token="wrong")
    env = RemoteEnv(server.url, GUESS, token="s3cret")
    assert solve(env, 3) == local_episode(GUESS, 3)
    env.close()
    ws = RemoteEnv(server.url, GUESS, token="s3cret", transport="websocket")
    ws.close()
    with pytest.raises(ResourceUnavailable):
        RemoteEnv(server.url, GUESS, token="wrong", transport="websocket")
    assert httpx.get(server.url + "/health").json()["status"] == "ok"  # health needs no token
    assert httpx.get(server.url + "/metrics").status_code == 401
    metrics = httpx.get(server.url + "/metrics", headers={"Authorization": "Bearer s3cret"}).text
    assert "gem_steps_total" in metrics and "gem_sessions_created_total 2" in metrics


def test_websocket_protocol_errors_keep_the_connection(serve):
    needs("websocket")
    from websockets.sync.client import connect

    server = serve()
    with connect(server.url.replace("http", "ws") + "/ws") as ws:
        ws.send("not json")
        assert json.loads(ws.recv(timeout=10))["error"]["kind"] == "bad_request"
        ws.send(json.dumps({"op": "step", "action": "x"}))
        assert json.loads(ws.recv(timeout=10))["error"]["kind"] == "unknown_session"
        ws.send(json.dumps({"op": "make", "env_id": GUESS}))
        assert json.loads(ws.recv(timeout=10))["ok"]
        ws.send(json.dumps({"op": "fly"}))
        assert "Unknown op" in json.loads(ws.recv(timeout=10))["error"]["message"]
        ws.send(json.dumps({"op": "reset", "seed": 1}))
        assert json.loads(ws.recv(timeout=10))["observation"] == gem.make(GUESS).reset(seed=1)[0]
    deadline = time.monotonic() + 10  # the session closes with the socket
    while httpx.get(server.url + "/health").json()["sessions"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert httpx.get(server.url + "/health").json()["sessions"] == 0


def test_idle_sessions_expire(serve):
    server = serve(session_ttl=0.3)
    env = RemoteEnv(server.url, GUESS)
    first, _ = env.reset(seed=4)
    time.sleep(1.2)
    assert httpx.get(server.url + "/health").json()["sessions"] == 0
    with pytest.raises(ResetNeeded, match="expired"):
        env.step("\\boxed{3}")
    assert env.reset(seed=4)[0] == first  # reset opens a new session
    env.step("\\boxed{3}")
    assert "gem_sessions_expired_total 1" in httpx.get(server.url + "/metrics").text
    env.close()


async def _solve_async(client: httpx.AsyncClient, env_id: str, seed: int) -> list:
    made = (await client.post("/sessions", json={"env_id": env_id})).json()
    path = f"/sessions/{made['session_id']}"
    obs = (await client.post(path + "/reset", json={"seed": seed})).json()["observation"]
    solver = GuessTheNumberSolver()
    solver.reset(obs)
    trace, done = [obs], False
    while not done:
        r = (await client.post(path + "/step", json={"action": solver.act(obs)})).json()
        obs, done = r["observation"], r["terminated"] or r["truncated"]
        trace.append((obs, r["reward"], r["terminated"], r["truncated"], r["info"].get("success")))
    await client.delete(path)
    return trace


def _load_test(server, sessions: int, limit_s: float) -> None:
    """``sessions`` episodes at once on loopback; each must equal its local episode."""

    async def run() -> list:
        limits = httpx.Limits(max_connections=sessions, max_keepalive_connections=sessions)
        async with httpx.AsyncClient(base_url=server.url, limits=limits, timeout=60) as client:
            return await asyncio.wait_for(
                asyncio.gather(*(_solve_async(client, GUESS, seed) for seed in range(sessions))), limit_s
            )

    traces = asyncio.run(run())
    env = gem.make(GUESS)
    assert traces == [solve(env, seed) for seed in range(sessions)]  # nothing lost or mixed up
    health = httpx.get(server.url + "/health").json()
    assert health["sessions"] == 0
    metrics = httpx.get(server.url + "/metrics").text
    assert f"gem_sessions_created_total {sessions}" in metrics and "gem_errors_total 0" in metrics


def test_concurrent_sessions_small(serve):
    _load_test(serve(), sessions=20, limit_s=60)


@pytest.mark.slow
def test_200_concurrent_sessions(serve):
    _load_test(serve(), sessions=200, limit_s=300)


def test_gem_serve_command():
    with gem_serve([GUESS], {"GEM_SERVER_TOKEN": "tok"}) as url:
        env = RemoteEnv(url, GUESS, token="tok")
        assert solve(env, 5) == local_episode(GUESS, 5)
        env.close()


def test_gem_serve_with_a_token_file(tmp_path):
    path = tmp_path / "tokens"
    path.write_text("trainer-a\ntrainer-b\n")
    path.chmod(0o600)
    with gem_serve([GUESS, "--token-file", str(path)], {"GEM_SERVER_TOKEN": ""}) as url:
        for token in ("trainer-a", "trainer-b"):
            env = RemoteEnv(url, GUESS, token=token)
            assert solve(env, 6) == local_episode(GUESS, 6)
            env.close()
        with pytest.raises(ResourceUnavailable, match="refused the token"):
            RemoteEnv(url, GUESS, token="tok")
