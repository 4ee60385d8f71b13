"""``gem.make("openenv:<url>")`` against a hostile server (tests/interop/hostile_server.py): whatever the
server does, GEM gets an :class:`InfrastructureError` (or an infra-error episode) within its deadline,
never a reward it did not check and never a success the server merely claimed."""

from __future__ import annotations

import time
import tracemalloc

import pytest

pytest.importorskip("websockets", reason="needs the server extra (pip install -e '.[server]' in the GEM checkout)")

import gem  # noqa: E402
from gem.core import Agent  # noqa: E402
from gem.errors import InfrastructureError  # noqa: E402
from gem.interop.border import MAX_ABS_REWARD  # noqa: E402
from gem.rollout import run_episode  # noqa: E402
from tests.interop.hostile_server import HostileServer  # noqa: E402

TIMEOUT = 3.0  # the bridge's total deadline per call in these tests
SLACK = 2.0  # what a deadline may overrun by on a loaded machine
CAP = 1 << 20  # max_reply_bytes in the size tests: 1 MiB, against a 200 MB reply


@pytest.fixture
def hostile():
    servers: list[HostileServer] = []

    def start(**kwargs) -> HostileServer:
        server = HostileServer(drip=kwargs.pop("drip", 1.0), lifetime=kwargs.pop("lifetime", 60.0), **kwargs).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def _make(server: HostileServer, mode: str, **kwargs):
    return gem.make(f"openenv:{server.url(mode)}", timeout=kwargs.pop("timeout", TIMEOUT), **kwargs)


class _Guess(Agent):
    def act(self, observation, info=None):
        return "\\boxed{7}"


def _within(seconds: float, call):
    """``call()``'s InfrastructureError and the seconds it took; fails if it raised anything else."""
    start = time.monotonic()
    with pytest.raises(InfrastructureError) as caught:
        call()
    elapsed = time.monotonic() - start
    assert elapsed < seconds, f"took {elapsed:.1f} s, the deadline is {seconds:g} s"
    return caught.value, elapsed


# ------------------------------------------------------------------ rewards
@pytest.mark.parametrize("mode", ["reward-nan", "reward-inf", "reward-neg-inf", "reward-big", "reward-string",
                                  "reward-list", "reward-object", "inf-claims-success"])
def test_a_reward_that_is_not_a_finite_number_is_an_infrastructure_error(hostile, mode):
    server = hostile()
    env = _make(server, mode)
    try:
        assert env.reset(seed=0)[0] == "guess a number"
        error, _ = _within(TIMEOUT + SLACK, lambda: env.step("\\boxed{7}"))
        assert "reward" in str(error)
        assert env._ws is None  # the session is dropped: nothing more from it is trusted
        episode = run_episode(env, _Guess(), seed=0, catch=True)  # as gem eval plays it
    finally:
        env.close()
    assert episode.success is False and episode.rewards == []
    assert episode.infra_error is not None and episode.infra_error["type"] == "InfrastructureError"


def test_the_reward_bound_is_what_the_error_says():
    from gem.interop.border import finite_reward

    assert finite_reward(MAX_ABS_REWARD, "x") == MAX_ABS_REWARD and finite_reward(True, "x") == 1.0
    assert finite_reward(None, "x", none_is=0.0) == 0.0
    for bad in (MAX_ABS_REWARD * 1.5, float("nan"), 10**400, None, "1", b"1", [1.0], 1j):
        with pytest.raises(InfrastructureError):
            finite_reward(bad, "x")


def test_success_is_decided_on_gems_side(hostile):
    server = hostile()
    liar = _make(server, "claims-success")  # reward 0, yet "success": true, "correct": true
    honest = _make(server, "well-behaved")  # reward 1.0, terminated
    try:
        liar.reset(seed=0)
        _, reward, terminated, _, info = liar.step("\\boxed{7}")
        assert (reward, terminated, info["success"]) == (0.0, True, False)
        assert info["remote_success"] is True and info["remote_correct"] is True and "correct" not in info
        assert run_episode(liar, _Guess(), seed=0).success is False
        honest.reset(seed=0)
        _, reward, terminated, _, info = honest.step("\\boxed{7}")
        assert (reward, terminated, info["success"]) == (1.0, True, True) and "remote_success" not in info
        assert run_episode(honest, _Guess(), seed=0).success is True
    finally:
        liar.close()
        honest.close()


# ---------------------------------------------------------------- malformed
@pytest.mark.parametrize("mode", ["flags-not-bools", "done-not-bool", "observation-not-object", "metadata-not-object",
                                  "data-not-object", "reply-not-object", "not-json-ws", "deep-json-ws"])
