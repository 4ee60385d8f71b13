import random
from typing import Any, Optional

import pytest

from gem.core import Env, strict_step
from gem.errors import ResetNeeded
from gem.utils.env_checker import EnvCheckError, check_env
from tests.conftest import CountEnv

pytestmark = pytest.mark.usefixtures("lenient_step")  # these tests pin the default (lenient) step-after-end


class GlobalRandomEnv(CountEnv):
    def reset(self, seed: Optional[int] = None, **kwargs: Any):
        super().reset(seed)
        self.start = random.randint(0, 10**9)  # the mistake: module-global state
        return f"start {self.start}", {}


class NoResetCheckEnv(CountEnv):
    def step(self, action):
        return "ok", 0.0, True, False, {}


class CrashesOnGarbageEnv(CountEnv):
    def _step(self, action):
        if action != "\\boxed{+}":
            int(action)  # the mistake: parsing that raises
        return super()._step(action)


class WrongFormatRewardEnv(CountEnv):
    def _step(self, action):
        if action != "\\boxed{+}":
            return self._result("bad", 0.0, terminated=True)
        return super()._step(action)


class BadTypesEnv(CountEnv):
    def reset(self, seed=None, **kwargs):
        super().reset(seed)
        return ["not", "a", "str"], {}


def test_good_env_passes():
    check_env(CountEnv())


def test_global_random_is_caught():
    with pytest.raises(EnvCheckError, match=r"\[check_seed_determinism\] reset\(seed\) gave different observations"):
        check_env(GlobalRandomEnv())


class RaisesAfterEndEnv(CountEnv):
    """Keeps its own episode flag (no super().reset()) and raises on a step after the end, even
    outside strict mode (the original GEM's code steps on)."""

    deterministic = True  # "start" whatever the seed

    def reset(self, seed=None, **kwargs):
        self._rng, self.count, self.ended = random.Random(seed), 0, False
        return "start", {}

    def step(self, action):
        if self.ended:
            raise ResetNeeded("call reset()")
        self.ended = True
        return "done", 1.0 if action == "\\boxed{+}" else -0.1, True, False, {}


class NonTerminalAfterEndEnv(CountEnv):
    """Warns, but then pretends the episode goes on."""

    def _episode_over_result(self):
        return "still going", 0.0, False, False, {}


class NoSuperResetEnv(CountEnv):
    """Never calls ``super().reset()``, so GEM cannot tell that an episode ran, and steps on after the end."""

    def reset(self, seed=None, **kwargs):
        self._rng = random.Random(seed)
        self.count = 0
        return "start", {}

    def step(self, action):
        return "ok", -0.1, True, False, {}


def test_step_after_end_of_an_env_that_never_checks_is_handled_by_the_base_class():
    with pytest.raises(EnvCheckError) as info:
        check_env(NoResetCheckEnv())  # its step() never calls _check_step(): the base class covers it
    assert "check_step_after_end" not in str(info.value)


def test_missing_step_after_end_handling_is_caught():
    with pytest.raises(EnvCheckError, match=r"\[check_step_after_end\] step\(\) after the end gave no StepAfterEndWarning"):
        check_env(NoSuperResetEnv())


def test_raising_after_the_end_outside_strict_mode_is_caught():
    with pytest.raises(EnvCheckError, match=r"\[check_step_after_end\] step\(\) after the end raised ResetNeeded outside strict"):
        check_env(RaisesAfterEndEnv())
    with strict_step():
        check_env(RaisesAfterEndEnv())


def test_non_terminal_result_after_the_end_is_caught():
    with pytest.raises(EnvCheckError, match=r"must return a terminal result"):
        check_env(NonTerminalAfterEndEnv())


def test_strict_mode_expects_a_raise():
    env = CountEnv()
    env.strict_step = True
    check_env(env)
    with strict_step(), pytest.raises(EnvCheckError, match=r"in strict mode step\(\) after the end must raise ResetNeeded"):
        check_env(NoSuperResetEnv())


def test_crash_on_hostile_action_is_caught():
    with pytest.raises(EnvCheckError, match=r"\[check_hostile_actions\] the empty action raised ValueError"):
        check_env(CrashesOnGarbageEnv())


