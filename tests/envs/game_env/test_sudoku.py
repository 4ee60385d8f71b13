import itertools
import random

import pytest

import gem
from gem.agents import SolverAgent, run_episode
from gem.envs.game_env.sudoku import SudokuEnv, read_grid, solutions, solved_grid

PRESETS = {"game:Sudoku-v0-easy": (4, 10, 15), "game:Sudoku-v0-hard": (9, 50, 50)}
ALL = [*PRESETS, "game:Sudoku-v0-random"]


def _valid_complete(grid):
    n = len(grid)
    b = int(n**0.5)
    units = [grid[r] for r in range(n)] + [[grid[r][c] for r in range(n)] for c in range(n)]
    units += [[grid[r][c] for r in range(br, br + b) for c in range(bc, bc + b)] for br in range(0, n, b) for bc in range(0, n, b)]
    return all(sorted(u) == list(range(1, n + 1)) for u in units)


def _count_4x4_by_brute_force(puzzle):
    """Try every filling of the empty cells (independent of the env's solver)."""
    empty = [(r, c) for r in range(4) for c in range(4) if not puzzle[r][c]]
    count = 0
    for digits in itertools.product(range(1, 5), repeat=len(empty)):
        grid = [row[:] for row in puzzle]
        for (r, c), d in zip(empty, digits):
            grid[r][c] = d
        count += _valid_complete(grid)
    return count


@pytest.mark.parametrize("env_id", list(PRESETS))
def test_presets_and_first_observation(env_id):
    env = gem.make(env_id)
    obs, info = env.reset(seed=0)
    scale, clues, turns = PRESETS[env_id]
    assert (env.scale, env.clues, env.max_turns) == (scale, clues, turns)
    assert f"{turns} turns" in obs and "\\boxed{1 2 3}" in obs and "exactly one solution" in obs
    grid = read_grid(obs)
    assert grid == env.board and len(grid) == scale
    assert sum(v != 0 for row in grid for v in row) >= clues
    assert "Enter your first move" in info["suffix"]


@pytest.mark.parametrize("env_id", ALL)
def test_puzzles_have_exactly_one_solution(env_id):
    env = gem.make(env_id)
    for seed in range(50):
        env.reset(seed=seed)
        assert _valid_complete(env.full_grid)
        assert all(v in (0, env.full_grid[r][c]) for r, row in enumerate(env.board) for c, v in enumerate(row))
        assert solutions(env.board, limit=5) == [env.full_grid]


def test_easy_uniqueness_by_brute_force():
    env = gem.make("game:Sudoku-v0-easy")
    for seed in range(12):  # 4**6 fillings each
        env.reset(seed=seed)
        assert _count_4x4_by_brute_force(env.board) == 1


def test_solutions_finds_every_solution_of_an_open_grid():
    assert len(solutions([[0] * 4 for _ in range(4)], limit=1000)) == 288  # all 4x4 Sudokus


def test_solved_grid_is_valid_and_varied():
    grids = {str(solved_grid(9, random.Random(s))) for s in range(20)}
    assert len(grids) == 20
    assert all(_valid_complete(eval(g)) for g in grids)


def test_right_digit_earns_share_and_board_updates():
    env = gem.make("game:Sudoku-v0-hard")
    obs, _ = env.reset(seed=2)
    r, c = next((r, c) for r in range(9) for c in range(9) if not env.board[r][c])
    digit = env.full_grid[r][c]
    obs, reward, terminated, truncated, _ = env.step(f"I will put \\boxed{{{r + 1}, {c + 1}, {digit}}}")
    assert reward == pytest.approx(1 / env.init_num_empty) and not (terminated or truncated)
    assert read_grid(obs)[r][c] == digit and f"placed {digit}" in obs


def test_illegal_moves_explain_what_went_wrong():
    from gem.envs.game_env.sudoku import _clash

    env = gem.make("game:Sudoku-v0-hard")
    env.reset(seed=2)
    board, solution = env.board, env.full_grid
    given = next((r, c) for r in range(9) for c in range(9) if board[r][c])
    r, c = next((r, c) for r in range(9) for c in range(9) if not board[r][c])
    in_row = next(v for v in board[r] if v)
    # A digit that breaks no rule yet but is not the solution's (exists on most boards).
    wrong = next(
        ((rr, cc, d) for rr in range(9) for cc in range(9) for d in range(1, 10)
         if not board[rr][cc] and d != solution[rr][cc] and not _clash(board, rr, cc, d)),
        None,
    )
    cases = [
        (f"\\boxed{{{given[0] + 1} {given[1] + 1} 1}}", "already holds"),
        (f"\\boxed{{{r + 1} {c + 1} {in_row}}}", "repeats the"),
        ("\\boxed{10 1 1}", "out of range"),
        ("\\boxed{1 1 0}", "out of range"),
    ]
    assert wrong is not None
    cases.append((f"\\boxed{{{wrong[0] + 1} {wrong[1] + 1} {wrong[2]}}}", "no solution"))
    for action, hint in cases:
        obs, reward, terminated, truncated, _ = env.step(action)
        assert "invalid move" in obs and hint in obs, (action, obs)
        assert reward == 0.0 and not terminated and not truncated


@pytest.mark.parametrize("bad", ["\\boxed{1 2}", "\\boxed{a b c}", "1 2 3", "\\boxed{1 2 3 4}", "\\boxed{1.5 2 3}"])
def test_malformed_move_is_format_error(bad):
    env = gem.make("game:Sudoku-v0-easy")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(bad)
    assert reward == -0.1 and terminated and not truncated and info["success"] is False
    assert "could not be read" in obs


@pytest.mark.parametrize("env_id", ALL)
def test_solver_wins_every_seed_and_rewards_sum_to_one(env_id):
    env = gem.make(env_id)
    agent = SolverAgent(env)
    for seed in range(50):
        episode = run_episode(env, agent, seed=seed)
        assert episode.success and episode.total_reward == pytest.approx(1.0)
        assert episode.turns == env.init_num_empty <= env.max_turns


def test_random_preset_and_sampled_actions():
    env = gem.make("game:Sudoku-v0-random")
    sizes = set()
    for seed in range(20):
        env.reset(seed=seed)
        sizes.add((env.scale, env.clues, env.max_turns))
        _, reward, *_ = env.step(env.sample_random_action())
        assert reward != -0.1
    assert sizes == {(4, 10, 15), (9, 50, 50)}


def test_state_roundtrip_and_spawn():
    env = gem.make("game:Sudoku-v0-hard")
    env.reset(seed=5)
    state = env.get_state()
    action = env.sample_random_action()
    first = env.step(action)
    env.set_state(state)
    assert env.step(action)[:4] == first[:4]
    twin = env.spawn(same_state=True)
    assert twin.board == env.board and twin.board is not env.board


@pytest.mark.parametrize(
    "kwargs",
    [dict(scale=5), dict(scale=16), dict(clues=0), dict(clues=81), dict(clues=20, max_turns=30)],
)
def test_bad_arguments_raise(kwargs):
    with pytest.raises(ValueError):
        SudokuEnv(**{"clues": 30, "max_turns": 100, "scale": 9, **kwargs})