def test_a_malformed_step_reply_is_an_infrastructure_error(hostile, mode):
    server = hostile()
    env = _make(server, mode)
    try:
        env.reset(seed=0)
        error, _ = _within(TIMEOUT + SLACK, lambda: env.step("\\boxed{7}"))
        if mode in ("not-json-ws", "deep-json-ws"):  # the cause is kept, the type is GEM's
            assert isinstance(error.__cause__, RecursionError if mode == "deep-json-ws" else ValueError)
        assert env._ws is None
    finally:
        env.close()


@pytest.mark.parametrize("mode", ["deep-schema", "not-json-schema", "schema-not-object"])
def test_a_malformed_schema_is_an_infrastructure_error(hostile, mode):
    server = hostile()
    error, _ = _within(TIMEOUT + SLACK, lambda: _make(server, mode))
    if mode == "deep-schema":
        assert isinstance(error.__cause__, RecursionError)  # the cause is kept, the type is GEM's


# ---------------------------------------------------------------- deadlines
@pytest.mark.parametrize("mode", ["drip-schema", "drip-headers"])
def test_a_dripping_schema_fails_within_the_total_timeout(hostile, mode):
    server = hostile(drip=0.5)  # a byte every 0.5 s: no single read ever waits long
    error, elapsed = _within(TIMEOUT + SLACK, lambda: _make(server, mode))
    assert elapsed >= TIMEOUT - 0.5 and f"{TIMEOUT:g} s" in str(error)


@pytest.mark.parametrize("mode", ["silent-ws", "drip-ws"])
def test_a_silent_or_dripping_websocket_fails_within_the_total_timeout(hostile, mode):
    server = hostile(drip=0.5)
    env = _make(server, mode)
    try:
        _within(TIMEOUT + SLACK, lambda: env.reset(seed=0))
    finally:
        env.close()


def test_the_timeout_must_be_a_finite_positive_number(hostile):
    server = hostile()
    for bad in (0, -1, float("inf"), float("nan"), "3"):
        with pytest.raises(ValueError, match="timeout"):
            _make(server, "well-behaved", timeout=bad)


# -------------------------------------------------------------------- sizes
@pytest.mark.parametrize("mode", ["huge-schema", "huge-schema-unannounced"])
def test_a_huge_schema_is_refused_without_reading_it(hostile, mode):
    server = hostile()
    tracemalloc.start()
    try:
        error, _ = _within(TIMEOUT + SLACK, lambda: _make(server, mode, max_reply_bytes=CAP))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "cap" in str(error) and peak < 8 * CAP  # the server sent (or announced) HUGE bytes


def test_a_huge_websocket_message_is_refused_without_reading_it(hostile):
    server = hostile()
    env = _make(server, "huge-ws", max_reply_bytes=CAP)
    tracemalloc.start()
    try:
        _within(TIMEOUT + SLACK, lambda: env.reset(seed=0))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        env.close()
    assert peak < 8 * CAP


# ---------------------------------------------------------------- redirects
def test_a_redirect_to_another_origin_is_refused_and_the_token_stays_home(hostile):
    elsewhere = hostile()
    server = hostile(redirect_to=f"http://localhost:{elsewhere.port}/well-behaved/schema")
    error, _ = _within(TIMEOUT + SLACK, lambda: _make(server, "redirect-away", token="s3cret"))
    assert "another origin" in str(error)
    assert elsewhere.requests == []  # never asked, so never given the token
    assert server.requests[0][1]["authorization"] == "Bearer s3cret"


def test_a_redirect_within_the_origin_is_followed_with_the_token(hostile):
    server = hostile()
    env = _make(server, "redirect-home", token="s3cret")
    env.close()
    paths = [(path, headers.get("authorization")) for path, headers in server.requests]
    assert paths == [("/redirect-home/schema", "Bearer s3cret"), ("/well-behaved/schema", "Bearer s3cret")]


def test_a_websocket_redirect_to_another_origin_is_refused(hostile):
    elsewhere = hostile()
    server = hostile(redirect_to=f"ws://localhost:{elsewhere.port}/well-behaved/ws")
    env = _make(server, "ws-redirect-away", token="s3cret")
    try:
        _within(TIMEOUT + SLACK, lambda: env.reset(seed=0))
    finally:
        env.close()
    assert elsewhere.requests == []


# ----------------------------------------------------------- the fixture itself
def test_the_hostile_server_stops_itself():
    server = HostileServer(lifetime=0.5).start()
    env = gem.make(f"openenv:{server.url('well-behaved')}", timeout=TIMEOUT)
    assert env.reset(seed=0)[0] == "guess a number"
    env.close()
    deadline = time.monotonic() + 5
    while not server.stopping.is_set() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.stopping.is_set()
    with pytest.raises(InfrastructureError):
        gem.make(f"openenv:{server.url('well-behaved')}", timeout=TIMEOUT)