def test_wrong_format_reward_is_caught():
    with pytest.raises(EnvCheckError, match=r"the empty action got reward 0.0, not the format-error reward -0.1"):
        check_env(WrongFormatRewardEnv())


def test_bad_types_are_caught_and_all_failures_listed():
    with pytest.raises(EnvCheckError) as info:
        check_env(BadTypesEnv())
    assert "[check_reset] the observation must be a str, got list." in str(info.value)


def test_unknown_skip_names_valid_checks():
    with pytest.raises(ValueError, match="check_reset"):
        check_env(CountEnv(), skip=["check_nothing"])


# ------------------------------------------------------------------------------------------------
# Every check, fed an env broken in the way it looks for, fails with its exact message.
from gem.utils import env_checker as ec  # noqa: E402


def fails_with(check, env, message: str, **kwargs: Any) -> None:
    with pytest.raises(EnvCheckError) as info:
        check(env, **kwargs)
    assert str(info.value) == message


@pytest.mark.parametrize(
    "reset_result, message",
    [
        ("obs", "[check_reset] reset() must return (observation, info); got str."),
        ((["obs"], {}), "[check_reset] the observation must be a str, got list."),
        (("obs", None), "[check_reset] info must be a dict, got NoneType."),
    ],
)
def test_check_reset_messages(reset_result, message):
    class Broken(CountEnv):
        def reset(self, seed=None, **kwargs):
            super().reset(seed)
            return reset_result

    fails_with(ec.check_reset, Broken(), message)


class IntActionEnv(CountEnv):
    def sample_random_action(self):
        return 7


class ShortStepEnv(CountEnv):
    def step(self, action):
        return "obs", 0.0, True


class NoneInfoEnv(CountEnv):
    def step(self, action):
        return "obs", 0.0, True, False, None


class BoolRewardEnv(CountEnv):
    def step(self, action):
        return "obs", True, True, False, {}


@pytest.mark.parametrize(
    "env_cls, message",
    [
        (IntActionEnv, "[check_step] sample_random_action() must return a str, got int."),
        (ShortStepEnv, "[check_step] step() must return (observation, reward, terminated, truncated, info)."),
        (NoneInfoEnv, "[check_step] step() returned NoneType where dict belongs."),
        (BoolRewardEnv, "[check_step] the reward must be a float, got bool."),
    ],
)
def test_check_step_messages(env_cls, message):
    fails_with(ec.check_step, env_cls(), message)


class IllFormedSampleEnv(CountEnv):
    def sample_random_action(self):
        return "plus one"  # CountEnv only parses \boxed{+}


def test_check_random_action_is_well_formed_message():
    fails_with(
        ec.check_random_action_is_well_formed,
        IllFormedSampleEnv(),
        "[check_random_action_is_well_formed] sample_random_action() gave 'plus one', which the env scored "
        "as a format error (-0.1); sample actions in the format the env parses.",
    )


