"""The original GEM's attribute names on the envs and MCPTool, which gem.compat's class decorators
add: they are defined in gem/compat only, no compat class is a base of a main class, and they read
and act as the original's did."""

from __future__ import annotations

import importlib
import inspect
import itertools
import random
import sys

import pytest

import gem
from gem.compat.fifteen_puzzle import FifteenPuzzleNames
from gem.envs.game_env.fifteen_puzzle import INIT_ALGOS, FifteenPuzzleEnv, goal_board, is_solvable

FIFTEEN_NAMES = (
    "greatest_num", "board", "goal_board", "goal_parity", "_generate_goal_board",
    "_get_empty_position", "_has_correct_tiles", "_get_board_parity", "_is_solvable", "_move", "_is_solved",
    "_render_board", "_get_soft_reward",
)


def load(path: str) -> type:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("table, main, names", [
    ("gem.compat.fifteen_puzzle:FifteenPuzzleNames", "gem.envs.game_env.fifteen_puzzle:FifteenPuzzleEnv", FIFTEEN_NAMES),
    ("gem.compat.reasoning_gym:ReasoningGymNames", "gem.envs.reasoning_gym:ReasoningGymEnv", ("ds", "dataset", "data")),
    ("gem.compat.math_env:MathEnvNames", "gem.envs.math_env:MathEnv", ("check_correct",)),
    ("gem.compat.math_env:MathEnvNames", "gem.envs.math_visual_env:MathVisualEnv", ("check_correct",)),
    ("gem.compat.qa_env:QaEnvNames", "gem.envs.qa_env:QaEnv", ("check_correct",)),
    ("gem.compat.mcp_tool:MCPToolNames", "gem.tools.mcp_tool:MCPTool",
     ("get_available_tools", "_get_server_names", "_is_multi_server")),
])
def test_the_original_names_are_gem_compat_s_and_no_compat_class_is_a_base(table, main, names):
    if "reasoning_gym:" in main:
        pytest.importorskip("reasoning_gym", reason="rg:* needs the rg extra")
    table_cls, cls = load(table), load(main)
    for klass in cls.__mro__:  # only main classes (and Python's) among the bases
        assert not klass.__module__.startswith("gem.compat"), klass
    source = inspect.getsource(sys.modules[cls.__module__])
    for name in names:
        assert inspect.getattr_static(cls, name) is vars(table_cls)[name], name
        assert f"    def {name}(" not in source, name  # no method of that name in the main module
    # VALID_INITIALIZATION_ALGOS: set on the class by the decorator, from its init_algo parameter
    assert "VALID_INITIALIZATION_ALGOS" not in inspect.getsource(sys.modules[FifteenPuzzleEnv.__module__])


def test_a_table_never_replaces_a_name_the_class_defines():
    from gem.compat.attach import add_names

    class Own:
        def board(self):
            return "mine"

    with pytest.raises(TypeError, match="Own defines board itself"):
        add_names(Own, FifteenPuzzleNames)


def test_verify_fn_at_the_original_path_is_gem_compat_s():
    import gem.compat.math_env
    import gem.envs.math_env

    assert gem.envs.math_env.verify_fn is gem.compat.math_env.verify_fn
    assert gem.envs.math_env.verify_fn("\\boxed{7}", "7") == ({"formatted": True}, 1)


# ------------------------------------------------------------------------- FifteenPuzzle
def puzzle(n: int = 3, **kwargs) -> FifteenPuzzleEnv:
    env = FifteenPuzzleEnv(num_rows=n, max_turns=50, **kwargs)
    env.reset(seed=1)
    return env


def test_fifteen_valid_initialization_algos_is_the_original_list():
    assert FifteenPuzzleEnv.VALID_INITIALIZATION_ALGOS == ["monte_carlo", "pure_random"] == list(INIT_ALGOS)
    assert type(FifteenPuzzleEnv.VALID_INITIALIZATION_ALGOS) is list
    assert puzzle().VALID_INITIALIZATION_ALGOS == ["monte_carlo", "pure_random"]
    with pytest.raises(ValueError, match="monte_carlo, pure_random"):
        FifteenPuzzleEnv(init_algo="spiral")


def test_fifteen_greatest_num_follows_the_board_size_also_when_drawn_per_episode():
    assert [puzzle(n).greatest_num for n in (2, 3, 4)] == [3, 8, 15]
    env = FifteenPuzzleEnv(num_rows=None, max_turns=None)
    sizes = set()
    for seed in range(12):
        env.reset(seed=seed)
        assert env.greatest_num == env.num_rows ** 2 - 1 == max(env.tiles)
        sizes.add(env.num_rows)
    assert len(sizes) > 1


def test_fifteen_board_is_rows_with_none_for_the_gap_and_a_copy():
    env = puzzle(3)
    rows = env.board
    assert len(rows) == 3 and all(len(r) == 3 for r in rows)
    assert [c for r in rows for c in r] == [None if v == 0 else v for v in env.tiles]
    rows[0][0] = "x"
    assert env.board != rows  # changing the copy leaves the env's board alone
    assert env.goal_board == env._generate_goal_board() == [[1, 2, 3], [4, 5, 6], [7, 8, None]]


