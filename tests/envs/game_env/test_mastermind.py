import functools
import itertools

import pytest

import gem
from gem.agents import SolverAgent, run_episode
from gem.envs.game_env.mastermind import MastermindEnv, score

PRESETS = {
    "game:Mastermind-v0-easy": (2, 6, 10),
    "game:Mastermind-v0-hard": (4, 8, 30),
}


@pytest.mark.parametrize("env_id", list(PRESETS))
def test_presets_and_rules_in_first_observation(env_id):
    env = gem.make(env_id)
    obs, info = env.reset(seed=0)
    length, numbers, turns = PRESETS[env_id]
    assert (env.code_length, env.num_numbers, env.max_turns, env.duplicate_numbers) == (
        length,
        numbers,
        turns,
        False,
    )
    assert f"{length} digits, each from 1 to {numbers}" in obs and f"{turns} turns" in obs
    assert "black peg" in obs and "white peg" in obs and "\\boxed{" in obs and info["suffix"]
    assert len(set(env.secret)) == length and all(1 <= d <= numbers for d in env.secret)


def test_score_counts_black_and_white_pegs():
    assert score((1, 2, 3, 4), (1, 2, 3, 4)) == (4, 0)
    assert score((1, 2, 3, 4), (4, 3, 2, 1)) == (0, 4)
    assert score((1, 2, 3, 4), (1, 5, 2, 6)) == (1, 1)
    assert score((1, 1, 2, 2), (1, 2, 1, 1)) == (1, 2)  # duplicates are matched once each


def _wrong_guess(env):
    return next(
        g for g in itertools.permutations(range(1, env.num_numbers + 1), env.code_length) if g != env.secret
    )


def test_feedback_board_and_success():
    env = gem.make("game:Mastermind-v0-hard")
    env.reset(seed=4)
    guess = _wrong_guess(env)
    obs, reward, terminated, truncated, _ = env.step("\\boxed{" + " ".join(map(str, guess)) + "}")
    black, white = score(env.secret, guess)
    assert reward == 0.0 and not terminated and not truncated
    assert (
        f"{black} black peg(s), {white} white peg(s)" in obs
        and "Guesses so far:" in obs
        and "Turns left: 29" in obs
    )
    obs, reward, terminated, truncated, info = env.step("\\boxed{" + "".join(map(str, env.secret)) + "}")
    assert reward == 1.0 and terminated and not truncated and info["success"] is True


@pytest.mark.parametrize(
    "guess, hint",
    [("1 2 3", "has 3 digit(s)"), ("1 2 3 9", "between 1 and 8"), ("1 1 2 3", "repeats a digit")],
)
def test_invalid_guesses_cost_a_turn_and_say_why(guess, hint):
    env = gem.make("game:Mastermind-v0-hard")
    env.reset(seed=0)
    obs, reward, terminated, truncated, _ = env.step(f"\\boxed{{{guess}}}")
    assert hint in obs and reward == 0.0 and not terminated and not truncated
    assert env.turn_count == 1 and env.history == []


def test_repeated_guess_is_invalid():
    env = gem.make("game:Mastermind-v0-hard")
    env.reset(seed=0)
    guess = " ".join(map(str, _wrong_guess(env)))
    env.step(f"\\boxed{{{guess}}}")
    obs, reward, terminated, _, _ = env.step(f"\\boxed{{{guess}}}")
    assert "made this guess before" in obs and reward == 0.0 and not terminated


@pytest.mark.parametrize("action", ["1 2 3 4", "\\boxed{one two}", "\\boxed{1 2 x 4}", "\\boxed{}"])
def test_malformed_guess_is_a_format_error(action):
    env = gem.make("game:Mastermind-v0-hard")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert reward == -0.1 and terminated and not truncated and info["success"] is False
    assert "no valid guess" in obs


def test_turn_limit_truncates():
    env = gem.make("game:Mastermind-v0-easy")
    env.reset(seed=2)
    wrong = [g for g in itertools.permutations(range(1, 7), 2) if g != env.secret]
    for g in wrong[:9]:
        assert not env.step("\\boxed{%d %d}" % g)[3]
    obs, reward, terminated, truncated, info = env.step("\\boxed{%d %d}" % wrong[9])
    assert truncated and not terminated and reward == 0.0 and info["success"] is False
    assert "the code was" in obs


def test_random_preset_draws_parameters_per_episode():
    env = gem.make("game:Mastermind-v0-random")
    configs = set()
    for seed in range(30):
        env.reset(seed=seed)
        configs.add((env.code_length, env.num_numbers, env.max_turns))
    assert len(configs) >= 3


@pytest.mark.parametrize("env_id", [*PRESETS, "game:Mastermind-v0-random"])
def test_solver_wins_every_seed(env_id):
    env = gem.make(env_id)
    agent = SolverAgent(env)
    for seed in range(50):
        episode = run_episode(env, agent, seed=seed)
        assert episode.success and episode.total_reward == 1.0, seed


def _optimal_worst_case(codes):
    """Fewest guesses that always find the code (exhaustive game-tree search)."""

    @functools.lru_cache(maxsize=None)
    def depth(candidates):
        if len(candidates) == 1:
            return 1
        best = len(candidates)
        for guess in codes:
            parts = {}
            for c in candidates:
                parts.setdefault(score(c, guess), []).append(c)
            if len(parts) == 1 and guess not in candidates:
                continue
            worst = max(0 if key == (len(guess), 0) else depth(tuple(p)) for key, p in parts.items())
            best = min(best, worst + 1)
        return best

    return depth(tuple(codes))


def test_easy_solver_meets_the_optimal_worst_case_on_every_code():
    codes = list(itertools.permutations(range(1, 7), 2))
    optimal = _optimal_worst_case(codes)
    env = gem.make("game:Mastermind-v0-easy")
    worst = 0
    for secret in codes:
        obs, _ = env.reset(seed=0)
        env.secret = secret
        solver = env.make_solver()
        solver.reset(obs)
        total = 0.0
        for turn in range(1, 11):
            obs, reward, terminated, truncated, info = env.step(solver.act(obs))
            total += reward
            if terminated:
                break
        assert info["success"] and total == pytest.approx(1.0), secret
        worst = max(worst, turn)
    assert worst <= optimal == 4


def test_solver_handles_duplicate_codes():
    env = MastermindEnv(code_length=3, num_numbers=4, duplicate_numbers=True, max_turns=10)
    agent = SolverAgent(env)
    assert all(run_episode(env, agent, seed=s).success for s in range(20))


def test_state_roundtrip_and_spawn():
    env = gem.make("game:Mastermind-v0-hard")
    env.reset(seed=1)
    env.step("\\boxed{1 2 3 4}")
    state = env.get_state()
    first = env.step("\\boxed{5 6 7 8}")[:4]
    env.set_state(state)
    assert env.step("\\boxed{5 6 7 8}")[:4] == first
    copy = env.spawn()
    assert copy.reset(seed=1)[0] == env.reset(seed=1)[0]


@pytest.mark.parametrize(
    "kwargs",
    [dict(code_length=0), dict(code_length=5, num_numbers=4), dict(max_turns=-1), dict(num_numbers="8")],
)
def test_constructor_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        MastermindEnv(**kwargs)