class GlobalStepRandomEnv(CountEnv):
    """Starts reproducibly, but each step's observation comes from the module's generator."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return f"{obs} {random.random()}", reward, terminated, truncated, info


def test_check_seed_determinism_messages():
    fails_with(
        ec.check_seed_determinism,
        GlobalRandomEnv(),
        "[check_seed_determinism] reset(seed) gave different observations for the same seed; draw randomness "
        "from self.rng / self.np_random (seeded by reset), never from the random module.",
    )
    fails_with(
        ec.check_seed_determinism,
        GlobalStepRandomEnv(),
        "[check_seed_determinism] the same seed and actions gave a different episode at step 1; keep all "
        "randomness on the env's own generators.",
    )


class FixedSeedEnv(CountEnv):
    """The mistake: a fixed generator in reset, so every seed plays the same episode."""

    def reset(self, seed=None, **kwargs):
        super().reset(seed)
        self.start = random.Random(7).randint(0, 1000)
        return f"start {self.start}", {}


def test_check_seed_sensitivity_catches_an_env_that_ignores_its_seed():
    fails_with(
        ec.check_seed_sensitivity,
        FixedSeedEnv(),
        "[check_seed_sensitivity] seeds 0 to 3 all gave the same episode; draw the episode from self.rng "
        "(seeded by reset(seed)), or declare deterministic = True on the class if it has nothing to vary.",
    )
    with pytest.raises(EnvCheckError, match=r"\[check_seed_sensitivity\]"):
        check_env(FixedSeedEnv())


def test_a_declared_deterministic_env_passes_seed_sensitivity():
    env = FixedSeedEnv()
    env.deterministic = True
    check_env(env)


class NeverEndsEnv(CountEnv):
    """Valid actions never end it, and its step never checks for an end."""

    def step(self, action):
        return "still here", 0.0, False, False, {}


class BoundIgnoredEnv(NeverEndsEnv):
    max_episode_steps = 5  # declared, but not honoured


class LazySolverEnv(NeverEndsEnv):
    def make_solver(self):
        from gem.agents.base import Agent

        class Idle(Agent):
            def act(self, observation, info=None):
                return "wait"

        return Idle()


def test_check_episode_ends_messages():
    env = NeverEndsEnv()
    del env.max_episode_steps  # CountEnv declares a bound; this env declares none
    fails_with(
        ec.check_episode_ends,
        env,
        f"[check_episode_ends] {ec.EPISODE_STEP_LIMIT} sampled actions did not end the episode; end episodes "
        "(a turn limit), and declare the bound as max_episode_steps or provide make_solver().",
    )
    env = BoundIgnoredEnv()
    del env.max_episode_steps
    fails_with(
        ec.check_episode_ends,
        env,
        "[check_episode_ends] the episode did not end after max_episode_steps = 5 sampled actions; end it "
        "(terminated or truncated) by then.",
    )
    env = LazySolverEnv()
    del env.max_episode_steps
    fails_with(
        ec.check_episode_ends,
        env,
        f"[check_episode_ends] the episode did not end after {ec.EPISODE_STEP_LIMIT} steps of make_solver(); "
        "end it (terminated or truncated) by then.",
    )


def test_check_step_after_end_never_passes_without_reaching_the_end():
    env = BoundIgnoredEnv()
    del env.max_episode_steps
    with pytest.raises(EnvCheckError) as info:
        check_env(env)
    assert "[check_episode_ends] the episode did not end after max_episode_steps = 5" in str(info.value)
    assert str(info.value).count("the episode did not end") == 2  # check_step_after_end says it too


def test_check_step_after_end_messages():
    fails_with(
        ec.check_step_after_end,
        NoSuperResetEnv(),
        "[check_step_after_end] step() after the end gave no StepAfterEndWarning; step() after the episode "
        "ended was not handled; call super().reset(seed) in reset() and implement _step() rather than step() "
        "(Env.step then handles it).",
    )
    fails_with(
        ec.check_step_after_end,
        RaisesAfterEndEnv(),
        "[check_step_after_end] step() after the end raised ResetNeeded outside strict mode; it must warn and "
        "return a terminal result (Env.step does both for an env that implements _step()).",
    )
    fails_with(
        ec.check_step_after_end,
        NonTerminalAfterEndEnv(),
        "[check_step_after_end] step() after the end must return a terminal result (terminated or truncated); "
        "got ('still going', 0.0, False, False, {}).",
    )


class SilentEnv(CountEnv):
    def _step(self, action):
        if action != "\\boxed{+}":
            return self._result("", self.format_error_reward, terminated=True)
        return super()._step(action)


class SurrogateEchoEnv(CountEnv):
    def _step(self, action):
        if action != "\\boxed{+}":
            return self._result(f"bad: {action}", self.format_error_reward, terminated=True)
        return super()._step(action)


class StuckAfterHostileEnv(CountEnv):
    def _step(self, action):
        if getattr(self, "poisoned", False):
            raise RuntimeError("poisoned")
        if action != "\\boxed{+}":
            self.poisoned = True
            return self._result("bad action", self.format_error_reward)
        return super()._step(action)


def test_check_hostile_actions_messages():
    fails_with(
        ec.check_hostile_actions,
        SilentEnv(),
        "[check_hostile_actions] the empty action gave no observation saying what was wrong.",
    )
    fails_with(
        ec.check_hostile_actions,
        SurrogateEchoEnv(),
        "[check_hostile_actions] the observation after the invalid UTF-8 surrogates action is not valid UTF-8; "
        "echo actions through gem.utils.text.preview().",
        actions={"invalid UTF-8 surrogates": ec.HOSTILE_ACTIONS["invalid UTF-8 surrogates"]},
    )
    fails_with(
        ec.check_hostile_actions,
        SurrogateEchoEnv(),
        f"[check_hostile_actions] the 10 MB action was echoed back whole ({ec.TEN_MB + 5} chars).",
        actions={"10 MB": ec.HOSTILE_ACTIONS["10 MB"]},
    )
    fails_with(
        ec.check_hostile_actions,
        StuckAfterHostileEnv(),
        "[check_hostile_actions] after the empty action the env could not go on: RuntimeError: poisoned",
    )


class HiddenStateEnv(CountEnv):
    """Keeps part of its episode outside the instance (a shared list), so a snapshot misses it."""

    log: list = []

    def step(self, action):
        result = super().step(action)
        self.log.append(action)
        return (f"{result[0]} after {len(self.log)} steps",) + result[1:]


def test_check_state_roundtrip_message():
    fails_with(
        ec.check_state_roundtrip,
        HiddenStateEnv(),
        "[check_state_roundtrip] after set_state(get_state()) the same action gave a different result; include "
        "all episode state (and generators) in get_state().",
    )


class SharedCounterEnv(CountEnv):
    """Instances share a class-level counter: alone it replays, in threads the copies interfere."""

    served = [0]

    def reset(self, seed=None, **kwargs):
        super().reset(seed)
        self.served[0] += 1
        return f"start {self.start} ({self.served[0]} served)", {}

    def __deepcopy__(self, memo):
        new = type(self)(self.target)
        return new


class ThreadShyEnv(CountEnv):
    def step(self, action):
        import threading

        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("only the main thread may step")
        return super().step(action)

    def __deepcopy__(self, memo):
        return type(self)(self.target)


def test_check_thread_determinism_messages():
    with pytest.raises(EnvCheckError) as info:
        ec.check_thread_determinism(SharedCounterEnv(), threads=2)
    assert str(info.value) in {
        f"[check_thread_determinism] thread {k} played a different episode for the same seed; the env shares "
        "random or mutable state across instances (module globals, class attributes)."
        for k in (0, 1)
    }
    with pytest.raises(EnvCheckError) as info:
        ec.check_thread_determinism(ThreadShyEnv(), threads=2)
    assert str(info.value) in {
        f"[check_thread_determinism] thread {k} raised RuntimeError: only the main thread may step" for k in (0, 1)
    }


class CloseOnceEnv(CountEnv):
    def close(self):
        if getattr(self, "closed", False):
            raise RuntimeError("already closed")
        self.closed = True


def test_check_close_message_and_a_good_env_closes_twice():
    fails_with(
        ec.check_close,
        CloseOnceEnv(),
        "[check_close] the second close() raised RuntimeError: already closed; make close() idempotent.",
    )
    env = CountEnv()
    ec.check_close(env)
    env.close()
    env.close()


def test_every_check_has_a_test_here():
    import inspect

    source = inspect.getsource(inspect.getmodule(test_every_check_has_a_test_here))
    untested = [name for name in ec.CHECKS if f"ec.{name}" not in source and f"[{name}]" not in source]
    assert not untested, f"checks without a test feeding them a broken env: {untested}"


class VagueResetNeededEnv(CountEnv):
    """Raises in strict mode, but without telling the user what to do."""

    def step(self, action):
        if self._needs_reset and self._episode_started:
            raise ResetNeeded("episode over")
        return super().step(action)

    step._gem_step_guard = True  # its own handling of the end, not the base class's


class VagueWarningEnv(CountEnv):
    def step(self, action):
        if self._needs_reset and self._episode_started:
            import warnings

            from gem.errors import StepAfterEndWarning

            warnings.warn("episode over", StepAfterEndWarning)
            return "over", 0.0, True, False, {}
        return super().step(action)

    step._gem_step_guard = True


class CrashesAfterEndEnv(CountEnv):
    def step(self, action):
        if self._needs_reset and self._episode_started:
            raise KeyError("board")
        return super().step(action)

    step._gem_step_guard = True


def test_check_step_after_end_messages_about_the_raise_and_the_warning():
    with strict_step():
        fails_with(
            ec.check_step_after_end,
            VagueResetNeededEnv(),
            "[check_step_after_end] the ResetNeeded message must tell the user to call reset().",
        )
        fails_with(
            ec.check_step_after_end,
            NoSuperResetEnv(),
            "[check_step_after_end] in strict mode step() after the end must raise ResetNeeded; step() after the "
            "episode ended was not handled; call super().reset(seed) in reset() and implement _step() rather than "
            "step() (Env.step then handles it).",
        )
    fails_with(
        ec.check_step_after_end,
        VagueWarningEnv(),
        "[check_step_after_end] the StepAfterEndWarning message must tell the user to call reset().",
    )
    fails_with(
        ec.check_step_after_end,
        CrashesAfterEndEnv(),
        "[check_step_after_end] step() after the end raised KeyError: 'board'; step() after the episode ended was "
        "not handled; call super().reset(seed) in reset() and implement _step() rather than step() (Env.step "
        "then handles it).",
    )


def test_check_hostile_actions_wrong_reward_message():
    fails_with(
        ec.check_hostile_actions,
        WrongFormatRewardEnv(),
        "[check_hostile_actions] the empty action got reward 0.0, not the format-error reward -0.1.",
    )


def test_check_env_lists_a_check_that_raised_unexpectedly():
    class ExplodingSampleEnv(CountEnv):
        def sample_random_action(self):
            raise ZeroDivisionError("no actions")

    with pytest.raises(EnvCheckError) as info:
        check_env(ExplodingSampleEnv(), skip=[n for n in ec.CHECKS if n != "check_step"])
    assert str(info.value).endswith("failed 1 check(s):\n[check_step] raised ZeroDivisionError: no actions")


class EndsOnlyForTheSolverEnv(CountEnv):
    """The solver's winning move ends it; any other action is accepted and the episode runs on (no turn limit)."""

    def step(self, action):
        if action == "\\boxed{win}":
            return self._result("won", 1.0, terminated=True)
        return "still here", 0.0, False, False, {}

    def make_solver(self):
        from gem.agents.base import Agent

        class Winner(Agent):
            def act(self, observation, info=None):
                return "\\boxed{win}"

        return Winner()


