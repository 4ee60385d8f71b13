import pytest

import gem
from gem.envs.game_env import words
from gem.envs.game_env.hangman import HangmanEnv
from tests.envs.game_env import _word_helpers as check

check.require_word_lists()

# Measured solver win rates over seeds 0-49 (gem run game:<id> --agent solver --episodes 50):
# easy 0.82, hard 1.00, random 0.94 (over seeds 0-199: 0.795, 1.00, 0.91). Bounds leave a margin.
SOLVER_BOUNDS = {"game:Hangman-v0-easy": 0.75, "game:Hangman-v0-hard": 0.95, "game:Hangman-v0-random": 0.88}
LETTERS_RARE_FIRST = "QZXJKVWYBFGPMUCDLHSNRIOATE"


@pytest.mark.parametrize(
    "env_id, length, turns", [("game:Hangman-v0-easy", 3, 10), ("game:Hangman-v0-hard", 7, 20)]
)
def test_presets_and_first_observation(env_id, length, turns):
    env, obs = check.first_secret_word_observation(env_id, length, turns)
    assert not env.hardcore and "a common English word" in obs and "\\boxed{E}" in obs
    assert "Word: " + " ".join("_" * length) in obs


def test_hardcore_draws_less_common_words():
    env = HangmanEnv(word_length=6, hardcore=True, max_turns=20)
    obs, _ = env.reset(seed=0)
    assert "less common" in obs and env.secret.lower() in words.words(6, "rare")


@pytest.mark.parametrize("dense", [True, False])
def test_letters_reveal_and_the_word_wins(dense):
    env = gem.make("game:Hangman-v0-hard", dense_reward=dense)
    env.reset(seed=3)
    present = env.secret[0]
    absent = next(ch for ch in LETTERS_RARE_FIRST if ch not in env.secret)
    # GEM's shaping: a letter pays half the success reward times the share of the word it shows
    credit = 0.5 * env.secret.count(present) / len(env.secret) if dense else 0.0
    obs = check.assert_goes_on(env, f"\\boxed{{{present.lower()}}}", f"yes, {present} appears", reward=credit)
    assert obs.split("Word: ")[1].startswith(present)
    obs = check.assert_goes_on(env, f"\\boxed{{{absent}}}", f"no, {absent} is not in the word")
    assert f"Letters not in the word: {absent}" in obs
    obs, reward, terminated, truncated, info = env.step(f"\\boxed{{{env.secret}}}")
    assert reward == pytest.approx(1.0 - credit) and terminated and not truncated and info["success"] is True


def test_revealing_every_letter_wins():
    env = gem.make("game:Hangman-v0-easy")
    env.reset(seed=1)
    total = 0.0
    for ch in sorted(set(env.secret)):
        obs, reward, terminated, _, info = env.step(f"\\boxed{{{ch}}}")
        total += reward
    assert terminated and info["success"] is True and f"the word is {env.secret}" in obs
    assert total == pytest.approx(1.0) and reward >= 0.5


def test_invalid_guesses_cost_a_turn_and_say_why():
    env = gem.make("game:Hangman-v0-hard")
    env.reset(seed=0)
    env.step("\\boxed{E}")
    check.assert_goes_on(env, "\\boxed{E}", "already guessed the letter E")
    check.assert_goes_on(env, "\\boxed{CAT}", "has 3 letters but the word has 7")
    wrong = next(w.upper() for w in words.words(7, "common") if w.upper() != env.secret)
    check.assert_goes_on(env, f"\\boxed{{{wrong}}}", f"{wrong} is not the word")
    check.assert_goes_on(env, f"\\boxed{{{wrong}}}", "already guessed the word")
    assert env.turn_count == 5


@pytest.mark.parametrize(
    "action", ["E", "\\boxed{3}", "\\boxed{}", "\\boxed{e!}", "\\boxed{" + "e" * 101 + "}"]
)
def test_malformed_guesses_are_format_errors(action):
    check.assert_format_error("game:Hangman-v0-easy", action, "no valid guess found")


def test_turn_limit_truncates():
    env = gem.make("game:Hangman-v0-easy")
    env.reset(seed=0)
    absent = [ch for ch in LETTERS_RARE_FIRST if ch not in env.secret][:10]
    obs = check.assert_truncates(env, [f"\\boxed{{{ch}}}" for ch in absent])
    assert f"the word was {env.secret}" in obs


def test_random_preset_draws_configs():
    seen = check.drawn("game:Hangman-v0-random", range(30), lambda env: (env.word_length, env.max_turns))
    assert seen == {(3, 10), (5, 15), (7, 20)}


@pytest.mark.parametrize("env_id", list(SOLVER_BOUNDS))
def test_solver_win_rate(env_id):
    rate = check.solver_win_rate(env_id)
    assert rate >= SOLVER_BOUNDS[env_id], rate


def test_state_roundtrip():
    env = gem.make("game:Hangman-v0-hard")
    env.reset(seed=1)
    env.step("\\boxed{E}")
    check.assert_state_roundtrip(env, "\\boxed{A}")


def test_constructor_rejects_bad_arguments():
    check.assert_rejects(HangmanEnv, word_length=12, max_turns=0)
