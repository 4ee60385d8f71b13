"""Reward levels live on the instance and every env takes them as kwargs: what ``gem.make`` is given
is what the env pays, in every family."""

import json

import pytest

import gem
from gem.agents.base import run_episode
from gem.core import REWARD_LEVELS
from gem.utils import constants
from tests.conftest import needs_extra
from tests.envs.hub_fixtures import serve_hub

LEVELS = {
    "success_reward": 2.0,
    "fail_reward": -0.5,
    "internal_step_reward": 0.25,
    "invalid_action_reward": -1.0,
    "format_error_reward": -0.75,
}
DEFAULTS = {
    "success_reward": constants.SUCCESS_REWARD,
    "fail_reward": constants.FAIL_REWARD,
    "internal_step_reward": constants.INTERNAL_STEP_REWARD,
    "invalid_action_reward": constants.INVALID_ACTION_REWARD,
    "format_error_reward": constants.FORMAT_ERROR_REWARD,
}


def test_the_base_env_holds_the_levels_with_the_class_defaults(count_env_cls):
    env = count_env_cls()
    assert env.reward_levels() == DEFAULTS and set(REWARD_LEVELS) == set(DEFAULTS)
    env.set_reward_levels(success_reward=3)
    assert env.success_reward == 3.0 and type(env).success_reward == constants.SUCCESS_REWARD
    assert count_env_cls().success_reward == constants.SUCCESS_REWARD  # per instance, never the class
    with pytest.raises(ValueError, match="Unknown reward level.*'win_reward'.*valid: success_reward, fail_reward"):
        env.set_reward_levels(win_reward=1.0)
    with pytest.raises(ValueError, match="success_reward must be a number, got 'high'"):
        env.set_reward_levels(success_reward="high")


@pytest.mark.parametrize("env_id", gem.list_envs())
def test_every_id_takes_the_levels_as_kwargs_and_keeps_them_in_copies(env_id, monkeypatch):
    serve_hub(monkeypatch)
    try:
        env = gem.make(env_id, **LEVELS)
    except gem.errors.DependencyNotInstalled:
        needs_extra(gem.spec(env_id).extra or "all")
        raise
    try:
        assert env.reward_levels() == LEVELS
        assert {k: env.spec.kwargs[k] for k in LEVELS} == LEVELS
        copy = env.spawn()
        assert copy.reward_levels() == LEVELS
        copy.close()
    finally:
        env.close()


def test_guess_the_number_pays_the_levels_it_was_made_with():
    env = gem.make("game:GuessTheNumber-v0", success_reward=2.0, invalid_action_reward=-1.0, format_error_reward=-0.5)
    env.reset(seed=0)
    assert env.step("no guess here")[1] == -0.5
    env.reset(seed=0)
    assert env.step("\\boxed{100000}")[1] == -1.0  # out of range: invalid
    episode = run_episode(env, env.make_solver(), seed=0)
    assert episode.success and episode.rewards[-1] == 2.0


@pytest.mark.parametrize("env_id", ["game:Wordle-v0-easy", "game:Mastermind-v0-easy", "game:Sudoku-v0-easy", "game:Game2048-v0-easy"])
def test_shaped_games_return_the_success_level_in_total(env_id):
    if gem.spec(env_id).extra:
        needs_extra(gem.spec(env_id).extra)
    env = gem.make(env_id, success_reward=3.0)
    solver = env.make_solver()
    episode = run_episode(env, solver, seed=1)
    if not episode.success:
        pytest.fail(f"{env_id}'s solver did not win seed 1")
    assert episode.total_reward == pytest.approx(3.0)


