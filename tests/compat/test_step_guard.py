"""The step contract (step after the end) for both ways of writing an env: one written for this API
runs its ``step`` as written, one written the original GEM's way gets a wrapper, and both behave
the same."""

from __future__ import annotations

import warnings
from typing import Any, Optional

import pytest

import gem
from gem.compat.step_guard import keeps_step_contract
from gem.core import EPISODE_OVER_OBSERVATION, Env, EnvWrapper, strict_step
from gem.errors import ResetNeeded, StepAfterEndWarning
from tests.conftest import needs_env


class NativeEnv(Env):
    """Ends after two steps; keeps the contract itself."""

    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        self.turn = 0
        return "start", {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._needs_reset and (ended := self._step_without_episode()) is not None:
            return ended
        self.turn += 1
        if self.turn >= 2:
            return self._result("done", 1.0, terminated=True)
        return "more", 0.0, False, False, {}


class OriginalEnv(Env):
    """The original GEM's way: no check, the end is only returned."""

    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        self.turn = 0
        return "start", {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.turn += 1
        return ("done", 1.0, True, False, {}) if self.turn >= 2 else ("more", 0.0, False, False, {})


class PassThrough(EnvWrapper):
    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs.upper(), reward, terminated, truncated, info


def _wrapped(cls: type) -> bool:
    return hasattr(cls.__dict__["step"], "__wrapped__")


def test_a_step_written_for_this_api_runs_as_written_and_an_original_one_is_wrapped():
    assert not _wrapped(NativeEnv) and _wrapped(OriginalEnv)
    assert not _wrapped(PassThrough)  # a wrapper's env keeps the contract
    assert keeps_step_contract(NativeEnv, NativeEnv.step)


@pytest.mark.parametrize("cls", [NativeEnv, OriginalEnv])
def test_both_kinds_step_after_the_end_alike(cls):
    env = cls()
    env.reset(seed=0)
    assert env.step("x")[0] == "more"
    assert env.step("x")[:4] == ("done", 1.0, True, False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first, second = env.step("x"), env.step("x")
    assert first == second == (EPISODE_OVER_OBSERVATION, 0.0, True, False, {"episode_over": True})
    assert [w.category for w in caught] == [StepAfterEndWarning]  # warned once
    assert env.turn == 2  # nothing changed
    with strict_step():
        with pytest.raises(ResetNeeded, match="reset"):
            env.step("x")
    env.reset()
    assert env.step("x")[0] == "more"


def test_a_wrapper_over_an_ended_env_returns_the_terminal_result():
    env = PassThrough(NativeEnv())
    env.reset(seed=0)
    env.step("x")
    env.step("x")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StepAfterEndWarning)
        assert env.step("x")[0] == EPISODE_OVER_OBSERVATION.upper()


def test_a_native_step_before_reset_raises():
    with pytest.raises(ResetNeeded, match="before reset"):
        NativeEnv().step("x")


def test_an_override_of_check_step_still_decides_for_a_native_step():
    class Lenient(NativeEnv):
        def _check_step(self) -> None:  # lets a step after the end through
            pass

    env = Lenient()
    env.reset(seed=0)
    env.step("x")
    env.step("x")
    assert env.step("x")[0] == "done"  # turn 3: played, not answered by the base class


@pytest.mark.parametrize("env_id", gem.list_envs("game"))
def test_no_game_pays_for_the_wrapper(env_id):
    """Every game's class runs its own step: the contract costs it no call layer."""
    needs_env(env_id)
    cls = type(gem.make(env_id).unwrapped)
    step = next(klass.__dict__["step"] for klass in cls.__mro__ if "step" in klass.__dict__)
    assert not hasattr(step, "__wrapped__"), f"{cls.__name__}.step is wrapped"
