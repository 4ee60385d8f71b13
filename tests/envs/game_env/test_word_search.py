import pytest

import gem
from gem.envs.game_env.word_search import WordSearchEnv
from tests.envs.game_env import _word_helpers as check

check.require_word_lists()


BASIC = ((0, 1), (1, 0))
EVERY = ((0, 1), (1, 0), (0, -1), (-1, 0), (1, 1), (-1, -1), (1, -1), (-1, 1))


def _where(env, word, directions=EVERY):
    """(r1, c1, r2, c2) of ``word`` in the env's grid, searching ``directions``."""
    n = env.size
    for r in range(n):
        for c in range(n):
            for dr, dc in directions:
                r2, c2 = r + dr * (len(word) - 1), c + dc * (len(word) - 1)
                if (
                    0 <= r2 < n
                    and 0 <= c2 < n
                    and all(env.grid[r + k * dr][c + k * dc] == word[k] for k in range(len(word)))
                ):
                    return r, c, r2, c2
    raise AssertionError(f"{word} is not in the grid")


@pytest.mark.parametrize(
    "env_id, hardcore, num_words",
    [("game:WordSearch-v0-easy", False, 5), ("game:WordSearch-v0-hard", True, 8)],
)
def test_presets_first_observation_and_every_word_hidden(env_id, hardcore, num_words):
    env = gem.make(env_id)
    for seed in range(10):
        obs, info = env.reset(seed=seed)
        assert (env.hardcore, env.num_words, env.max_turns) == (hardcore, num_words, 20)
        assert len(env.targets) == num_words and "Words to find: " + ", ".join(env.targets) in obs
        assert "\\boxed{2 0 2 4}" in obs and info["suffix"]
        for word in env.targets:
            _where(env, word, EVERY if hardcore else BASIC)


def test_hard_puzzles_are_bigger_and_use_diagonals_or_backwards_words():
    easy, hard = gem.make("game:WordSearch-v0-easy"), gem.make("game:WordSearch-v0-hard")
    twisted = 0
    for seed in range(10):
        easy.reset(seed=seed)
        hard.reset(seed=seed)
        assert hard.size > easy.size
        for word in hard.targets:
            r1, c1, r2, c2 = _where(hard, word)
            twisted += (r1 != r2 and c1 != c2) or r2 < r1 or c2 < c1
    assert twisted > 10


def test_finding_words_in_either_order_and_winning():
    env = gem.make("game:WordSearch-v0-easy")
    env.reset(seed=2)
    first, *rest = env.targets
    share = 1 / len(env.targets)  # GEM: each word found pays 1 / number of words
    r1, c1, r2, c2 = _where(env, first, BASIC)
    obs = check.assert_goes_on(env, f"\\boxed{{{r2} {c2} {r1} {c1}}}", f"found {first}", reward=share)  # end first
    assert f"{first} (found)" in obs and f"[{first[0]}]" in obs
    for word in rest:
        obs, reward, terminated, truncated, info = env.step("\\boxed{%d %d %d %d}" % _where(env, word, BASIC))
        assert reward == pytest.approx(share)
    assert terminated and not truncated and info["success"] is True


def test_sparse_reward_pays_only_the_last_word():
    env = gem.make("game:WordSearch-v0-easy", dense_reward=False)
    env.reset(seed=2)
    rewards = [env.step("\\boxed{%d %d %d %d}" % _where(env, word, BASIC))[1] for word in list(env.targets)]
    assert rewards == [0.0] * (len(rewards) - 1) + [1.0]


@pytest.mark.parametrize(
    "find, hint",
    [
        ("0 0 0 30", "leaves the grid"),
        ("0 0 2 1", "not a straight line across or down"),
        ("3 3 3 3", "not a straight"),
    ],
)
def test_invalid_finds_cost_a_turn_and_say_why(find, hint):
    env = gem.make("game:WordSearch-v0-easy")
    env.reset(seed=0)
    check.assert_goes_on(env, f"\\boxed{{{find}}}", hint)


def test_diagonals_are_invalid_in_basic_mode_and_misses_are_reported():
    env = gem.make("game:WordSearch-v0-easy")
    env.reset(seed=0)
    check.assert_goes_on(env, "\\boxed{0 0 2 2}", "across or down")
    check.assert_goes_on(env, "\\boxed{0 0 0 1}", "which is not a word left to find")
    check.assert_goes_on(env, "\\boxed{0 1 0 0}", "already tried")


@pytest.mark.parametrize("action", ["0 0 0 4", "\\boxed{0 0 0}", "\\boxed{a b c d}", "\\boxed{}"])
def test_malformed_finds_are_format_errors(action):
    check.assert_format_error("game:WordSearch-v0-easy", action, "no valid find")


def test_brackets_and_commas_are_tolerated():
    env = gem.make("game:WordSearch-v0-easy")
    env.reset(seed=0)
    check.assert_goes_on(env, "\\boxed{[0, 0, 0, 1]}", "(0, 0) to (0, 1)")


def test_turn_limit_truncates():
    env = WordSearchEnv(hardcore=False, max_turns=2, num_words=5)
    env.reset(seed=0)
    obs = check.assert_truncates(env, ["\\boxed{0 0 0 1}", "\\boxed{1 0 1 1}"])
    assert "you found 0 of 5 words" in obs


def test_random_preset_draws_modes():
    seen = check.drawn(
        "game:WordSearch-v0-random",
        range(20),
        lambda env: (env.hardcore, env.num_words, env.max_turns - 2 * env.num_words),
    )
    assert {h for h, *_ in seen} == {False, True} and {extra for *_, extra in seen} == {4} and len(seen) >= 4


@pytest.mark.parametrize(
    "env_id", ["game:WordSearch-v0-easy", "game:WordSearch-v0-hard", "game:WordSearch-v0-random"]
)
def test_solver_wins_every_seed(env_id):
    for env, episode in check.solver_episodes(env_id):
        assert episode.success and episode.turns == env.num_words, episode.seed


def test_state_roundtrip():
    env = gem.make("game:WordSearch-v0-hard")
    env.reset(seed=1)
    check.assert_state_roundtrip(env, "\\boxed{%d %d %d %d}" % _where(env, env.targets[0]))


def test_constructor_rejects_bad_arguments():
    check.assert_rejects(WordSearchEnv, num_words=0, max_turns=0)
