"""Rollout collection with scripted policies on GuessTheNumber."""

from __future__ import annotations

import re

import pytest

import gem
from gem.rl.rollout import Generation, assign_advantages, collect_episodes, episode_stats


class FixedPolicy:
    """Always answers the same text; token ids are the characters' code points."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.calls: list[list[str]] = []

    def generate(self, prompts):
        self.calls.append(list(prompts))
        return [Generation([1, 2], [ord(c) for c in self.text], [-0.5] * len(self.text), self.text) for _ in prompts]


class BisectPolicy:
    """Binary search over 1..50 from every hint in the observation (the ``concat`` wrapper gives the
    whole history, so the policy needs no state)."""

    def generate(self, prompts):
        out = []
        for p in prompts:
            low, high = 1, 50
            for kind, g in re.findall(r"is (higher|lower) than (\d+)", p):
                if kind == "higher":
                    low = max(low, int(g) + 1)
                else:
                    high = min(high, int(g) - 1)
            guess = (low + high) // 2
            out.append(Generation([0], [guess], [-1.0], f"\\boxed{{{guess}}}"))
        return out


def test_format_errors_end_after_one_turn():
    vec = gem.make_vec("game:GuessTheNumber-v0-easy", num_envs=3)
    eps = collect_episodes(vec, FixedPolicy("no idea"), seeds=[7, 7, 8])
    assert [len(e) for e in eps] == [1, 1, 1]
    assert all(e.transitions[0].reward == pytest.approx(-0.1) and e.terminated and e.success is False for e in eps)
    assert [e.group for e in eps] == [7, 7, 8]
    t = eps[0].transitions[0]
    assert t.prompt_ids == [1, 2] and t.response_ids == [ord(c) for c in "no idea"] and t.turn == 0
    assert "Guess The Number" in t.observation


def test_repeated_guess_runs_to_the_turn_limit():
    vec = gem.make_vec("game:GuessTheNumber-v0-easy", num_envs=2)
    # seeds whose target is not 5, so guessing 5 four times plays all 4 turns
    seeds = [s for s in range(100) if _target("game:GuessTheNumber-v0-easy", s) != 5][:2]
    eps = collect_episodes(vec, FixedPolicy("\\boxed{5}"), seeds=seeds)
    for e in eps:
        assert len(e) == 4 and e.truncated and not e.terminated
        assert e.rewards == [0.0, 0.0, 0.0, 0.0]  # a repeated guess is invalid: no closeness reward
    assign_advantages(eps, "reinforce", gamma=0.5)
    assert [t.ret for t in eps[0].transitions] == [0.0] * 4


def _target(env_id: str, seed: int) -> int:
    env = gem.make(env_id)
    env.reset(seed=seed)
    return env.unwrapped.target if hasattr(env, "unwrapped") else env.target


def test_bisection_wins_and_returns_are_discounted():
    from gem.wrappers.wrapper_factory import get_wrapper_fns

    vec = gem.make_vec("game:GuessTheNumber-v0-hard", num_envs=4, wrappers=get_wrapper_fns("concat"))
    eps = collect_episodes(vec, BisectPolicy(), seeds=[1, 2, 3, 4])
    assert all(e.success and e.terminated for e in eps)
    assert episode_stats(eps)["success_rate"] == 1.0
    assign_advantages(eps, "reinforce", gamma=0.9)
    for e in eps:
        n = len(e)
        assert e.rewards[-1] == 1.0 and sum(e.rewards) == 1.0
        assert [t.ret for t in e.transitions] == pytest.approx([0.9 ** (n - 1 - k) for k in range(n)])
    assign_advantages(eps, "rebn", gamma=0.9)
    advs = [t.advantage for e in eps for t in e.transitions]
    assert abs(sum(advs)) < 1e-6
    assign_advantages(eps, "grpo")  # every episode won: no signal within a group
    assert all(t.advantage == 0.0 for e in eps for t in e.transitions)


def test_ppo_needs_values_and_checks_arguments():
    vec = gem.make_vec("game:GuessTheNumber-v0-easy", num_envs=2)
    eps = collect_episodes(vec, FixedPolicy("x"), seeds=[0, 1])
    with pytest.raises(ValueError, match="value"):
        assign_advantages(eps, "ppo")
    with pytest.raises(ValueError, match="seeds"):
        collect_episodes(vec, FixedPolicy("x"), seeds=[0])
    with pytest.raises(ValueError, match="max_turns"):
        collect_episodes(vec, FixedPolicy("x"), max_turns=0)


def test_max_turns_cap_marks_truncated():
    vec = gem.make_vec("game:GuessTheNumber-v0", num_envs=1)
    seeds = [s for s in range(100) if _target("game:GuessTheNumber-v0", s) != 5][:1]
    policy = FixedPolicy("\\boxed{5}")
    eps = collect_episodes(vec, policy, seeds=seeds, max_turns=3)
    assert len(eps[0]) == 3 and eps[0].truncated
    assert len(policy.calls) == 3


def test_rollout_shares_the_loop_bookkeeping_infra_failures_and_success_level():
    """collect_episodes decides success and records infrastructure failures as gem.rollout does."""
    from gem.core import Env

    class Flaky(Env):
        env_id = "test:Flaky"

        def reset(self, seed=None):
            super().reset(seed)
            return "say ok", {"suffix": "Answer ok."}

        def step(self, action):
            info = {"infra_error": {"component": "grader", "type": "TimeoutError", "message": "slow"}}
            return "done", 0.0, True, False, info

    class Pays(Flaky):
        def step(self, action):  # no success/correct key: the task reward at the success level decides
            return "done", float(self.success_reward), True, False, {}

    from gem.vector import SyncVectorEnv

    vec = SyncVectorEnv(["test:Flaky", "test:Pays"], [Flaky, Pays])
    policy = FixedPolicy("ok")
    flaky, pays = collect_episodes(vec, policy, max_turns=3)
    assert flaky.infra_error == {"component": "grader", "type": "TimeoutError", "message": "slow"}
    assert flaky.success is False and pays.success is True and pays.infra_error is None
    assert all(p.endswith("Answer ok.") for p in policy.calls[0])
