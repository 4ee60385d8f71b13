import pytest

import gem
from gem.envs.game_env import words
from gem.envs.game_env.wordle import WordleEnv, feedback
from tests.envs.game_env import _word_helpers as check

check.require_word_lists()

# Measured solver win rate over seeds 0-49 and 0-199: 1.00 on every preset
# (gem run game:<id> --agent solver --episodes 50). Bounds leave a margin.
SOLVER_IDS = ["game:Wordle-v0-easy", "game:Wordle-v0-hard", "game:Wordle-v0-random"]


@pytest.mark.parametrize(
    "env_id, length, turns", [("game:Wordle-v0-easy", 3, 15), ("game:Wordle-v0-hard", 5, 25)]
)
def test_presets_and_first_observation(env_id, length, turns):
    env, obs = check.first_secret_word_observation(env_id, length, turns)
    example = words.words(length, "common")[0].upper()
    assert (
        env.only_real_words
        and "must be an English word" in obs
        and f"for example \\boxed{{{example}}}" in obs
    )


@pytest.mark.parametrize(
    "secret, guess, marks",
    [
        ("CRANE", "CRANE", "GGGGG"),
        ("CRANE", "NACRE", "YYYYG"),
        ("ABBEY", "BOBBY", "YXGXG"),
        ("SPEED", "EERIE", "YYXXX"),
    ],
)
def test_feedback_marks_repeated_letters_once(secret, guess, marks):
    assert feedback(secret, guess) == marks


def test_guess_feedback_board_and_success():
    env = gem.make("game:Wordle-v0-hard")
    env.reset(seed=7)
    guess = next(w.upper() for w in words.words(5, "common") if w.upper() != env.secret)
    obs = check.assert_goes_on(
        env, f"my guess is \\boxed{{{guess.lower()}}}", f"feedback {' '.join(feedback(env.secret, guess))}"
    )
    assert "Guesses so far:" in obs and "Turns left: 24" in obs
    obs, reward, terminated, truncated, info = env.step(f"\\boxed{{{' '.join(env.secret)}}}")
    assert reward == 1.0 and terminated and info["success"] is True


@pytest.mark.parametrize("guess, hint", [("CAT", "has 3 letters"), ("QZXVK", "not in the word list")])
def test_invalid_guesses_cost_a_turn_and_say_why(guess, hint):
    env = gem.make("game:Wordle-v0-hard")
    env.reset(seed=0)
    check.assert_goes_on(env, f"\\boxed{{{guess}}}", hint)
    assert env.history == []


def test_non_words_allowed_when_only_real_words_is_off_and_repeats_are_invalid():
    env = WordleEnv(word_length=5, only_real_words=False, max_turns=10)
    env.reset(seed=0)
    greens = sum(a == b for a, b in zip("QZXVK", env.secret))
    check.assert_goes_on(env, "\\boxed{QZXVK}", "feedback", reward=0.5 * greens / 5)
    check.assert_goes_on(env, "\\boxed{qzxvk}", "guessed this word before")
    assert len(env.history) == 1


@pytest.mark.parametrize("action", ["CRANE", "\\boxed{CR4NE}", "\\boxed{}", "\\boxed{cr-ne}"])
def test_malformed_guesses_are_format_errors(action):
    check.assert_format_error("game:Wordle-v0-hard", action, "no valid guess found")


def test_turn_limit_truncates():
    env = WordleEnv(word_length=3, max_turns=2)
    env.reset(seed=0)
    wrong = [w for w in words.words(3, "common") if w.upper() != env.secret][:2]
    obs = check.assert_truncates(env, [f"\\boxed{{{w}}}" for w in wrong])
    assert f"the word was {env.secret}" in obs


def test_random_preset_draws_lengths():
    seen = check.drawn(
        "game:Wordle-v0-random", range(20), lambda env: (env.word_length, len(env.secret), env.max_turns)
    )
    assert seen == {(3, 3, 15), (4, 4, 20), (5, 5, 25)}


@pytest.mark.parametrize("env_id", SOLVER_IDS)
def test_solver_win_rate(env_id):
    rate = check.solver_win_rate(env_id)
    assert rate >= 0.95, rate


def test_word_lists_are_real_common_words_and_cached():
    five = words.words(5, "common")
    assert "house" in five and "water" in five and "years" not in five  # inflections are not listed
    assert all(w.isalpha() and w.islower() and len(w) == 5 for w in five)
    assert words.words(5, "common") is five
    assert words.is_word("YEARS") and not words.is_word("qzxvk")
    assert not set(words.words(5, "common")) & set(words.words(5, "rare"))
    with pytest.raises(ValueError, match="valid tiers"):
        words.words(5, "hard")


def test_state_roundtrip_keeps_word_lists_off_the_env():
    env = gem.make("game:Wordle-v0-hard")
    env.reset(seed=1)
    state = env.get_state()
    assert all(not isinstance(v, (list, tuple, set)) or len(v) < 50 for v in state.values())
    check.assert_state_roundtrip(env, "\\boxed{CRANE}")


def test_constructor_rejects_bad_arguments():
    check.assert_rejects(WordleEnv, word_length=2, max_turns=0)
