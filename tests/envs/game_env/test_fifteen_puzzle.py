import pytest

import gem
from gem.agents import SolverAgent, run_episode
from gem.envs.game_env.fifteen_puzzle import FifteenPuzzleEnv, goal_board, is_solvable, read_board, solve

PRESETS = {"game:FifteenPuzzle-v0-easy": (2, 10), "game:FifteenPuzzle-v0-hard": (4, 50)}
ALL = [*PRESETS, "game:FifteenPuzzle-v0-random"]


@pytest.mark.parametrize("env_id", list(PRESETS))
def test_presets_and_first_observation(env_id):
    env = gem.make(env_id)
    obs, info = env.reset(seed=0)
    rows, turns = PRESETS[env_id]
    assert (env.num_rows, env.max_turns) == (rows, turns)
    assert f"{turns} turns" in obs and "\\boxed{up}" in obs and "bottom-right" in obs
    board = read_board(obs)
    assert sorted(board) == list(range(rows * rows)) and board != goal_board(rows)
    assert "__" in info["suffix"]


def test_move_semantics_follow_gem():
    env = FifteenPuzzleEnv(num_rows=3, max_turns=20)
    env.reset(seed=0)
    env.tiles = goal_board(3)  # gap bottom-right
    obs, reward, terminated, _, _ = env.step("\\boxed{right}")  # the tile left of the gap moves right
    assert env.tiles[-2:] == [0, 8] and "slid tile 8 right" in obs and reward == 0.0 and not terminated
    assert read_board(obs) == env.tiles
    obs, reward, terminated, truncated, info = env.step("\\boxed{LEFT}")
    assert terminated and not truncated and reward == 1.0 and info["success"] is True


def test_illegal_move_explains_and_continues():
    env = FifteenPuzzleEnv(num_rows=3, max_turns=20)
    env.reset(seed=0)
    env.tiles = [1, 2, 3, 4, 5, 6, 7, 0, 8]  # gap on the bottom row
    obs, reward, terminated, truncated, _ = env.step("\\boxed{up}")  # no tile below the gap
    assert "invalid move" in obs and "no tile to slide up" in obs
    assert reward == 0.0 and not terminated and not truncated


@pytest.mark.parametrize("bad", ["\\boxed{north}", "up", "\\boxed{}", "\\boxed{up down}"])
def test_malformed_move_is_format_error(bad):
    env = gem.make("game:FifteenPuzzle-v0-hard")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(bad)
    assert reward == -0.1 and terminated and not truncated and info["success"] is False
    assert "could not be read" in obs


def test_turn_limit_gives_share_of_cells_right():
    env = gem.make("game:FifteenPuzzle-v0-easy")
    env.reset(seed=3)
    for _ in range(10):
        _obs, reward, terminated, truncated, info = env.step(env.sample_random_action())
        if terminated or truncated:
            break
    if truncated:
        right = sum(a == b for a, b in zip(env.tiles, goal_board(2))) / 4
        assert reward == pytest.approx(right) and info["success"] is False


def _check_shortest_solutions(env_id, seeds):
    env = gem.make(env_id)
    for seed in range(seeds):
        obs, _ = env.reset(seed=seed)
        board = read_board(obs)
        assert board != goal_board(env.num_rows)
        assert len(solve(board, env.num_rows)) <= env.scramble_moves <= env.max_turns


@pytest.mark.parametrize("env_id", ALL)
def test_boards_are_solvable_within_the_turn_limit(env_id):
    _check_shortest_solutions(env_id, seeds=8)  # exact A* on 4x4 boards takes ~0.4 s each


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ALL)
def test_boards_are_solvable_within_the_turn_limit_50_seeds(env_id):
    _check_shortest_solutions(env_id, seeds=50)


@pytest.mark.parametrize("env_id", ALL)
def test_solver_wins_every_seed(env_id):
    env = gem.make(env_id)
    agent = SolverAgent(env)
    for seed in range(50):
        episode = run_episode(env, agent, seed=seed)
        assert episode.success and episode.rewards[-1] == 1.0 and episode.turns <= env.max_turns


def test_random_preset_draws_sizes_and_never_crashes():
    env = gem.make("game:FifteenPuzzle-v0-random")
    sizes = set()
    for seed in range(40):
        obs, _ = env.reset(seed=seed)
        sizes.add((env.num_rows, env.max_turns))
        assert f"{env.max_turns} turns" in obs
    assert sizes == {(2, 10), (3, 20), (4, 50)}


def test_same_seed_same_board_and_state_roundtrip():
    env = gem.make("game:FifteenPuzzle-v0-hard")
    first, _ = env.reset(seed=7)
    again, _ = env.spawn().reset(seed=7)
    assert first == again
    state = env.get_state()
    step = env.step("\\boxed{down}")
    env.set_state(state)
    assert env.step("\\boxed{down}")[:4] == step[:4]


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(num_rows=1), dict(num_rows=9), dict(max_turns=0), dict(num_rows=2.5),
        dict(init_algo="shuffle"), dict(mc_rand_moves=0), dict(mc_rand_moves=True),
    ],
)
def test_bad_arguments_raise(kwargs):
    with pytest.raises(ValueError):
        FifteenPuzzleEnv(**{"num_rows": 3, "max_turns": 20, **kwargs})


def test_positional_arguments_follow_gem():
    env = FifteenPuzzleEnv(50, 4)  # GEM's order: max_turns, num_rows
    assert (env.max_turns, env.num_rows) == (50, 4)


