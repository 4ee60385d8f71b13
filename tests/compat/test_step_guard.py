"""The step contract (step after the end) for both ways of writing an env: one written for this API
implements ``_step`` and inherits ``Env.step``, which keeps the contract; one written the original
GEM's way overrides ``step`` and gets a wrapper; both behave the same."""

from __future__ import annotations

import importlib
import warnings
from typing import Any, Optional

import numpy as np
import pytest

import gem
from gem.compat.step_guard import needs_step_guard
from gem.core import EPISODE_OVER_OBSERVATION, Env, EnvWrapper, strict_step
from gem.errors import ResetNeeded, StepAfterEndWarning
from tests.conftest import needs_env


class NativeEnv(Env):
    """Ends after two steps; implements ``_step``."""

    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        self.turn = 0
        return "start", {}

    def _step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.turn += 1
        if self.turn >= 2:
            return self._result("done", 1.0, terminated=True)
        return "more", 0.0, False, False, {}


class NativePlainEnv(NativeEnv):
    """``_step`` returns its end as a plain tuple (NumPy's bool), not through ``self._result``."""

    def _step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.turn += 1
        return ("done", 1.0, np.bool_(True), False, {}) if self.turn >= 2 else ("more", 0.0, False, False, {})


class OriginalEnv(Env):
    """The original GEM's way: ``step`` overridden, no check, the end is only returned."""

    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        self.turn = 0
        return "start", {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.turn += 1
        return ("done", 1.0, True, False, {}) if self.turn >= 2 else ("more", 0.0, False, False, {})


class OldIdiomEnv(OriginalEnv):
    """A ``step`` that starts with the deprecated check (the idiom earlier docs showed)."""

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._needs_reset and (ended := self._step_without_episode()) is not None:
            return ended
        self.turn += 1
        return self._result("done", 1.0, terminated=True) if self.turn >= 2 else ("more", 0.0, False, False, {})


class StatementEnv(OriginalEnv):
    """A ``step`` that starts with the deprecated statement form of the check."""

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self._check_step()
        self.turn += 1
        return self._result("done", 1.0, terminated=True) if self.turn >= 2 else ("more", 0.0, False, False, {})


class ShoutingEnv(NativeEnv):
    """A user's subclass of an env written for this API that overrides ``step`` the original way."""

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)
        return obs.upper(), reward, terminated, truncated, info


class PassThrough(EnvWrapper):
    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs.upper(), reward, terminated, truncated, info


def _wrapped(cls: type) -> bool:
    return "step" in cls.__dict__ and hasattr(cls.__dict__["step"], "__wrapped__")


ALL_KINDS = [NativeEnv, NativePlainEnv, OriginalEnv, OldIdiomEnv, StatementEnv]


def test_only_a_class_that_overrides_step_itself_is_wrapped():
    assert "step" not in NativeEnv.__dict__ and NativeEnv.step is Env.step  # the template, as is
    assert not needs_step_guard(NativeEnv) and not needs_step_guard(NativePlainEnv)
    for cls in (OriginalEnv, OldIdiomEnv, StatementEnv, ShoutingEnv):
        assert _wrapped(cls), cls.__name__
        assert not needs_step_guard(cls)  # wrapped once: a subclass's creation does not wrap it again
    assert not _wrapped(PassThrough) and not _wrapped(EnvWrapper)  # a wrapper's env keeps the contract


def test_the_decision_reads_class_attributes_not_the_step_code():
    class Overrides(Env):
        def reset(self, seed=None, **kwargs):
            return "", {}

        def step(self, action):  # mentions the old idiom's name only in a string
            return "_step_without_episode", 0.0, False, False, {}

    assert _wrapped(Overrides)  # it overrides step: wrapped whatever its code says

    class Marked(Overrides):
        def step(self, action):
            return "mine", 0.0, False, False, {}

        step._gem_step_guard = True  # it handles the end its own way

    assert not _wrapped(Marked)
    assert not needs_step_guard(EnvWrapper) and not needs_step_guard(PassThrough)


def test_an_original_class_is_not_abstract_and_one_with_neither_step_nor__step_is():
    assert OriginalEnv._step.__name__ == "step" and not hasattr(OriginalEnv._step, "__wrapped__")
    assert ShoutingEnv._step is NativeEnv._step  # a _step it inherits is kept

    class Neither(Env):
        def reset(self, seed=None, **kwargs):
            return "", {}

    with pytest.raises(TypeError, match="_step"):
        Neither()