def test_check_env_fails_an_env_that_never_ends():
    """terminated and truncated always False: check_env drives it and fails it (and says what to do)."""
    env = NeverEndsEnv()
    del env.max_episode_steps
    with pytest.raises(EnvCheckError) as info:
        check_env(env)
    assert f"[check_episode_ends] {ec.EPISODE_STEP_LIMIT} sampled actions did not end the episode" in str(info.value)


def test_check_episode_ends_also_drives_sampled_actions_when_a_solver_wins():
    """A solver that wins proves nothing about a policy that does not: the episode must end for it too."""
    env = EndsOnlyForTheSolverEnv()
    del env.max_episode_steps
    fails_with(
        ec.check_episode_ends,
        env,
        f"[check_episode_ends] {ec.EPISODE_STEP_LIMIT} sampled actions did not end the episode, though "
        "make_solver()'s play did; end every episode whatever the actions (a turn limit), and declare the "
        "bound as max_episode_steps.",
    )
    with pytest.raises(EnvCheckError, match=r"\[check_episode_ends\]"):
        check_env(env)


def test_a_huge_declared_bound_is_driven_up_to_the_cap():
    env = BoundIgnoredEnv()
    env.max_episode_steps = 10**9
    fails_with(
        ec.check_episode_ends,
        env,
        f"[check_episode_ends] the episode did not end after max_episode_steps = {ec.DECLARED_BOUND_CAP} sampled "
        f"actions (max_episode_steps = {10**9} is more than check_env drives); end it (terminated or truncated) by then.",
    )


