"""rg: envs: lazy import, every registered task, reasoning-gym's scoring, reproducible items."""

import re
import subprocess
import sys

import pytest

import gem
from gem.errors import InfrastructureError
from gem.utils.env_checker import check_env
from tests.conftest import needs_extra

needs_extra("rg")
import reasoning_gym as rg  # noqa: E402

# A spread of task kinds (arithmetic, algorithmic, logic, games, cognition, graphs).
SAMPLE = [
    "basic_arithmetic", "chain_sum", "leg_counting", "word_sorting", "spell_backward", "gcd",
    "propositional_logic", "sudoku", "maze", "number_sorting", "base_conversion", "family_relationships",
    "composite",
]


def test_import_gem_does_not_import_reasoning_gym():
    code = "import sys, gem; gem.spec('game:GuessTheNumber-v0'); print('reasoning_gym' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_every_registered_dataset_has_an_id():
    ids = gem.list_envs("rg")
    # (the order of list_envs puts ids already made first: compare as sets, without duplicates)
    from gem.envs._reasoning_gym_registry import PRESETS

    assert len(ids) == len(set(ids))
    assert set(ids) == {f"rg:{n}" for n in rg.factory.DATASETS} | {f"rg:{n}" for n in PRESETS}
    assert all(task in rg.factory.DATASETS for task, _, _ in PRESETS.values())
    assert gem.spec("rg:basic_arithmetic").kwargs == {"name": "basic_arithmetic", "size": 500, "seed": 42}
    with pytest.raises(KeyError):
        gem.spec("rg:not_a_task")


@pytest.mark.parametrize("name", SAMPLE)
def test_sample_scores_gold_answer_one_and_wrong_zero(name):
    env = gem.make(f"rg:{name}")
    check_env(env)
    scored = 0
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        # the task's metadata holds its solution: not at reset, only once the episode has ended
        assert obs == env.unwrapped.item["question"] and "metadata" not in info
        gold = env.unwrapped.item["answer"]
        if gold is None:  # tasks with many valid answers keep none; reasoning-gym checks validity
            continue
        _, reward, terminated, truncated, info = env.step(f"so the answer is \\boxed{{{gold}}}")
        assert (reward, terminated, truncated, info["correct"], info["score"]) == (1.0, True, True, True, 1.0)
        assert info["metadata"] == env.unwrapped.item.get("metadata", {})
        scored += 1
        env.reset(seed=seed)
        _, reward, _, _, info = env.step("\\boxed{certainly not the answer 8h2k}")
        assert reward == 0.0 and info["correct"] is False
        env.reset(seed=seed)
        assert env.step(gold)[1] == 0.0  # no \boxed{}: scores 0, as the original GEM
    assert scored or name == "propositional_logic"


def test_items_come_from_reasoning_gym_by_index():
    env = gem.make("rg:chain_sum")
    env.reset(idx=7)
    expected = rg.create_dataset("chain_sum", size=500, seed=42)[7]
    assert env.unwrapped.item["question"] == expected["question"]
    # make's seed picks the item set (as the original GEM's constructor seed did)
    other = gem.make("rg:chain_sum", seed=1)
    other.reset(idx=7)
    assert other.unwrapped.seed == 1
    assert other.unwrapped.item["question"] == rg.create_dataset("chain_sum", size=500, seed=1)[7]["question"]


def test_reset_walks_the_stream_in_order_and_eval_repeats():
    env = gem.make("rg:chain_sum", size=3, seed=7)
    stream = rg.create_dataset("chain_sum", size=6, seed=7)
    assert [env.reset()[0] for _ in range(6)] == [stream[i]["question"] for i in range(6)]
    assert env.unwrapped.epoch == 1
    # the second pass scores against its own items
    env.reset(idx=0)
    first = env.unwrapped.item["answer"]
    assert env.step(f"\\boxed{{{first}}}")[1] == 1.0
    ev = gem.make("rg:chain_sum", size=3, seed=7, eval=True)
    assert [ev.reset()[0] for _ in range(6)] == [stream[i % 3]["question"] for i in range(6)]


def test_format_error_penalty_is_opt_in():
    env = gem.make("rg:chain_sum", use_format_error_reward=True)
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step("no box here")
    assert (reward, terminated, truncated, info["correct"]) == (-0.1, True, True, False)


def test_huge_size_costs_no_memory():
    import tracemalloc

    gem.make("rg:leg_counting").reset()  # imports done outside the measurement
    tracemalloc.start()
    try:
        env = gem.make("rg:leg_counting", seed=10, size=10**9)
        env.reset()
        env.reset(seed=3)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000
    assert 0 <= env.unwrapped.idx < 10**9


