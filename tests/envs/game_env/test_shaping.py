"""GEM's shaped rewards (gem.envs.game_env._shaping) and the games that use them."""

import copy

import pytest

import gem
from gem.envs.game_env._shaping import ProgressReward
from tests.conftest import needs_extra


def test_progress_is_paid_once_and_a_win_completes_the_return():
    shaping = ProgressReward(dense=True, weight=0.5)
    assert shaping.progress(0.25) == pytest.approx(0.125)
    assert shaping.progress(0.25) == 0.0  # the same progress again pays nothing
    assert shaping.progress(0.1) == 0.0  # nor does progress lost
    assert shaping.progress(0.5) == pytest.approx(0.125)
    assert shaping.win() == pytest.approx(0.75)  # 1 in total
    shaping.reset()
    assert shaping.progress(1.0) == pytest.approx(0.5) and shaping.win() == pytest.approx(0.5)


def test_sparse_pays_only_the_win_and_state_survives_copies():
    shaping = ProgressReward(dense=False)
    assert shaping.progress(0.9) == 0.0 and shaping.win() == 1.0
    dense = ProgressReward(weight=1.0)
    dense.progress(0.4)
    twin = copy.deepcopy(dense)
    assert twin.paid == pytest.approx(0.4) and twin.win() == pytest.approx(0.6)
    with pytest.raises(ValueError, match="weight"):
        ProgressReward(weight=1.5)


@pytest.mark.parametrize("dense", [True, False])
def test_mastermind_pays_new_black_pegs_as_gem(dense):
    env = gem.make("game:Mastermind-v0-hard", dense_reward=dense)
    env.reset(seed=0)
    env.unwrapped.secret = (1, 2, 3, 4)
    env.unwrapped._places = {1: 0, 2: 1, 3: 2, 4: 3}
    steps = [("5 2 6 7", 0.25), ("2 5 6 7", 0.0), ("1 2 6 7", 0.25), ("4 3 2 1", 0.0), ("1 2 3 4", 0.5)]
    for guess, gem_reward in steps[:-1]:
        _, reward, terminated, _, _ = env.step(f"\\boxed{{{guess}}}")
        assert not terminated and reward == pytest.approx(gem_reward if dense else 0.0), guess
    _, reward, terminated, _, info = env.step("\\boxed{1 2 3 4}")
    assert terminated and info["success"] and reward == pytest.approx(0.5 if dense else 1.0)


def test_mastermind_lost_episode_keeps_partial_credit():
    env = gem.make("game:Mastermind-v0-easy")
    env.reset(seed=0)
    a, b = env.unwrapped.secret
    wrong = [d for d in range(1, 7) if d not in (a, b)]
    total, guesses = 0.0, [(a, w) for w in wrong] + [(w, x) for w in wrong for x in wrong if w != x]
    for turn, guess in zip(range(10), guesses):
        _, reward, terminated, truncated, info = env.step("\\boxed{%d %d}" % guess)
        total += reward
    assert truncated and not info["success"] and total == pytest.approx(0.5)


SHAPED = ["Mastermind", "Minesweeper", "Wordle", "Hangman", "WordSearch", "Crosswords"]


@pytest.mark.parametrize("game", SHAPED)
@pytest.mark.parametrize("dense", [True, False])
def test_solver_episodes_return_one_when_won_and_partial_credit_otherwise(game, dense):
    from gem.agents import SolverAgent, run_episode

    if game in ("Wordle", "Hangman", "WordSearch"):
        needs_extra("games")  # their word lists come with the games extra
    env = gem.make(f"game:{game}-v0-random", dense_reward=dense)
    agent = SolverAgent(env)
    for seed in range(12):
        episode = run_episode(env, agent, seed=seed, record=True)
        assert all(r >= 0.0 for r in episode.rewards), episode.rewards
        if episode.success:
            assert episode.total_reward == pytest.approx(1.0)
            assert dense or episode.rewards[:-1] == [0.0] * (len(episode.rewards) - 1)
        else:
            assert 0.0 <= episode.total_reward < 1.0 and (dense or episode.total_reward == 0.0)
