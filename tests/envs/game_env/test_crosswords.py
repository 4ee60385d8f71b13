import re

import pytest

import gem
from gem.envs.game_env import crosswords_clues
from gem.envs.game_env.crosswords import ACROSS, CrosswordsEnv
from tests.envs.game_env import _word_helpers as check


def _cells(env):
    """Every (row, col, letter) of the solution."""
    return [(r, c, ch) for r, line in enumerate(env.solution) for c, ch in enumerate(line) if ch != "."]


@pytest.mark.parametrize(
    "env_id, hardcore, num_words, turns",
    [("game:Crosswords-v0-easy", False, 3, 30), ("game:Crosswords-v0-hard", True, 4, 40)],
)
def test_presets_first_observation_and_a_connected_grid(env_id, hardcore, num_words, turns):
    env = gem.make(env_id)
    bank = crosswords_clues.HARD if hardcore else crosswords_clues.EASY
    for seed in range(10):
        obs, info = env.reset(seed=seed)
        assert (env.hardcore, env.num_words, env.max_turns) == (hardcore, num_words, turns)
        assert len(env.placements) == num_words and env.blanks <= turns
        assert "\\boxed{0 2 A}" in obs and "Clues:" in obs and info["suffix"]
        for word, r, c, d in env.placements:
            assert bank[word.lower()] in obs and f"starts at row {r}, column {c}; {len(word)} letters" in obs
            assert "".join(env.solution[r + k * d[0]][c + k * d[1]] for k in range(len(word))) == word
            assert word not in obs  # the answers are not shown
        # every word after the first crosses another: the letter cells are one connected piece
        cells = {(r, c) for r, c, _ in _cells(env)}
        seen, todo = set(), [next(iter(cells))]
        while todo:
            r, c = todo.pop()
            if (r, c) in seen:
                continue
            seen.add((r, c))
            todo += [
                (r + dr, c + dc) for dr, dc in ((0, 1), (1, 0), (0, -1), (-1, 0)) if (r + dr, c + dc) in cells
            ]
        assert seen == cells


@pytest.mark.parametrize("dense", [True, False])
def test_letters_fill_the_grid_and_complete_it(dense):
    env = gem.make("game:Crosswords-v0-easy", dense_reward=dense)
    env.reset(seed=3)
    (r, c, ch), *rest = _cells(env)
    share = 1 / env.letter_cells if dense else 0.0  # GEM: each right letter pays 1 / letter cells
    wrong = "Z" if ch != "Z" else "Q"
    check.assert_goes_on(env, f"\\boxed{{{r} {c} {wrong}}}", "does not belong")
    assert env.board[r][c] == "_"
    check.assert_goes_on(env, f"\\boxed{{{r} {c} {ch.lower()}}}", "is right", reward=share)
    assert env.board[r][c] == ch
    total = share
    for r, c, ch in rest:
        obs, reward, terminated, truncated, info = env.step(f"\\boxed{{{r} {c} {ch}}}")
        total += reward
        assert reward == pytest.approx(share if dense else float(terminated))
    assert terminated and not truncated and info["success"] is True and total == pytest.approx(1.0)


def test_invalid_moves_cost_a_turn_and_say_why():
    env = gem.make("game:Crosswords-v0-easy")
    env.reset(seed=0)
    r, c, ch = _cells(env)[0]
    check.assert_goes_on(env, "\\boxed{40 0 A}", "off the grid")
    black = next(((y, x) for y, line in enumerate(env.board) for x, v in enumerate(line) if v == "."), None)
    if black is not None:
        check.assert_goes_on(env, f"\\boxed{{{black[0]} {black[1]} A}}", "black square")
    env.step(f"\\boxed{{{r} {c} {ch}}}")
    check.assert_goes_on(env, f"\\boxed{{{r} {c} {ch}}}", "already holds")


@pytest.mark.parametrize(
    "action", ["0 0 A", "\\boxed{0 0}", "\\boxed{0 0 AB}", "\\boxed{}", "\\boxed{A 0 0}"]
)
def test_malformed_moves_are_format_errors(action):
    check.assert_format_error("game:Crosswords-v0-easy", action, "no valid move")


def test_turn_limit_truncates():
    env = CrosswordsEnv(hardcore=False, max_turns=2, num_words=3)
    env.reset(seed=0)
    obs = check.assert_truncates(env, ["\\boxed{99 0 A}"] * 2)
    assert f"with {env.blanks} cell(s) still empty" in obs


def test_random_preset_sets_turns_from_the_grid():
    seen = check.drawn(
        "game:Crosswords-v0-random",
        range(20),
        lambda env: (env.hardcore, env.num_words, env.max_turns - env.blanks),
    )
    assert {spare for *_, spare in seen} == {10} and len(seen) >= 3


@pytest.mark.parametrize(
    "env_id", ["game:Crosswords-v0-easy", "game:Crosswords-v0-hard", "game:Crosswords-v0-random"]
)
def test_solver_wins_every_seed(env_id):
    for env, episode in check.solver_episodes(env_id):
        assert episode.success and episode.turns == len(_cells(env)), episode.seed


def test_clue_bank_has_unique_clues_that_hide_the_answer():
    for bank, (low, high) in ((crosswords_clues.EASY, (3, 7)), (crosswords_clues.HARD, (6, 9))):
        assert len(set(bank.values())) == len(bank)
        for word, clue in bank.items():
            assert low <= len(word) <= high and word.isalpha()
            assert word.lower() not in re.findall(r"[a-z]+", clue.lower()), word
    assert not set(crosswords_clues.EASY) & set(crosswords_clues.HARD)


def test_state_roundtrip():
    env = gem.make("game:Crosswords-v0-hard")
    env.reset(seed=1)
    r, c, ch = _cells(env)[0]
    check.assert_state_roundtrip(env, f"\\boxed{{{r} {c} {ch}}}")
    assert env.placements[0][3] == ACROSS


def test_constructor_rejects_bad_arguments():
    check.assert_rejects(CrosswordsEnv, num_words=0, max_turns=-3)
