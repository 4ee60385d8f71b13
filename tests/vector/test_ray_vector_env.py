"""The Ray backend on a small local Ray instance: same episodes as sync, actor loss recovery."""

from __future__ import annotations

import os
import time

import pytest

import gem
from gem.envs.registration import registry
from gem.errors import EnvsNotInProcess, VectorEnvTimeout
from gem.vector.process_vector_env import CRASH_INFO_KEY
from tests.conftest import needs_extra
from tests.vector.test_process_vector_env import MIXED_IDS, _factories, play, registered_test_ids, sync_trace
from tests.vector.test_vector_api import SLACK, HangEnv

needs_extra("ray")
import ray  # noqa: E402
from gem.vector.ray_vector_env import RayVectorEnv  # noqa: E402  (after ray is known to be installed)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def local_ray():
    """Two CPUs; workers can import the test envs (tests.conftest) from the repo root."""
    started = not ray.is_initialized()
    if started:
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": REPO_ROOT}},
        )
    yield
    if started:
        ray.shutdown()


@pytest.fixture(autouse=True)
def test_ids():
    with registered_test_ids():
        gem.register("test:Hang-v0", HangEnv, target=3)
        try:
            yield
        finally:
            registry.pop("test:Hang-v0", None)


# Starting Ray takes a while on a loaded machine: one mode in the default run, the rest marked slow.
@pytest.mark.parametrize("mode", ["same_step", pytest.param("next_step", marks=pytest.mark.slow)])
def test_same_episodes_as_sync(local_ray, mode):
    expected = sync_trace(MIXED_IDS, mode)
    vec = gem.make_vec(MIXED_IDS, backend="ray", autoreset_mode=mode, seed=7)
    try:
        assert isinstance(vec, RayVectorEnv) and vec.num_workers == 2
        assert play(vec) == expected
    finally:
        vec.close()
    assert ray.is_initialized()  # the user's Ray instance is left running


@pytest.mark.slow
def test_killed_actor_is_restarted_and_its_episodes_truncated(local_ray):
    ids = ["test:Count3-v0"] * 4
    vec = RayVectorEnv(ids, _factories(ids), num_workers=2)
    try:
        vec.reset(seed=0)
        vec.step(["\\boxed{+}"] * 4)
        actor = vec._actors[0]
        ray.kill(actor, no_restart=True)
        deadline = time.monotonic() + 30
        while True:  # ray.kill is asynchronous: a call sent just after it may still be answered
            try:
                ray.get(actor.ping.remote(), timeout=30)
            except ray.exceptions.RayActorError:
                break
            assert time.monotonic() < deadline, "ray.kill did not stop the actor within 30 s"
            time.sleep(0.05)
        obs, _, _, truncated, infos = vec.step(["\\boxed{+}"] * 4)
        assert truncated.tolist() == [True, True, False, False] and obs[2:] == ["count 2", "count 2"]
        assert "died" in infos[0]["final_info"][CRASH_INFO_KEY] and vec.restarts == 1
        obs, *_ = vec.step(["\\boxed{+}"] * 4)
        assert obs[:2] == ["count 1", "count 1"]
    finally:
        vec.close()


def test_call_attrs_and_a_hung_step(local_ray):
    ids = ["test:Count3-v0", "test:Hang-v0", "test:Count3-v0", "test:Count3-v0"]
    vec = gem.make_vec(ids, backend="ray", seed=7, backend_kwargs={"num_workers": 2, "step_timeout": 1.0})
    try:
        with pytest.raises(EnvsNotInProcess, match="Ray actors"):
            vec.envs
        assert vec.get_attr("target") == (3, 3, 3, 3)
        assert vec.call("sample_random_action") == ("\\boxed{+}",) * 4
        vec.set_attr("target", [1, 3, 3, 2])
        assert vec.get_attr("target") == (1, 3, 3, 2)
        vec.reset(seed=0)
        start = time.monotonic()
        with pytest.raises(VectorEnvTimeout, match=r"Env 1 \(test:Hang-v0\) did not finish step") as info:
            vec.step(["\\boxed{+}", "hang", "\\boxed{+}", "\\boxed{+}"])
        assert 1.0 <= time.monotonic() - start < 1.0 + SLACK
        assert info.value.index == 1 and set(info.value.results) == {2, 3}
        obs, _, terminated, truncated, infos = vec.step(["\\boxed{+}"] * 4)
        assert truncated.tolist() == [True, True, False, False]
        assert terminated.tolist() == [False, False, False, True]
        assert "step_timeout=1" in infos[1]["final_info"][CRASH_INFO_KEY] and vec.restarts == 1
        assert vec.get_attr("target") == (3, 3, 3, 2)  # the restarted actor's envs are fresh
    finally:
        vec.close()