def test_is_solvable_matches_reachability_on_2x2():
    from itertools import permutations

    reachable, frontier = {tuple(goal_board(2))}, [tuple(goal_board(2))]
    while frontier:
        board = list(frontier.pop())
        env = FifteenPuzzleEnv(num_rows=2, max_turns=5)
        for move in ("up", "down", "left", "right"):
            env.reset(seed=0)
            env.tiles = list(board)
            env.step(f"\\boxed{{{move}}}")
            if tuple(env.tiles) not in reachable:
                reachable.add(tuple(env.tiles))
                frontier.append(tuple(env.tiles))
    assert len(reachable) == 12
    assert all(is_solvable(list(b), 2) == (b in reachable) for b in permutations(range(4)))
    assert not is_solvable([1, 2, 3, 4, 5, 6, 8, 7, 0], 3) and is_solvable([1, 2, 3, 4, 5, 6, 7, 0, 8], 3)


def test_monte_carlo_walk_length_is_mc_rand_moves():
    env = FifteenPuzzleEnv(max_turns=100, num_rows=4, init_algo="monte_carlo", mc_rand_moves=20)
    other = FifteenPuzzleEnv(max_turns=100, num_rows=4, init_algo="monte_carlo", mc_rand_moves=20)
    for seed in range(3):
        env.reset(seed=seed)
        assert env.scramble_moves == 20 and len(solve(env.tiles, 4)) <= 20
        other.reset(seed=seed)
        assert other.tiles == env.tiles  # seeded per env
    long_walks = FifteenPuzzleEnv(max_turns=10, num_rows=3, mc_rand_moves=60)
    long_walks.reset(seed=0)
    assert long_walks.scramble_moves == 60  # the original's meaning: the walk length, not the turn limit


def test_pure_random_boards_are_uniform_over_solvable_boards():
    env = FifteenPuzzleEnv(max_turns=30, num_rows=2, init_algo="pure_random")
    counts = {}
    for seed in range(1100):
        env.reset(seed=seed)
        assert is_solvable(env.tiles, 2) and env.tiles != goal_board(2)
        counts[tuple(env.tiles)] = counts.get(tuple(env.tiles), 0) + 1
    assert len(counts) == 11 and min(counts.values()) > 60  # 11 unsolved solvable boards, ~100 each
    env3 = FifteenPuzzleEnv(max_turns=40, num_rows=3, init_algo="pure_random")
    env3.reset(seed=4)
    agent = SolverAgent(env3)
    episode = run_episode(env3, agent, seed=4)
    assert episode.success


# ------------------------------------------------ the original GEM's board format and helpers
def test_the_original_board_format_and_helpers():
    """The original's tests set ``env.board`` as rows with None for the gap and call its helpers."""
    env = FifteenPuzzleEnv(max_turns=100, num_rows=4, init_algo="monte_carlo", mc_rand_moves=20)
    env.reset(seed=0)
    goal = [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, None]]
    assert env._generate_goal_board() == env.goal_board == goal and env.goal_parity == 0
    env.board = env._generate_goal_board()
    assert env.board == goal and env.tiles == goal_board(4) and env._get_empty_position() == (3, 3)
    assert env._is_solved() and env._get_soft_reward() == 1.0
    assert env._move("up") is False and env._move("left") is False and env._move("sideways") is False
    env.step(r"\\boxed{down}")  # the raw string of the original's test: \boxed{down} is inside it
    assert env.board == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, None], [13, 14, 15, 12]]
    env.board = [[1, 2, 3, 4], [5, 6, 7, 8], [9, None, 11, 12], [13, 10, 14, 15]]
    for move, gap in (("up", (3, 1)), ("down", (1, 1)), ("left", (2, 2)), ("right", (2, 0))):
        env.board = [[1, 2, 3, 4], [5, 6, 7, 8], [9, None, 11, 12], [13, 10, 14, 15]]
        assert env._move(move) is True and env._get_empty_position() == gap
    assert env._is_solvable([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, None, 15]])
    assert not env._is_solvable([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 15, 14, None]])
    assert not env._is_solvable([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 14, None]])
    assert env._render_board() == env.render() + "\n" and "__" in env._render_board()
    with pytest.raises(ValueError, match="tiles 1 to 15 and one gap"):
        env.board = [[1, 2], [3, None]]


@pytest.mark.parametrize("rows", [2, 3, 4])
def test_the_original_parity_agrees_with_solvability(rows):
    """The original's invariant (order parity + gap distance from the top-left) matches is_solvable."""
    import random

    env = FifteenPuzzleEnv(num_rows=rows)
    env.reset(seed=0)
    rng = random.Random(rows)
    for _ in range(200):
        flat = list(range(rows * rows))
        rng.shuffle(flat)
        env.tiles = flat
        assert (env._get_board_parity(env.board) == env.goal_parity) is is_solvable(flat, rows) is env._is_solvable(env.board)


def test_a_step_before_reset_starts_an_episode_as_the_original():
    """The original reset its games in the constructor; a step before reset plays in a fresh episode."""
    env = FifteenPuzzleEnv(num_rows=4, max_turns=100, mc_rand_moves=20)
    obs, reward, terminated, truncated, info = env.step(env.sample_random_action())
    assert env.turn_count == 1 and "At turn 1" in obs  # played in the episode the step opened
    env.reset()
    assert env.turn_count == 0
