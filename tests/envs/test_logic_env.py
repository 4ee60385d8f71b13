"""Logic envs: the offline rule-reasoning generator (checked by an independent prover) and RuleTaker."""

import json

import pytest

import gem
from gem.data.rule_reasoning import LABELS, forward_chain, make_item
from gem.envs.logic_env import RuleReasoningEnv
from gem.errors import ResourceUnavailable
from gem.utils.env_checker import check_env
from tests.conftest import needs_extra

OFFLINE_IDS = [f"logic:RuleReasoning-d{d}" for d in range(6)]


def _backward_prove(goal, facts, rules, depth):
    """An independent check: can ``goal`` be proved with at most ``depth`` rule applications?"""
    if goal in facts:
        return True
    if depth == 0:
        return False
    person, attr, holds = goal
    for conditions, (c_attr, c_holds), only in rules:
        if (c_attr, c_holds) != (attr, holds) or (only and only != person):
            continue
        if all(_backward_prove((person, a, h), facts, rules, depth - 1) for a, h in conditions):
            return True
    return False


@pytest.mark.parametrize("depth", range(6))
def test_items_have_the_stated_depth_and_label(depth):
    counts = {label: 0 for label in LABELS}
    for index in range(40):
        item = make_item(index, depth)
        label = item["answer"]
        assert item["depth"] == depth
        counts[label] += 1
        facts = {tuple(f) for f in item["facts"]}
        rules = [(tuple(tuple(c) for c in conds), tuple(concl), person) for conds, concl, person in item["rules"]]
        person, attr, holds = item["query"]
        assert item["statement"] == f"{person} is {'' if holds else 'not '}{attr}."
        assert all(f"{p} is {'' if h else 'not '}{a}." in item["theory"] for p, a, h in facts)
        pos, neg = (person, attr, holds), (person, attr, not holds)
        if label == "True":
            assert _backward_prove(pos, facts, rules, depth)
            assert depth == 0 or not _backward_prove(pos, facts, rules, depth - 1)
        elif label == "False":
            assert _backward_prove(neg, facts, rules, depth)
            assert depth == 0 or not _backward_prove(neg, facts, rules, depth - 1)
        else:
            assert not _backward_prove(pos, facts, rules, 10)
            assert not _backward_prove(neg, facts, rules, 10)
    assert all(counts.values()), counts


def test_forward_chaining_depths():
    facts = [("Bob", "red", True)]
    rules = [((("red", True),), ("big", True), None), ((("big", True),), ("kind", False), None)]
    assert forward_chain(facts, rules, ["Bob", "Anne"]) == {
        ("Bob", "red", True): 0, ("Bob", "big", True): 1, ("Bob", "kind", False): 2,
    }


@pytest.mark.parametrize("env_id", OFFLINE_IDS)
def test_offline_ids_reward_the_true_answer(env_id):
    env = gem.make(env_id)
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        gold = env.unwrapped.answer
        assert "Statement:" in obs and info["depth"] == env.unwrapped.depth
        _, reward, terminated, _, info = env.step(f"\\boxed{{{gold.lower()}}}")
        assert (reward, terminated, info["correct"]) == (1.0, True, True)
        env.reset(seed=seed)
        wrong = next(label for label in LABELS if label != gold)
        assert env.step(f"\\boxed{{{wrong}}}")[1] == 0.0
        env.reset(seed=seed)
        assert env.step(gold)[1] == 0.0  # no answer: 0 (-0.1 with use_format_error_reward=True)


def test_items_are_reproducible_per_index():
    assert make_item(5, 3, seed=7) == make_item(5, 3, seed=7)
    assert make_item(5, 3, seed=7) != make_item(6, 3, seed=7)
    env = RuleReasoningEnv(depth=1, size=10, seed=7)
    env.reset(idx=4)
    assert env.unwrapped.item == make_item(4, 1, seed=7)


def test_bad_arguments():
    with pytest.raises(ValueError, match="depth must be an int from 0 to 5"):
        RuleReasoningEnv(depth=6)
    with pytest.raises(ValueError, match="size"):
        RuleReasoningEnv(size=0)


@pytest.mark.parametrize("depth", [0, 1, 2, 3, 4, 5])
def test_ruletaker_ids_fail_offline_and_load_locally(depth, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    needs_extra("qa")  # datasets reads the hub
    env_id = f"logic:RuleTaker-d{depth}"
    with pytest.raises(ResourceUnavailable, match=f"RuleTaker-d{depth}-70k"):
        gem.make(env_id)
    path = tmp_path / "rt.jsonl"
    path.write_text(json.dumps({"question": "Bob is red. Is Bob red?", "answer": "True"}) + "\n")
    env = gem.make(env_id, dataset_name=str(path))
    check_env(env)
    env.reset(seed=0)
    assert env.step("\\boxed{True}")[1] == 1.0
    env.reset(seed=0)
    assert env.step("\\boxed{False}")[1] == 0.0
    env.reset(seed=0)
    assert env.step("<answer>True</answer>")[1] == 0.0  # RuleTaker reads the box only, as GEM
