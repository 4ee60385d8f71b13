"""What the original GEM's own test suite relies on, reproduced here without its files.

``tests/compat/run_original_suite.py`` runs the original's tests unchanged when a copy of them is at
hand; CI has no network, so each behaviour those tests needed is proved here on its own: the
FifteenPuzzle board and helpers, a step before ``reset`` in the games the original reset in their
constructors, the debug helper its game test imports, and the chat-template wrappers fed a reply
that the env could not parse (its tool-episode tests).
"""

from __future__ import annotations

import io
import random
import sys
from copy import deepcopy
from functools import partial
from pathlib import Path

import pytest

import gem
from gem.envs.game_env.fifteen_puzzle import FifteenPuzzleEnv
from gem.tools.tool_env_wrapper import ToolEnvWrapper
from gem.wrappers.wrapper_factory import WRAPPER_FACTORY
from tests.conftest import needs_env
from tests.wrappers.fake_tools import EchoTool


# ------------------------------------------------------------------ the original's fifteen tests
def classic_puzzle() -> FifteenPuzzleEnv:
    return FifteenPuzzleEnv(max_turns=100, num_rows=4, init_algo="monte_carlo", mc_rand_moves=20)


def fix_state(env, board, steps=0):
    """As the original's test does it: reset, then overwrite the board and the turn count."""
    env.reset()
    env.board = deepcopy(board)
    env.blank_pos = env._get_empty_position()
    env.turn_count = steps


def test_fifteen_transitions_as_the_original_tests_them():
    env = classic_puzzle()
    fix_state(env, env._generate_goal_board())
    assert env.board == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, None]]
    assert env._get_empty_position() == (3, 3)
    env.step(r"\\boxed{down}")
    assert env.board == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, None], [13, 14, 15, 12]]
    fix_state(env, env._generate_goal_board())
    env.step(r"\\boxed{right}")
    assert env.board == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, None, 15]]
    fix_state(env, env._generate_goal_board())
    assert not env._move("up") and not env._move("left")
    start = [[1, 2, 3, 4], [5, 6, 7, 8], [9, None, 11, 12], [13, 10, 14, 15]]
    for move, (dr, dc) in (("up", (1, 0)), ("down", (-1, 0)), ("left", (0, 1)), ("right", (0, -1))):
        env.reset()
        env.board = deepcopy(start)
        assert env._move(move) and env._get_empty_position() == (2 + dr, 1 + dc)


def test_fifteen_solvability_and_a_solution_replayed_as_the_original():
    env = classic_puzzle()
    assert env._is_solvable([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, None, 15]])
    assert not env._is_solvable([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 15, 14, None]])
    env.reset(seed=4)
    board = deepcopy(env.board)
    from gem.envs.game_env.fifteen_puzzle import solve

    moves = solve(env.tiles, 4)
    verifier = classic_puzzle()
    fix_state(verifier, board, steps=0)
    for move in moves:
        verifier.step(f"\\boxed{{{move}}}")
    assert verifier._is_solved() and verifier.board == verifier._generate_goal_board()


ORIGINAL_RESET_IN_CONSTRUCTOR = [
    "game:Crosswords-v0-easy", "game:FifteenPuzzle-v0-easy", "game:Game2048-v0-easy", "game:GuessTheNumber-v0",
    "game:Hangman-v0-easy", "game:Mastermind-v0-easy", "game:Minesweeper-v0-easy", "game:Sokoban-v0-easy",
    "game:Sudoku-v0-easy", "game:TowerofHanoi-v0-easy",
]


@pytest.mark.parametrize("env_id", ORIGINAL_RESET_IN_CONSTRUCTOR)
def test_a_step_before_reset_plays_in_a_fresh_episode(env_id):
    """The original's games reset in their constructor, so its tests step a new env at once."""
    needs_env(env_id)
    env = gem.make(env_id, seed=3)
    action = env.sample_random_action()  # sampling before reset starts the episode too
    obs, reward, terminated, truncated, info = env.step(action)
    assert isinstance(obs, str) and isinstance(reward, float) and env.turn_count == 1
    twin = gem.make(env_id, seed=3)  # the same seed gives the same episode, stepped first or reset first
    twin.reset()
    assert twin.step(action)[:4] == (obs, reward, terminated, truncated)
    env.reset()
    assert env.turn_count == 0


def test_a_step_before_reset_still_raises_where_the_original_had_no_episode():
    from gem.errors import ResetNeeded

    with pytest.raises(ResetNeeded, match="before reset"):
        gem.make("math:Arithmetic").step("\\boxed{1}")


def test_a_step_before_reset_raises_in_strict_mode():
    from gem.core import strict_step
    from gem.errors import ResetNeeded

    with strict_step(), pytest.raises(ResetNeeded, match="before reset"):
        gem.make("game:GuessTheNumber-v0").step("\\boxed{1}")


