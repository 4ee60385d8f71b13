import copy
import inspect
import os
import subprocess
import sys
import threading
import warnings

import pytest

import gem
from gem.core import EPISODE_OVER_OBSERVATION, STRICT_STEP_ENV_VAR, EnvWrapper, is_strict_step, strict_step
from gem.errors import GemError, ResetNeeded, StepAfterEndWarning
from tests.conftest import CountEnv

pytestmark = pytest.mark.usefixtures("lenient_step")  # these tests pin the default (lenient) step-after-end


class Tag(EnvWrapper):
    def __init__(self, env, tag):
        super().__init__(env)
        self.tag = tag
        self.calls = 0

    def step(self, action):
        self.calls += 1
        obs, r, te, tr, info = self.env.step(action)
        return f"{self.tag}:{obs}", r, te, tr, info


def test_wrapper_forwards_attributes_at_access_time():
    env = CountEnv(target=5)
    wrapped = Tag(Tag(env, "a"), "b")
    assert wrapped.target == 5
    env.target = 7  # a copy made at construction would still say 5
    assert wrapped.target == 7
    assert wrapped.unwrapped is env
    assert wrapped.tag == "b" and wrapped.env.tag == "a"


def test_wrapper_refuses_private_names_and_forwards_env_class_attributes():
    env = gem.make("game:GuessTheNumber-v0-easy")
    wrapped = Tag(env, "x")
    with pytest.raises(AttributeError):
        wrapped._rng_missing_private  # noqa: B018
    assert wrapped.spec is env.spec and wrapped.env_id == "game:GuessTheNumber-v0-easy"
    env.format_error_reward = -0.5
    assert wrapped.format_error_reward == -0.5


def test_wrapper_stack_steps_through_every_layer():
    wrapped = Tag(Tag(CountEnv(target=2), "a"), "b")
    obs, _ = wrapped.reset(seed=1)
    obs, reward, terminated, *_ = wrapped.step("\\boxed{+}")
    assert obs == "b:a:count 1" and reward == 0.0 and not terminated


def test_same_seed_same_episode_and_generators_are_per_env():
    a, b = CountEnv(), CountEnv()
    assert a.reset(seed=3)[0] == b.reset(seed=3)[0]
    assert a.rng is not b.rng
    assert a.np_random.integers(0, 10**9) == b.np_random.integers(0, 10**9)


def test_reset_without_seed_continues_the_stream():
    env = CountEnv()
    starts = [env.reset(seed=5)[0]] + [env.reset()[0] for _ in range(5)]
    again = [env.reset(seed=5)[0]] + [env.reset()[0] for _ in range(5)]
    assert starts == again
    assert len(set(starts)) > 1


