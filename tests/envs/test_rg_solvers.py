"""rg:rush_hour and rg:boxnet: reference answers computed by solvers; answers refused before scoring."""

import json

import pytest

import gem
from tests.conftest import needs_extra

needs_extra("rg")
from gem.envs import _rg_solvers  # noqa: E402

SEEDS = range(30)


def _leaks(value: str, obs: str, info: dict) -> bool:
    return value in obs or value in json.dumps(info, default=str)


@pytest.mark.parametrize("name", ["rush_hour", "boxnet"])
def test_reference_solution_succeeds_and_is_never_shown(name):
    env = gem.make(f"rg:{name}")
    for seed in SEEDS:
        obs, info = env.reset(seed=seed)
        assert env.answer is None  # reasoning-gym keeps no gold answer for these tasks
        reply = env.reference_solution()
        assert reply is not None and reply.startswith("\\boxed{"), (seed, reply)
        inner = reply[len("\\boxed{"):-1]
        assert not _leaks(inner, obs, info), seed
        _, reward, terminated, _, end_info = env.step(reply)
        assert terminated and reward == 1.0 and end_info["score"] == 1.0, (seed, reply, end_info)


def test_rush_hour_answer_is_shortest_and_a_cut_one_fails():
    env = gem.make("rg:rush_hour")
    for seed in range(10):
        env.reset(seed=seed)
        moves = env.reference_solution()[len("\\boxed{"):-1].split()
        # breadth-first: never longer than the puzzle database's minimum (which counts the same moves)
        assert len(moves) <= env.item["metadata"]["min_moves"], (seed, moves)
        env.reset(seed=seed)
        _, reward, _, _, info = env.step("\\boxed{" + " ".join(moves[:-1]) + "}")
        assert reward == 0.0 and not info["correct"]


def test_rush_hour_refuses_sprays_run_together_lists_and_blocked_moves():
    env = gem.make("rg:rush_hour")
    env.reset(seed=0)
    gold = env.reference_solution()[len("\\boxed{"):-1]
    cut = gold.rsplit(None, 1)[0]
    letters = sorted({m[0] for m in gold.split()})
    tries = [f"{c}{s}{k}" for _ in range(3) for c in letters for s in "+-" for k in (1, 2, 3)]
    spray = " ".join(tries) + " A+4"
    for reply, why in [
        (f"{cut}{gold}", "not a list of moves"),  # two lists glued together, as reasoning-gym reads them
        (f"{cut} or {gold}", "not a list of moves"),
        (f"{gold} {gold}", "after the red car has left"),
        (spray, "blocked"),
        ("Z+1", "names no car"),
    ]:
        env.reset(seed=0)
        _, reward, _, _, info = env.step("\\boxed{" + reply + "}")
        assert reward == 0.0 and why in info.get("refused", ""), (reply, info)
    # the same moves separated by commas, quoted, are still read
    env.reset(seed=0)
    assert env.step("\\boxed{'" + ", ".join(gold.split()) + "'}")[1] == 1.0


def test_boxnet_malformed_plans_are_wrong_answers_not_grader_failures():
    env = gem.make("rg:boxnet")
    for reply in ["17", '{"a": 1}', '[{"Agent[0.5, 0.5]": 3}]', "[[1]]",
                  '[{"Agent[0.5, 0.5]": "move(box_red, square[0.5, 9.5])"}]']:
        env.reset(seed=0)
        _, reward, _, _, info = env.step("\\boxed{" + reply + "}")
        assert reward == 0.0 and info["correct"] is False and info.get("refused"), (reply, info)
        assert "infra_error" not in info


def test_boxnet_plan_has_one_action_per_step_and_only_adjacent_moves():
    env = gem.make("rg:boxnet")
    for seed in SEEDS:
        env.reset(seed=seed)
        plan = json.loads(env.reference_solution()[len("\\boxed{"):-1])
        assert all(len(step) == 1 for step in plan)
        state = env.item["metadata"]["initial_state"]
        boxes = sum(str(t).startswith("box_") for ts in state.values() for t in ts)
        assert sum("target_" in a for step in plan for a in step.values()) == boxes


def test_solvers_give_up_honestly():
    assert _rg_solvers.reference_answer("rush_hour", {"metadata": {"board_config": "too short"}}) is None
    assert _rg_solvers.reference_answer("basic_arithmetic", {"metadata": {}}) is None
    # a box whose colour has no target cannot be matched
    assert _rg_solvers.solve_boxnet({"metadata": {"initial_state": {"0.5_0.5": ["box_red"]}}}) is None
    # the red car walled in: no solution
    walled = "oooooo" "oooooo" "AAxooo" "oooooo" "oooooo" "oooooo"
    assert _rg_solvers.solve_rush_hour({"metadata": {"board_config": walled}}) is None


def test_only_tasks_without_gold_have_a_reference_solution():
    assert callable(gem.make("rg:rush_hour").reference_solution)
    assert gem.make("rg:basic_arithmetic").reference_solution is None  # its gold is env.answer


def test_gold_agent_plays_the_reference():
    from gem.agents.gold import gold_reply

    for env_id in ("rg:rush_hour", "rg:boxnet", "rg:basic_arithmetic"):  # the last through its answer
        env = gem.make(env_id)
        env.reset(seed=3)
        assert env.step(gold_reply(env))[1] == 1.0, env_id