# ------------------------------------------------------------------------------------------------
# An env that ends its episode without saying so, turn limits, and declared limits.
class HidesItsEndEnv(CountEnv):
    """Ends at the target (the base class knows), but every step says terminated=truncated=False;
    the step after the hidden end then warns and returns the base class's terminal result."""

    def step(self, action):
        obs, reward, _, _, info = super().step(action)
        return obs, reward, False, False, info


def test_an_env_that_hides_its_end_fails():
    env = HidesItsEndEnv()
    del env.max_episode_steps  # with no bound, the step after the hidden end looked like an end
    with pytest.raises(EnvCheckError) as info:
        check_env(env)
    message = str(info.value)
    assert "[check_episode_ends] the env warned 'HidesItsEndEnv.step() was called after the episode ended" in message
    assert "it ended the episode without reporting it. Return the end's flags from the step that ends it" in message
    assert info.value.report["check_episode_ends"] == "failed"
    assert info.value.report["check_reset"] == "passed"


def test_an_env_that_warned_before_the_check_still_fails():
    env = HidesItsEndEnv()
    del env.max_episode_steps
    env.reset(seed=0)
    with pytest.warns(Warning):
        for _ in range(5):
            env.step(env.sample_random_action())  # the env's one warning is spent before check_env
    with pytest.raises(EnvCheckError, match=r"\[check_episode_ends\] the env warned"):
        check_env(env)