@pytest.mark.parametrize("cls", ALL_KINDS)
def test_every_kind_steps_after_the_end_alike(cls):
    env = cls()
    env.reset(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert env.step("x")[0] == "more"
        assert env.step("x")[:4] == ("done", 1.0, True, False)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", StepAfterEndWarning)
            first, second = env.step("x"), env.step("x")
        assert first == second == (EPISODE_OVER_OBSERVATION, 0.0, True, False, {"episode_over": True})
        assert [w.category for w in caught] == [StepAfterEndWarning]  # warned once
        assert caught[0].filename == __file__  # it points at the caller's line
        assert env.turn == 2  # nothing changed
        with strict_step(), pytest.raises(ResetNeeded, match="reset"):
            env.step("x")
        env.reset()
        assert env.step("x")[0] == "more"


def test_a_user_subclass_that_overrides_step_of_a_native_env_keeps_the_contract():
    env = ShoutingEnv()
    env.reset(seed=0)
    assert env.step("x")[0] == "MORE"
    assert env.step("x")[:3] == ("DONE", 1.0, True)
    with pytest.warns(StepAfterEndWarning):
        assert env.step("x")[0] == EPISODE_OVER_OBSERVATION  # answered before the override runs
    assert env.turn == 2


def test_a_wrapper_over_an_ended_env_returns_the_terminal_result():
    env = PassThrough(NativeEnv())
    env.reset(seed=0)
    env.step("x")
    env.step("x")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StepAfterEndWarning)
        assert env.step("x")[0] == EPISODE_OVER_OBSERVATION.upper()


@pytest.mark.parametrize("cls", [NativeEnv, OldIdiomEnv, StatementEnv])
def test_a_step_before_reset_raises(cls):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(ResetNeeded, match="before reset"):
            cls().step("x")


@pytest.mark.parametrize("cls, name", [(OldIdiomEnv, "_step_without_episode"), (StatementEnv, "_check_step")])
def test_the_old_checks_still_work_and_say_they_are_deprecated(cls, name):
    env = cls()
    deprecated = pytest.warns(DeprecationWarning, match=rf"Env\.{name}\(\) is deprecated.*implement _step")
    with deprecated, pytest.raises(ResetNeeded, match="before reset"):
        env.step("x")
    env.reset(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert [env.step("x")[0] for _ in range(2)] == ["more", "done"]
    # called directly after the end, each answers as it did
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if name == "_step_without_episode":
            assert env._step_without_episode()[0] == EPISODE_OVER_OBSERVATION
        else:
            with pytest.raises(ResetNeeded):
                env._check_step()
    assert DeprecationWarning in [w.category for w in caught]


def test_step_passes_keyword_options_to__step():
    class Verbose(NativeEnv):
        def _step(self, action: str, loud: bool = False):
            obs, *rest = super()._step(action)
            return (obs.upper() if loud else obs, *rest)

    env = Verbose()
    env.reset(seed=0)
    assert env.step("x", loud=True)[0] == "MORE"


_NATIVE_MODULES = (
    "gem.envs.game_env",
    "gem.envs.single_turn",
    "gem.envs.code_env",
    "gem.envs.reasoning_gym",
    "gem.envs.terminal.env",
    "gem.envs.webshop.webshop",
    "gem.envs.multiagent",
    "gem.envs.multiagent.single_agent",
    "gem.interop.gymnasium",
    "gem.interop.openenv.client",
    "gem.interop.verifiers.bridge",
    "gem.server.client",
    "gem.tools.tool_env_wrapper",
)


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def test_no_env_of_gem_overrides_step():
    """GEM's own envs implement _step; only wrappers (which step the wrapped env) and the original
    multi-agent contract (marked: it checks no episode state, as the original) override step."""
    for name in _NATIVE_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:  # an optional extra that is not installed: its classes are not loaded
            continue
    overriding = {
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in _subclasses(Env)
        if cls.__module__.startswith("gem.") and "step" in cls.__dict__
        and not issubclass(cls, EnvWrapper) and not getattr(cls.__dict__["step"], "_gem_step_guard", False)
    }
    assert not overriding, f"these override step instead of implementing _step: {sorted(overriding)}"
    assert not any(_wrapped(cls) for cls in _subclasses(Env) if cls.__module__.startswith("gem."))


@pytest.mark.parametrize("env_id", gem.list_envs("game"))
def test_every_game_runs_the_template_step(env_id):
    """Every game's class inherits Env.step as written (no wrapper) and implements _step."""
    needs_env(env_id)
    cls = type(gem.make(env_id).unwrapped)
    assert cls.step is Env.step, f"{cls.__name__}.step is not Env.step"
    assert not getattr(cls._step, "__isabstractmethod__", False)