def test_math_pays_success_fail_and_format_levels():
    needs_extra("math")  # the wrong answer goes to math-verify
    env = gem.make("math:Arithmetic", **LEVELS)
    env.reset(seed=0)
    assert env.step(f"\\boxed{{{env.unwrapped.answer}}}")[1] == 2.0
    env.reset(seed=0)
    assert env.step("\\boxed{not a number at all}")[1] == -0.5
    env.reset(seed=0)
    assert env.step("no box")[1] == -0.75
    plain = gem.make("math:Arithmetic")  # the default: a reply with no answer earns the fail level
    plain.reset(seed=0)
    assert plain.step("no box")[1] == constants.FAIL_REWARD


def test_qa_logic_and_code_pay_their_levels(tmp_path):
    path = tmp_path / "qa.jsonl"
    path.write_text(json.dumps({"question": "Capital of France?", "answer": ["Paris"]}) + "\n")
    qa = gem.make("qa:NaturalQuestions", dataset_name=str(path), question_key="question", success_reward=5.0)
    qa.reset(seed=0)
    assert qa.step("<answer>Paris</answer>")[1] == 5.0
    logic = gem.make("logic:RuleReasoning-d0", success_reward=4.0, fail_reward=-2.0)
    logic.reset(seed=0)
    right = logic.unwrapped.answer
    wrong = next(label for label in ("True", "False", "Unknown") if label != right)
    assert logic.step(f"\\boxed{{{right}}}")[1] == 4.0
    logic.reset(seed=0)
    assert logic.step(f"\\boxed{{{wrong}}}")[1] == -2.0
    code = gem.make("code:Bundled", success_reward=1.5)
    code.reset(seed=0)
    assert code.step(code.unwrapped.reference_solution())[1] == 1.5


def test_tictactoe_pays_its_levels_and_a_draw_half_way():
    env = gem.make("multi:TicTacToe-v0-vs-scripted", success_reward=3.0, fail_reward=1.0, format_error_reward=-4.0)
    episode = run_episode(env, env.make_solver(), seed=0)  # perfect play on both sides: a draw
    assert episode.rewards[-1] == 2.0
    env.reset(seed=0)
    assert env.step("gibberish")[1] == -4.0


def test_wikigame_pays_its_own_levels_by_default_and_takes_overrides():
    from gem.envs.game_env.wikigame.rewards import WikiGameReward

    env = gem.make("game:WikiGame-v0-easy")
    assert env.internal_step_reward == WikiGameReward.internal_step_reward
    env = gem.make("game:WikiGame-v0-easy", format_error_reward=-3.0)
    env.reset(seed=0)
    assert env.step("no box")[1] == -3.0


def test_an_ungraded_answer_pays_what_a_wrong_one_pays_at_any_levels(monkeypatch):
    """With fail_reward=-1 a grader failure must not pay more than a wrong answer (it would be farmed)."""
    from gem.utils import math_grader

    monkeypatch.delenv("GEM_STRICT_INFRA", raising=False)
    env = gem.make("math:Arithmetic", fail_reward=-1.0)
    env.reset(seed=0)
    _, wrong, *_ = env.step(f"\\boxed{{{env.unwrapped.answer}1}}")

    def crash(self, pred, gold, timeout=None):
        raise MemoryError("grader crashed")

    monkeypatch.setattr(math_grader.MathGrader, "judge", crash)
    env.reset(seed=0)
    _, ungraded, _, _, info = env.step(f"\\boxed{{{env.unwrapped.answer}}}")
    assert info["correct"] is None and info["grading"] == "error"
    assert ungraded == wrong == -1.0


def test_an_invalid_last_guess_never_pays_more_than_a_wrong_one():
    env = gem.make("game:GuessTheNumber-v0-easy", fail_reward=-1.0, invalid_action_reward=0.0, closeness_reward=False)
    env.reset(seed=0)
    game = env.unwrapped
    wrong = [n for n in range(game.min_number, game.max_number + 1) if n != game.target]
    for guess in wrong[: game.max_turns - 1]:
        _, _, terminated, _, _ = env.step(f"\\boxed{{{guess}}}")
        assert not terminated
    _, last, _, truncated, _ = env.step("\\boxed{999}")  # out of range on the last turn
    assert truncated and last == -1.0