class LongGameEnv(CountEnv):
    """A legitimate long game: sampled actions end it only after 800 steps (its declared max_turns)."""

    def __init__(self, turns: int = 800) -> None:
        super().__init__(target=turns)
        del self.max_episode_steps
        self.max_turns = turns


class TurnLimitIgnoredEnv(NeverEndsEnv):
    def __init__(self) -> None:
        super().__init__()
        del self.max_episode_steps
        self.max_turns = 300


def test_a_declared_max_turns_sets_the_budget():
    ec.check_episode_ends(LongGameEnv())  # more than EPISODE_STEP_LIMIT steps, within 2 * max_turns
    fails_with(
        ec.check_episode_ends,
        TurnLimitIgnoredEnv(),
        "[check_episode_ends] 600 sampled actions did not end the episode, though the env "
        "declares max_turns = 300; end the episode when the turn limit is reached (truncated=True), counting "
        "every step, and declare the bound as max_episode_steps.",
    )


class RemoteLikeEnv(CountEnv):
    declared_limits = {"check_seed_sensitivity": "the remote server picks the episode", "check_close": "shared"}


def test_declared_limits_are_reported_not_run():
    report = check_env(RemoteLikeEnv())
    assert report["check_seed_sensitivity"] == "declared limit: the remote server picks the episode"
    assert report["check_close"] == "declared limit: shared"
    assert report["check_reset"] == "passed" and set(report) == set(ec.CHECKS)

    class FixedAndDeclared(FixedSeedEnv):  # a declared check that would fail is not a failure
        declared_limits = {"check_seed_sensitivity": "the remote server picks the episode"}

    assert check_env(FixedAndDeclared())["check_seed_sensitivity"].startswith("declared limit: ")
    assert check_env(CountEnv(), skip=["check_close"])["check_close"] == "skipped"


def test_declared_limits_show_in_the_error_when_other_checks_fail():
    class Broken(CrashesOnGarbageEnv):
        declared_limits = {"check_seed_sensitivity": "the remote server picks the episode"}

    with pytest.raises(EnvCheckError) as info:
        check_env(Broken())
    assert "[check_seed_sensitivity] declared limit: the remote server picks the episode" in str(info.value)
    assert "[check_hostile_actions]" in str(info.value)


@pytest.mark.parametrize(
    "declared, message",
    [
        ({"check_seeds": "x"}, r"declared_limits names unknown checks \['check_seeds'\]; valid: check_reset, "),
        ({"check_close": ""}, r"declared_limits\['check_close'\] must say why"),
        (["check_close"], "declared_limits must be a dict of check name -> reason, got list"),
    ],
)
def test_declared_limits_naming_no_check_raise(declared, message):
    env = CountEnv()
    env.declared_limits = declared
    with pytest.raises(ValueError, match=message):
        check_env(env)
