"""GEM <-> Gymnasium (gem.interop.gymnasium), against the real gymnasium package."""

from __future__ import annotations

import sys
import tomllib
import warnings
from pathlib import Path

import pytest

gymnasium = pytest.importorskip("gymnasium", reason="needs the gymnasium extra (pip install -e '.[gymnasium]' in the GEM checkout)")
from gymnasium.utils.env_checker import check_env  # noqa: E402

import gem  # noqa: E402
from gem.errors import DependencyNotInstalled, ResetNeeded  # noqa: E402
from gem.interop import gymnasium as gem_gym  # noqa: E402
from tests.conftest import extra_installed  # noqa: E402
from tests.envs.hub_fixtures import serve_hub  # noqa: E402
from tests.interop.families import FAMILY_IDS, record, replay  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ALL_IDS = gem.list_envs()
RAW_MULTI_AGENT = {"multi:TicTacToe-v0", "multi:KuhnPoker-v0", "multi:Negotiation-v0", "multi:CustomerService-v0"}


def _gym_make(env_id: str, **kwargs):
    try:
        return gymnasium.make(gem_gym.to_gymnasium_id(env_id), **kwargs)
    except DependencyNotInstalled:
        extra = gem.spec(env_id).extra
        if extra and not extra_installed(extra):
            pytest.skip(f"{env_id} needs the {extra} extra")
        raise


def test_ids_map_both_ways():
    for env_id in ALL_IDS:
        gym_id = gem_gym.to_gymnasium_id(env_id)
        assert gym_id.startswith("gem/") and ":" not in gym_id
        assert gem_gym.from_gymnasium_id(gym_id) == env_id
    with pytest.raises(ValueError, match="family:Name"):
        gem_gym.to_gymnasium_id("Wordle")


def test_every_gem_id_is_in_gymnasiums_registry():
    registered = {k for k in gymnasium.registry if k.startswith("gem/")}
    assert registered == {gem_gym.to_gymnasium_id(i) for i in ALL_IDS}
    spec = gymnasium.spec("gem/game.GuessTheNumber-v0")
    assert spec.kwargs == {"env_id": "game:GuessTheNumber-v0"}