def test_step_before_reset_raises_and_after_end_warns_once_with_a_terminal_result():
    env = CountEnv(target=1)
    with pytest.raises(ResetNeeded, match="before reset"):
        env.step("\\boxed{+}")
    env.reset(seed=0)
    env.step("\\boxed{+}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = env.step("\\boxed{+}")
        second = env.step("\\boxed{+}")
    assert first == second == (EPISODE_OVER_OBSERVATION, 0.0, True, False, {"episode_over": True})
    assert env.count == 1  # nothing changed
    assert [w.category for w in caught] == [StepAfterEndWarning]
    assert "call env.reset()" in str(caught[0].message)
    env.reset(seed=0)
    assert env.step("\\boxed{+}")[:3] == ("count 1", 1.0, True)  # a reset opens a new episode


def test_step_after_end_keeps_the_truncated_flag():
    class Truncating(CountEnv):
        def _step(self, action):
            return self._result("cut", 0.0, truncated=True)

    env = Truncating()
    env.reset(seed=0)
    env.step("x")
    with pytest.warns(StepAfterEndWarning):
        assert env.step("x")[2:4] == (False, True)


def test_strict_mode_raises_after_the_end():
    env = CountEnv(target=1)
    env.reset(seed=0)
    env.step("\\boxed{+}")
    with strict_step(), pytest.raises(ResetNeeded, match="after the episode ended; call env.reset()"):
        env.step("\\boxed{+}")
    assert not is_strict_step()
    env.strict_step = True  # per env
    with pytest.raises(ResetNeeded):
        env.step("\\boxed{+}")


def test_strict_mode_from_the_environment_variable():
    code = (
        "import gem\n"
        "from tests.conftest import CountEnv\n"
        "env = CountEnv(target=1); env.reset(seed=0); env.step('\\\\boxed{+}')\n"
        "try:\n    env.step('x')\nexcept gem.errors.ResetNeeded:\n    print('raised')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, STRICT_STEP_ENV_VAR: "1"},
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "raised", out.stderr


def test_step_guard_keeps_the_signature_and_wraps_once():
    class Sub(CountEnv):
        def step(self, action, verbose: bool = False):
            return super().step(action)

    assert list(inspect.signature(Sub.step).parameters) == ["self", "action", "verbose"]
    assert Sub.step.__wrapped__.__qualname__.endswith("Sub.step")


def test_state_roundtrip_and_spawn():
    env = gem.make("game:GuessTheNumber-v0-hard")
    env.reset(seed=4)
    env.step("\\boxed{25}")
    state = env.get_state()
    first = env.step("\\boxed{12}")
    env.set_state(state)
    assert env.step("\\boxed{12}") == first
    twin = env.spawn(same_state=True)
    assert twin.target == env.target and twin.turn_count == env.turn_count
    fresh = env.spawn(max_turns=3)
    assert fresh.max_turns == 3 and fresh.spec.kwargs["max_turns"] == 3
    with pytest.raises(GemError, match="gem.make"):
        CountEnv().spawn()


def test_sixty_four_threads_reset_same_seed_same_episode():
    envs = [gem.make("game:GuessTheNumber-v0-hard") for _ in range(64)]
    actions = ["\\boxed{25}", "\\boxed{12}", "\\boxed{37}", "\\boxed{6}"]
    expected = [envs[0].reset(seed=11)[0]] + [envs[0].step(a)[0] for a in actions]
    results = [None] * 64
    barrier = threading.Barrier(64)

    def play(k):
        barrier.wait()
        obs = [envs[k].reset(seed=11)[0]]
        for a in actions:
            obs.append(envs[k].step(a)[0])
        results[k] = obs

    threads = [threading.Thread(target=play, args=(k,)) for k in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r == expected for r in results)


def test_no_global_random_state_is_touched():
    import random

    import numpy as np

    random.seed(123)
    np.random.seed(123)
    py_state, np_state = random.getstate(), np.random.get_state()[1].copy()
    env = gem.make("game:GuessTheNumber-v0-random")
    for seed in range(5):
        env.reset(seed=seed)
        env.step(env.sample_random_action())
    assert random.getstate() == py_state
    assert (np.random.get_state()[1] == np_state).all()


def test_deepcopy_of_wrapper_is_independent():
    wrapped = Tag(CountEnv(target=3), "t")
    wrapped.reset(seed=0)
    twin = copy.deepcopy(wrapped)
    twin.step("\\boxed{+}")
    assert twin.unwrapped.count == 1 and wrapped.unwrapped.count == 0


# ------------------------------------------------------------------- what `import gem` loads
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _fresh(code: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh, isolated interpreter (-I: no PYTHONPATH, no user site) that imports
    this checkout's gem."""
    prelude = f"import sys; sys.path.insert(0, {ROOT!r})\n"
    return subprocess.run([sys.executable, "-I", "-c", prelude + code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


# Modules `import gem` must not load: an extra's library, numpy, the vector backends, the multi-agent
# base (each loads on first use), logging (needed for a warning only) and hashlib (a fresh seed needs
# the OS's entropy, not secrets' hmac).
NOT_AT_IMPORT = ("gymnasium", "reasoning_gym", "numpy", "torch", "gem.vector", "gem.envs.multiagent",
                 "gem.params", "logging", "hashlib", "secrets")


def test_import_gem_stays_light():
    out = _fresh(f"import gem\nprint([m for m in {NOT_AT_IMPORT!r} if m in sys.modules])")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_what_import_gem_no_longer_loads_still_works_on_first_use():
    out = _fresh(
        "import gem, logging\n"
        "from gem import make_vec, MultiAgentEnv\n"
        "assert gem.vector.make_vec is make_vec and gem.params.Param and gem.MultiAgentEnv is MultiAgentEnv\n"
        "assert callable(gem.validate)\n"
        "assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger('gem').handlers)\n"
        "print('ok')"
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


@pytest.mark.parametrize("order", ["import gem; import gymnasium", "import gymnasium; import gem"])
def test_gymnasium_make_finds_gem_ids_in_either_import_order(order):
    pytest.importorskip("gymnasium", reason="needs the gymnasium extra (pip install -e '.[gymnasium]')")
    out = _fresh(
        f"{order}\n"
        "env = gymnasium.make('gem/game.GuessTheNumber-v0-easy')\n"
        "obs, info = env.reset(seed=0)\n"
        "assert obs == gem.make('game:GuessTheNumber-v0-easy').reset(seed=0)[0]\n"
        "print(type(env.unwrapped).__name__, sum(k.startswith('gem/') for k in gymnasium.registry) == len(gem.list_envs()))"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["GemGymnasiumEnv", "True"]


def test_import_gem_registers_with_gymnasium_only_once_it_is_imported():
    pytest.importorskip("gymnasium", reason="needs the gymnasium extra (pip install -e '.[gymnasium]')")
    out = _fresh(
        "import gem\n"
        "assert 'gymnasium' not in sys.modules and 'gem.interop.gymnasium' not in sys.modules\n"
        "import gymnasium\n"
        "print('gem/game.Wordle-v0-easy' in gymnasium.registry,"
        "      any(type(f).__name__ == '_PostImportHooks' for f in sys.meta_path))"
    )
    assert out.returncode == 0, out.stderr
    # registered, and the one-shot import hook is gone (logging and gymnasium have both arrived)
    assert out.stdout.split() == ["True", "False"]


def test_terminal_env_imports_from_its_package():
    out = _fresh(
        "import gem\n"
        "assert 'gem.envs.terminal.env' not in sys.modules  # `import gem` lists the tasks only\n"
        "from gem.envs.terminal import TerminalEnv, TerminalTask\n"
        "from gem.envs.terminal.env import TerminalEnv as Same\n"
        "assert TerminalEnv is Same and TerminalTask.__module__ == 'gem.envs.terminal.task'\n"
        "print('ok')"
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
    import gem.envs.terminal as package

    with pytest.raises(AttributeError, match="NoSuchThing"):
        package.NoSuchThing  # noqa: B018


def test_a_gymnasium_gem_cannot_use_still_imports(tmp_path):
    # A stand-in "gymnasium" without the API the bridge needs: importing it works, and GEM says why it
    # could not register (to the application's logging), instead of breaking `import gymnasium`.
    (tmp_path / "gymnasium").mkdir()
    (tmp_path / "gymnasium" / "__init__.py").write_text("VERSION = 'stand-in'\n")
    out = _fresh(
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import logging; logging.basicConfig()\n"
        "import gem\n"
        "import gymnasium\n"
        "print(gymnasium.VERSION, type(gymnasium.__loader__).__name__)"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["stand-in", "SourceFileLoader"]  # the module keeps its own loader
    assert "GEM could not register its ids with Gymnasium" in out.stderr