# ------------------------------------------------------------------ the original's game test
def test_run_and_print_episode_with_random_selection_steps_subsets():
    """The original's test_game imports this name and steps a random subset of a vector env."""
    from gem.utils.debug import run_and_print_episode_with_random_selection, run_and_print_episode_with_selective_step

    assert run_and_print_episode_with_random_selection is run_and_print_episode_with_selective_step
    vec = gem.make_vec(["game:GuessTheNumber-v0-easy", "game:Sokoban-v0-easy", "game:Game2048-v0-easy"],
                       wrappers=[WRAPPER_FACTORY["concat"]], max_turns=3, async_mode=True)
    out = io.StringIO()
    seen: list[dict] = []
    real_step = vec.step

    def step(actions):
        seen.append(dict(actions))
        return real_step(actions)

    vec.step = step
    run_and_print_episode_with_random_selection(
        vec, lambda _: [vec.envs[i].env.sample_random_action() for i in range(3)], ignore_done=True, max_steps=6,
        file=out, seed=0,
    )
    vec.close()
    assert len(seen) == 6 and all(s and set(s) <= {0, 1, 2} for s in seen)
    assert any(len(s) < 3 for s in seen)  # subsets, not always every env
    assert out.getvalue().count("reward") == 6 and "----TIME:" in out.getvalue()


# ------------------------------------------------- the original's tool-episode tests with chat templates
class JoiningTokenizer:
    """A template that joins strings with ``+`` (as Qwen's and Search-R1's): ``None`` content raises."""

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=False):
        text = "".join("<|im_start|>" + m["role"] + "\n" + m["content"] + "<|im_end|>\n" for m in messages)
        return text + ("<|im_start|>assistant\n" if add_generation_prompt else "")


TEST_ACTIONS = [
    "<echo>what is the capital</echo> ...",
    "I cannot find it.",  # no tool call, no answer: the env cannot parse it (parsed_action=None)
    "<answer>Paris</answer>",
    "\\boxed{Paris}",
]


@pytest.mark.parametrize("wrapper", ["concat_chat", "concat_chat_on_reset"])
@pytest.mark.parametrize("env_id", ["qa:FictionalSearch", "math:Arithmetic", "code:Bundled", "logic:RuleReasoning-d0"])
def test_tool_episodes_with_a_chat_template_as_the_original_runs_them(env_id, wrapper):
    """ToolEnvWrapper, then a chat-template wrapper, driven by random actions (the original's
    test_episode), single env and vector env: no reply crashes the template."""
    rng = random.Random(0)
    for episode in range(6):
        env = WRAPPER_FACTORY[wrapper](ToolEnvWrapper(gem.make(env_id), tools=[EchoTool()], max_tool_uses=3),
                                       tokenizer=JoiningTokenizer())
        env.reset(seed=episode)
        for _ in range(5):
            action = rng.choice(TEST_ACTIONS)
            obs, _, terminated, truncated, _ = env.step(action)
            if action == "I cannot find it." or "<echo>" in action:  # unparsed: as written; a call: as cut
                assert f"<|im_start|>assistant\n{action.split('</echo>')[0]}" in obs
            if terminated or truncated:
                break
    vec = gem.make_vec([env_id] * 2, wrappers=[partial(ToolEnvWrapper, tools=[EchoTool()], max_tool_uses=3),
                                               partial(WRAPPER_FACTORY[wrapper], tokenizer=JoiningTokenizer())])
    vec.reset(seed=0)
    for _ in range(4):
        vec.step(["I cannot find it.", rng.choice(TEST_ACTIONS)])
    vec.close()


# ------------------------------------------------------------------ the runner itself
def test_the_runner_reports_passes_failures_and_import_errors(tmp_path, monkeypatch, capsys):
    """run_original_suite.py on a stand-in for the original's tests/: one unit passes, one fails, one
    file does not import; the report and the exit status say so."""
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        import run_original_suite as runner
    finally:
        sys.path.pop(0)
    original = tmp_path / "original"
    (original / "tests" / "test_env").mkdir(parents=True)
    (original / "tests" / "__init__.py").write_text("")
    (original / "tests" / "test_env" / "__init__.py").write_text("")
    (original / "tests" / "test_env" / "test_ok.py").write_text(
        "import gem\n\ndef test_make():\n    assert gem.make('game:GuessTheNumber-v0').reset(seed=0)[0]\n\n"
        "def test_wrong():\n    assert 1 == 2\n"
    )
    (original / "tests" / "test_env" / "test_broken.py").write_text("from gem import no_such_name\n")
    (original / "tests" / "test_env" / "checks.py").write_text("def check():\n    pass\n")
    monkeypatch.setattr(runner, "PYTEST_UNITS", ["tests/test_env/test_ok.py", "tests/test_env/test_broken.py"])
    monkeypatch.setattr(runner, "CALL_UNITS", [("tests.test_env.checks", "check")])
    monkeypatch.setattr(runner, "NEEDS_312", set())
    status = runner.main([str(original), "--json", str(tmp_path / "r.json")])
    printed = capsys.readouterr().out
    assert status == 1
    assert "PASSED   tests/test_env/test_ok.py::test_make" in printed
    assert "FAILED   tests/test_env/test_ok.py::test_wrong" in printed
    assert "FAILED   tests/test_env/test_broken.py" in printed and "no_such_name" in printed
    assert "PASSED   tests/test_env/checks.py::check" in printed
    assert "offline units: 2 passed, 2 failed, 0 not run" in printed