def test_fifteen_board_assignment_takes_rows_or_a_flat_list_and_refuses_non_boards():
    env = puzzle(2)
    env.board = [[3, 1], [None, 2]]
    assert env.tiles == [3, 1, 0, 2] and env._get_empty_position() == (1, 0)
    env.board = [[1, 2], [0, 3]]  # 0 for the gap, as the flat board
    assert env.tiles == [1, 2, 0, 3]
    env.board = [2, 0, 1, 3]
    assert env.board == [[2, None], [1, 3]] and env._get_empty_position() == (0, 1)
    for bad in ([[1, 2], [2, None]], [[1, 2, 3], [None]] + [[4]], [["a", 1], [2, None]], None, 5):
        with pytest.raises(ValueError, match="board"):
            env.board = bad
    assert env.tiles == [2, 0, 1, 3]


def test_fifteen_parity_is_kept_by_every_slide_and_flipped_by_a_swap():
    env = puzzle(4)
    assert env.goal_parity == env._get_board_parity(env.goal_board) == 0
    rng = random.Random(0)
    for _ in range(60):
        env._move(rng.choice(["up", "down", "left", "right"]))
        assert env._get_board_parity(env.board) == env.goal_parity
    cells = [v for v in env.tiles]
    i, j = [k for k, v in enumerate(cells) if v][:2]
    cells[i], cells[j] = cells[j], cells[i]
    swapped = [[None if v == 0 else v for v in cells[r * 4:(r + 1) * 4]] for r in range(4)]
    assert env._get_board_parity(swapped) != env.goal_parity and not env._is_solvable(swapped)


def test_fifteen_is_solvable_agrees_with_the_solver_on_every_small_board():
    for n, boards in ((2, itertools.permutations(range(4))), (3, (random.Random(n).sample(range(9), 9) for _ in range(3000)))):
        env = puzzle(n)
        for flat in boards:
            rows = [[None if v == 0 else v for v in flat[r * n:(r + 1) * n]] for r in range(n)]
            assert env._is_solvable(rows) == is_solvable(list(flat), n), flat
    env = puzzle(2)
    assert not env._has_correct_tiles([[1, 2], [3, 0]]) and not env._is_solvable([[1, 2], [3, 0]])
    assert not env._is_solvable([[1, 2], [3, 3]]) and not env._is_solvable([[1, 2], [3, 4]])


def test_fifteen_move_slides_like_a_step_and_refuses_what_cannot_move():
    env = puzzle(3)
    env.board = env.goal_board
    assert not env._move("up") and not env._move("left")  # no tile below or right of the gap
    for junk in (None, 3, ["down"], "DOWN", "diagonal"):
        assert env._move(junk) is False
    assert env.tiles == goal_board(3) and env._is_solved()
    assert env._move("down") and env.board == [[1, 2, 3], [4, 5, None], [7, 8, 6]]
    assert not env._is_solved()
    twin = puzzle(3)
    twin.board = env.goal_board
    obs = twin.step("\\boxed{down}")[0]
    assert twin.tiles == env.tiles and env._render_board() in obs


def test_fifteen_render_board_and_soft_reward_are_what_the_episode_shows_and_pays():
    env = FifteenPuzzleEnv(num_rows=2, max_turns=1)
    env.reset(seed=0)
    env.board = [[1, 2], [None, 3]]
    assert env._render_board() == " 1  2\n__  3\n"
    assert env._get_soft_reward() == 0.5  # two of four cells right
    _, reward, terminated, truncated, _ = env.step("\\boxed{down}")  # the gap moves up: 1 of 4 right
    assert (terminated, truncated) == (False, True) and reward == env._get_soft_reward() == 0.25
    env.board = env.goal_board
    assert env._get_soft_reward() == 1.0 and env._is_solved()


# ----------------------------------------------------------------------------- ReasoningGym
def test_rg_ds_dataset_and_data_follow_the_walk_as_the_original():
    rg = pytest.importorskip("reasoning_gym")
    from gem.envs.reasoning_gym import ReasoningGymEnv

    assert ReasoningGymEnv.ds is ReasoningGymEnv.dataset  # one name for the other
    env = gem.make("rg:leg_counting", size=2, seed=7)
    u = env.unwrapped
    seen = []
    for i in range(5):
        obs, _ = env.reset()
        assert u.ds is u.dataset and u.data == u.item and u.data["question"] == obs
        assert u.ds.score_answer(answer=u.data["answer"], entry=u.data) == 1.0
        assert u.ds.score_answer(answer="no answer", entry=u.data) < 1.0
        seen.append(u.dataset)
        # the original's walk: pass p is the set seeded seed + p * size, items in order
        assert obs == rg.create_dataset("leg_counting", size=2, seed=7 + (i // 2) * 2)[i % 2]["question"]
    assert seen[0] is seen[1] and seen[1] is not seen[2] and seen[2] is seen[3] and seen[3] is not seen[4]
    with pytest.raises(AttributeError):
        u.ds = None  # read-only: the env's own state decides which dataset scores