def test_the_entry_point_function_registers_every_id():
    """What Gymnasium 0.26-0.29 call on import: the function the pyproject entry point names."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    target = project["project"]["entry-points"]["gymnasium.envs"]["gem"]
    module_name, _, attr = target.partition(":")
    __import__(module_name)
    register = getattr(sys.modules[module_name], attr)
    assert register is gem_gym.register_envs
    saved = {k: gymnasium.registry.pop(k) for k in list(gymnasium.registry) if k.startswith("gem/")}
    try:
        assert register() == len(ALL_IDS)
        assert register() == 0  # idempotent
        env = gymnasium.make("gem/game.GuessTheNumber-v0")
        assert isinstance(env.unwrapped, gem_gym.GemGymnasiumEnv)
        env.close()
    finally:
        gymnasium.registry.update(saved)


def test_module_path_form_needs_no_import():
    env = gymnasium.make("gem.interop.gymnasium:gem/game.GuessTheNumber-v0")
    obs, info = env.reset(seed=3)
    assert isinstance(obs, str) and obs
    env.close()


@pytest.mark.parametrize("env_id", sorted(set(FAMILY_IDS.values())))
def test_check_env_passes_one_id_per_family(env_id, monkeypatch):
    serve_hub(monkeypatch)
    env = _gym_make(env_id)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # Gymnasium's checker warns for what it does not fail
            check_env(env.unwrapped)
    finally:
        env.close()


@pytest.mark.slow
@pytest.mark.parametrize("env_id", [i for i in ALL_IDS if i not in RAW_MULTI_AGENT])
def test_check_env_passes_every_id(env_id, monkeypatch):
    serve_hub(monkeypatch)
    env = _gym_make(env_id)
    try:
        check_env(env.unwrapped)
    finally:
        env.close()


@pytest.mark.parametrize("env_id", sorted(RAW_MULTI_AGENT))
def test_raw_multi_agent_ids_name_their_single_agent_view(env_id):
    with pytest.raises(ValueError, match="vs-scripted"):
        gymnasium.make(gem_gym.to_gymnasium_id(env_id))


def test_spaces_hold_any_text_and_sample_well_formed_text():
    env = gymnasium.make("gem/game.GuessTheNumber-v0")
    space = env.observation_space
    assert "Ünïcode ✓\n\t" in space and "" in space and 3 not in space
    assert "x" * (space.max_length + 1) not in space
    env.action_space.seed(0)
    action = env.action_space.sample()
    assert isinstance(action, str) and 1 <= len(action) <= env.action_space.max_length
    assert "" not in env.action_space
    env.close()


def test_an_episode_is_the_gem_episode_of_the_same_seed():
    trace = record("game:GuessTheNumber-v0", seed=11)
    assert trace.total == 1.0  # the solver won: the replay below covers a whole winning episode
    env = gymnasium.make("gem/game.GuessTheNumber-v0")
    assert replay(env, 11, trace.actions) == trace
    env.close()


def test_unseeded_reset_continues_from_the_seed():
    env = gymnasium.make("gem/game.Mastermind-v0-easy")
    env.reset(seed=5)
    first = [env.reset()[0] for _ in range(3)]
    env.reset(seed=5)
    assert [env.reset()[0] for _ in range(3)] == first
    env.close()


def test_render_ansi_shows_the_last_observation():
    env = gymnasium.make("gem/game.GuessTheNumber-v0", render_mode="ansi")
    obs, _ = env.reset(seed=0)
    assert env.render() == obs
    obs, *_ = env.step("\\boxed{7}")
    assert env.render() == obs
    env.close()
    with pytest.raises(ValueError, match="render_mode"), pytest.warns(UserWarning, match="render_mode"):
        gymnasium.make("gem/game.GuessTheNumber-v0", render_mode="human")


def test_kwargs_reach_the_gem_env():
    env = gymnasium.make("gem/game.GuessTheNumber-v0", max_turns=2)
    env.reset(seed=0)
    env.step("\\boxed{1}")
    *_, term, trunc, _ = env.step("\\boxed{1}")
    assert term or trunc
    env.close()


# ------------------------------------------------------------------ Gymnasium -> GEM
def test_gem_makes_a_gymnasium_text_env_by_id():
    env = gem.make("gymnasium:gem/game.GuessTheNumber-v0")
    local = gem.make("game:GuessTheNumber-v0")
    assert env.reset(seed=4)[0] == local.reset(seed=4)[0]
    action = env.sample_random_action()
    assert action.startswith("\\boxed{")  # the GEM env's well-formed action, not random characters
    assert env.step(action)[:4] == local.step(action)[:4]
    env.close()
    local.close()


def test_gem_wraps_a_gymnasium_env_object():
    env = gem_gym.from_gymnasium(gymnasium.make("gem/logic.RuleReasoning-d1"))
    obs, info = env.reset(seed=2)
    assert isinstance(obs, str) and obs
    with pytest.raises(ResetNeeded):
        gem_gym.from_gymnasium(gymnasium.make("gem/logic.RuleReasoning-d1")).step("x")
    env.close()


def test_a_gymnasium_env_without_text_spaces_is_refused():
    with pytest.raises(ValueError, match="not gymnasium.spaces.Text"):
        gem.make("gymnasium:CartPole-v1")


def test_a_wrong_gymnasium_id_says_so():
    with pytest.raises(Exception, match="NoSuchEnv"):
        gem.make("gymnasium:NoSuchEnv-v0")


def test_outside_ids_work_in_make_vec():
    vec = gem.make_vec(["gymnasium:gem/game.GuessTheNumber-v0"] * 2, seed=3)
    obs, _ = vec.reset(seed=3)
    assert list(obs) == [gem.make("game:GuessTheNumber-v0").reset(seed=s)[0] for s in (3, 4)]
    vec.close()