def test_seed_is_reported_and_spawned_children_get_their_own():
    env = gem.make("rg:simple_equations", seed=5)
    assert env.seed == 5
    children = [env.spawn(seed=s) for s in (11, 12)]
    assert [c.seed for c in children] == [11, 12]
    assert children[0].reset(idx=0)[0] != children[1].reset(idx=0)[0]
    assert env.spawn().seed == 42  # the spec's seed, as the original GEM's spawn()


def test_partial_credit_passes_the_score_through():
    env = gem.make("rg:basic_arithmetic", partial_credit=True)
    env.reset(seed=0)
    _, reward, _, _, info = env.step("\\boxed{999999999}")
    assert reward == info["score"] and 0.0 <= reward < 1.0


@pytest.mark.parametrize("score, paid", [(float("nan"), 0.0), (0.4, 0.4), (-3.0, 0.0)])
def test_partial_credit_pays_only_a_score_in_zero_to_one(score, paid, monkeypatch):
    # a scorer that computes NaN (or a score outside [0, 1]) from an answer paid 1.0 before
    env = gem.make("rg:basic_arithmetic", partial_credit=True, success_reward=2.0)
    env.reset(seed=0)
    monkeypatch.setattr(env.unwrapped._ds, "score_answer", lambda answer, entry: score)
    _, reward, _, _, info = env.step("\\boxed{7}")
    assert reward == pytest.approx(2.0 * paid) and info["correct"] is (score >= 1.0) and info["grading"] == "ok"
    assert info["score"] == score or (score != score and info["score"] != info["score"])  # the scorer's own value


def test_bad_arguments_name_valid_choices():
    from gem.envs.reasoning_gym import ReasoningGymEnv

    with pytest.raises(ValueError, match="Did you mean.*basic_arithmetic"):
        ReasoningGymEnv(name="basic_arithmetik")
    with pytest.raises(ValueError, match="size"):
        ReasoningGymEnv(name="chain_sum", size=0)


def test_composite_mixes_named_tasks():
    env = gem.make("rg:composite", config={"datasets": ["chain_sum", {"name": "gcd", "weight": 2}]})
    sources = set()
    for seed in range(12):
        env.reset(seed=seed)
        sources.add(env.unwrapped.item["metadata"]["source_dataset"])
        assert env.step(f"\\boxed{{{env.unwrapped.item['answer']}}}")[1] == 1.0
    assert sources == {"chain_sum", "gcd"}


def test_state_restored_across_passes_keeps_items_consistent():
    env = gem.make("rg:chain_sum", size=2, seed=3)
    env.reset()
    state = env.unwrapped.get_state()  # in the first pass
    first_pass = [env.reset()[0] for _ in range(4)]  # walks into later passes
    env.unwrapped.set_state(state)
    assert [env.reset()[0] for _ in range(4)] == first_pass


def test_a_scorer_that_raises_is_an_infrastructure_failure_not_a_wrong_answer(monkeypatch):
    env = gem.make("rg:basic_arithmetic")
    env.reset(seed=0)
    dataset = env.unwrapped._ds

    def broken(answer, entry):
        raise KeyError("metadata")

    monkeypatch.setattr(dataset, "score_answer", broken)
    with pytest.raises(InfrastructureError, match=r"rg:scorer failed: KeyError: 'metadata'"):
        env.step("\\boxed{1}")
    monkeypatch.delenv("GEM_STRICT_INFRA")
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("\\boxed{1}")
    assert (reward, terminated, info["correct"], info["grading"], info["score"]) == (0.0, True, None, "error", None)
    assert info["infra_error"] == {"component": "rg:scorer", "type": "KeyError", "message": "'metadata'"}
    assert info["grading_error"] == {"component": "rg:scorer", "reason": "KeyError: 'metadata'"}


def test_easy_preset_is_the_task_with_a_smaller_config():
    """rg:basic_arithmetic-easy: two terms from 0 to 10, + or -, and -0.1 for a reply without a box."""
    env = gem.make("rg:basic_arithmetic-easy")
    for seed in range(20):
        obs, _ = env.reset(seed=seed)
        m = re.fullmatch(r"Calculate (\d+) ([+-]) (\d+)\.", obs.strip())
        assert m, obs
        a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
        assert a <= 10 and b <= 10
        gold = a + b if op == "+" else a - b
        assert env.step(f"\\boxed{{{gold}}}")[1] == 1.0
        env.reset(seed=seed)
        assert env.step(f"\\boxed{{{gold + 1}}}")[1] == 0.0
        env.reset(seed=seed)
        assert env.step(str(gold))[1] == pytest.approx(-0.1)  # no box: the format error
