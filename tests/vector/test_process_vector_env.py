"""The process backend: same episodes as sync, errors by index, crash recovery."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from typing import Any, Iterator

import pytest

import gem
from gem.core import StepResult
from gem.envs.registration import registry
from gem.errors import EnvsNotInProcess, VectorEnvError
from gem.vector.process_vector_env import CRASH_INFO_KEY, ProcessVectorEnv
from tests.conftest import CountEnv

MODES = ["same_step", "next_step"]
MIXED_IDS = [
    "game:GuessTheNumber-v0-hard",
    "test:Count2-v0",
    "game:GuessTheNumber-v0-random",
    "game:GuessTheNumber-v0-easy",
    "test:Count3-v0",
] * 2


class CrashEnv(CountEnv):
    """A CountEnv whose process dies on the action "segfault" (a real SIGSEGV) or "exit"."""

    def step(self, action: str) -> StepResult:
        if action == "segfault":
            ctypes.string_at(0)  # reads address 0: the process gets SIGSEGV
        if action == "exit":
            os._exit(3)
        return super().step(action)


@contextlib.contextmanager
def registered_test_ids() -> Iterator[None]:
    """The test ids (also used by the Ray and server tests), removed afterwards."""
    gem.register("test:Count2-v0", CountEnv, target=2)
    gem.register("test:Count3-v0", CountEnv, target=3)
    gem.register("test:Boom-v0", CountEnv, target=5, fail_on=1)
    gem.register("test:Crash-v0", CrashEnv, target=4)
    try:
        yield
    finally:
        for key in ("test:Count2-v0", "test:Count3-v0", "test:Boom-v0", "test:Crash-v0"):
            registry.pop(key, None)


@pytest.fixture(autouse=True)
def test_ids():
    with registered_test_ids():
        yield


def _action(env_id: str, t: int, i: int) -> str:
    if env_id.startswith("test:"):
        return "\\boxed{+}" if (t + i) % 7 else "oops"  # a format error now and then
    return f"\\boxed{{{(t * 7 + i * 3) % 50 + 1}}}"


def play(vec: Any, steps: int = 24, seed: int = 100) -> list[Any]:
    """A trace of reset + ``steps`` steps; every third step only a ready subset (a dict) steps."""
    obs, infos = vec.reset(seed=seed)
    trace: list[Any] = [(obs, infos)]
    ids = vec.env_ids
    for t in range(steps):
        if t % 3 == 1:
            actions: Any = {i: _action(ids[i], t, i) for i in range(len(ids)) if (i + t) % 2 == 0}
        else:
            actions = [_action(ids[i], t, i) for i in range(len(ids))]
        obs, rewards, terminated, truncated, infos = vec.step(actions)
        trace.append((obs, rewards.tolist(), terminated.tolist(), truncated.tolist(), infos))
    return trace


def sync_trace(ids: list[str], mode: str, steps: int = 24) -> list[Any]:
    vec = gem.make_vec(ids, backend="sync", autoreset_mode=mode, seed=7)
    try:
        return play(vec, steps)
    finally:
        vec.close()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("workers", [2, 3])
def test_same_episodes_as_sync(mode, workers):
    expected = sync_trace(MIXED_IDS, mode)
    vec = ProcessVectorEnv(MIXED_IDS, _factories(MIXED_IDS), autoreset_mode=mode, num_workers=workers)
    try:
        assert vec.num_workers == workers and sum(len(s) for s in vec.shards) == len(MIXED_IDS)
        assert play(vec) == expected
    finally:
        vec.close()


def _factories(ids: list[str]) -> list[Any]:
    """The factories make_vec builds (seed 7 + i), for constructing the backend directly."""
    return gem.make_vec(ids, backend="sync", seed=7).env_fns


def test_make_vec_process_backend_defaults():
    vec = gem.make_vec("test:Count2-v0", num_envs=3, backend="process")
    try:
        assert isinstance(vec, ProcessVectorEnv)
        with pytest.raises(EnvsNotInProcess, match="worker processes.*vec.get_attr"):
            vec.envs
        assert not hasattr(vec, "envs")  # an AttributeError: the envs are not here
        assert vec.num_workers == min(os.cpu_count() or 1, 3)
        assert vec.context in ("forkserver", "spawn")
        obs, _ = vec.reset(seed=0)
        assert len(obs) == 3 and all(o.startswith("start") for o in obs)
        assert vec.sample_random_action() == ["\\boxed{+}"] * 3
        vec.step_async(["\\boxed{+}"] * 3)
        with pytest.raises(RuntimeError, match="twice"):
            vec.step_async(["\\boxed{+}"] * 3)
        assert vec.step_wait()[0] == ["count 1"] * 3
    finally:
        vec.close()
    vec.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        vec.step(["\\boxed{+}"] * 3)


def test_error_names_global_index_and_id():
    ids = ["test:Count3-v0", "test:Count3-v0", "test:Count3-v0", "test:Boom-v0"]
    vec = ProcessVectorEnv(ids, _factories(ids), num_workers=2)
    try:
        vec.reset(seed=0)
        vec.step(["\\boxed{+}"] * 4)
        with pytest.raises(VectorEnvError, match=r"Env 3 \(test:Boom-v0\) raised RuntimeError: boom") as info:
            vec.step(["\\boxed{+}"] * 4)
        assert info.value.index == 3 and info.value.env_id == "test:Boom-v0"
    finally:
        vec.close()


def test_bad_factory_raises_in_parent():
    with pytest.raises(ValueError, match="accepts"):
        gem.make_vec("test:Count2-v0", num_envs=2, backend="process", no_such_kwarg=1)


def test_unpicklable_entry_point_says_how_to_fix():
    gem.register("test:Lambda-v0", lambda: CountEnv())
    try:
        with pytest.raises(ValueError, match="importable by name"):
            gem.make_vec("test:Lambda-v0", num_envs=2, backend="process")
    finally:
        del registry["test:Lambda-v0"]


def _step_all(vec: ProcessVectorEnv, action: str = "\\boxed{+}") -> Any:
    return vec.step([action] * vec.num_envs)


@pytest.mark.parametrize("mode", MODES)
def test_killed_worker_is_restarted_and_its_episodes_truncated(mode):
    ids = ["test:Count3-v0"] * 4
    vec = ProcessVectorEnv(ids, _factories(ids), autoreset_mode=mode, num_workers=2)
    try:
        vec.reset(seed=0)
        _step_all(vec)
        dead = vec.worker_pids()[1]
        os.kill(dead, signal.SIGKILL)
        obs, rewards, terminated, truncated, infos = _step_all(vec)
        assert vec.restarts == 1 and vec.worker_pids()[1] != dead
        assert obs[:2] == ["count 2", "count 2"] and truncated.tolist() == [False, False, True, True]
        assert rewards.tolist() == [0.0] * 4 and not terminated.any()
        for i in (2, 3):
            if mode == "same_step":
                assert obs[i].startswith("start") and infos[i]["final_obs"] == "count 1"
                reason = infos[i]["final_info"][CRASH_INFO_KEY]
            else:
                assert obs[i] == "count 1"
                reason = infos[i][CRASH_INFO_KEY]
            assert "SIGKILL" in reason and "worker 1" in reason
        obs, _, terminated, truncated, _ = _step_all(vec)  # the others went on; the lost ones restart
        assert terminated[:2].all() and not terminated[2:].any()
        if mode == "same_step":
            assert obs[2:] == ["count 1", "count 1"]
        else:
            assert obs[2].startswith("start") and not truncated[2:].any()
    finally:
        vec.close()


def test_segfault_in_a_step_loses_only_that_workers_episodes():
    ids = ["test:Count3-v0", "test:Count3-v0", "test:Crash-v0", "test:Crash-v0"]
    vec = ProcessVectorEnv(ids, _factories(ids), num_workers=2)
    try:
        vec.reset(seed=0)
        obs, _, _, truncated, infos = vec.step({0: "\\boxed{+}", 2: "segfault"})
        assert obs[0] == "count 1" and truncated.tolist() == [False, True]
        assert "SIGSEGV" in infos[1]["final_info"][CRASH_INFO_KEY]
        # Env 3 was idle on the same worker: its episode is reported lost at its next step.
        obs, _, _, truncated, infos = vec.step({1: "\\boxed{+}", 3: "\\boxed{+}"})
        assert obs[0] == "count 1" and truncated.tolist() == [False, True]
        assert CRASH_INFO_KEY in infos[1]["final_info"]
        obs, _, _, truncated, _ = vec.step({3: "exit"})
        assert truncated.tolist() == [True] and vec.restarts == 2
    finally:
        vec.close()


def test_reset_after_crash_starts_clean_episodes():
    ids = ["test:Count2-v0"] * 2
    vec = ProcessVectorEnv(ids, _factories(ids), num_workers=2)
    try:
        first, _ = vec.reset(seed=5)
        os.kill(vec.worker_pids()[0], signal.SIGKILL)
        time.sleep(0.05)
        again, _ = vec.reset(seed=5)
        assert again == first and vec.restarts == 1
        obs, _, _, truncated, _ = _step_all(vec)
        assert obs == ["count 1", "count 1"] and not truncated.any()
    finally:
        vec.close()


# ----------------------------------------------------------- a script without a main guard
NO_GUARD_SCRIPT = """
import gem
vec = gem.make_vec(["game:GuessTheNumber-v0-easy"] * 4, backend="process", backend_kwargs={CONTEXT})
print("built")
vec.close()
"""


@pytest.mark.parametrize("context", ["forkserver", "spawn"])
def test_a_script_without_a_main_guard_gets_one_explanation_and_no_worker_tracebacks(tmp_path, context):
    import subprocess
    import sys

    if context not in __import__("multiprocessing").get_all_start_methods():
        pytest.skip(f"no {context} start method on this platform")
    script = tmp_path / "no_guard.py"
    script.write_text(NO_GUARD_SCRIPT.replace("{CONTEXT}", repr({"num_workers": 2, "context": context})))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "PYTHONPATH": root}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and "built" not in proc.stdout
    assert err[-1].startswith(
        "gem.errors.VectorEnvError: This script creates a process vector env outside `if __name__ == '__main__':`."
    ), proc.stderr[-2000:]
    assert f"With the '{context}' start method" in err[-1]
    assert proc.stderr.count("Traceback") == 1, proc.stderr  # the parent's own, none from the workers
    assert "bootstrapping" not in proc.stderr and "RuntimeError" not in proc.stderr and len(err) < 30
