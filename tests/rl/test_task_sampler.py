"""Task samplers (uniform, sequential, learnability per cost) and their wiring into ``gem train``."""

from __future__ import annotations

import csv
import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from gem.rl.task_sampler import (
    TASK_SAMPLERS,
    LearnabilitySampler,
    SequentialSampler,
    UniformSampler,
    episode_cost,
    learnability,
    make_task_sampler,
)

TASKS = ["game:GuessTheNumber-v0-easy", "game:GuessTheNumber-v0-hard", "math:Arithmetic"]


# ------------------------------------------------------------------ the weight
@pytest.mark.parametrize("group_size", [1, 2, 4, 8, 16])
def test_learnability_is_zero_when_every_group_agrees(group_size):
    assert learnability(0.0, group_size) == 0.0
    assert learnability(1.0, group_size) == 0.0


@pytest.mark.parametrize("group_size", [2, 3, 4, 8])
def test_learnability_is_the_chance_of_a_mixed_group_and_peaks_at_one_half(group_size):
    grid = np.linspace(0.0, 1.0, 101)
    values = [learnability(float(p), group_size) for p in grid]
    assert grid[int(np.argmax(values))] == pytest.approx(0.5)
    assert values == pytest.approx(values[::-1])  # symmetric in p and 1 - p
    # against a direct count: the chance that G Bernoulli(p) draws are neither all 1 nor all 0
    rng = np.random.default_rng(0)
    draws = rng.random((200_000, group_size)) < 0.3
    mixed = float(np.mean(draws.any(axis=1) & ~draws.all(axis=1)))
    assert learnability(0.3, group_size) == pytest.approx(mixed, abs=0.005)


def test_learnability_known_values():
    assert learnability(0.5, 2) == pytest.approx(0.5)
    assert learnability(0.5, 4) == pytest.approx(1 - 2 / 16)
    assert learnability(0.1, 4) == pytest.approx(1 - 0.1 ** 4 - 0.9 ** 4)
    assert learnability(0.3, 1) == pytest.approx(0.3 * 0.7)  # a group of one: the outcome's variance


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), "0.5", None])
def test_learnability_rejects_what_is_not_a_probability(bad):
    with pytest.raises(ValueError, match="probability"):
        learnability(bad, 4)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "4"])
def test_group_size_below_one_or_not_an_integer_is_rejected(bad):
    with pytest.raises(ValueError, match="group_size"):
        learnability(0.5, bad)
    with pytest.raises(ValueError, match="group_size"):
        LearnabilitySampler(TASKS, group_size=bad)


def test_weight_is_learnability_over_the_running_mean_cost():
    s = LearnabilitySampler(["cheap", "dear"], seed=0, group_size=4, prior=(1, 1), decay=1.0)
    s.update("cheap", [1, 0, 1, 0], cost=400.0)   # 100 per episode
    s.update("dear", [1, 0, 1, 0], cost=1600.0)   # 400 per episode
    p = 3 / 6  # (2 wins + 1) / (4 + 2)
    assert s.success_rate("cheap") == pytest.approx(p) and s.success_rate("dear") == pytest.approx(p)
    assert s.mean_cost("cheap") == 100.0 and s.mean_cost("dear") == 400.0
    assert s.weight("cheap") == pytest.approx(learnability(p, 4) / 100.0)
    assert s.weight("dear") == pytest.approx(learnability(p, 4) / 400.0)
    probs = s.probabilities()
    eps = s.epsilon
    assert probs["cheap"] == pytest.approx((1 - eps) * 0.8 + eps / 2)  # weights 4 : 1
    assert probs["dear"] == pytest.approx((1 - eps) * 0.2 + eps / 2)
    assert sum(probs.values()) == pytest.approx(1.0)


def test_decay_makes_the_estimate_follow_recent_groups():
    s = LearnabilitySampler(["a"], seed=0, group_size=4, decay=0.5)
    for _ in range(10):
        s.update("a", [0, 0, 0, 0], 10.0)
    for _ in range(10):
        s.update("a", [1, 1, 1, 1], 10.0)
    wins = sum(4 * 0.5 ** k for k in range(10))  # the last group counts fully, each earlier one half as much
    losses = sum(4 * 0.5 ** k for k in range(10, 20))
    assert s.success_rate("a") == pytest.approx((wins + 1) / (wins + losses + 2))
    assert s.success_rate("a") > 0.89  # the early failures are all but forgotten
    never = LearnabilitySampler(["a"], seed=0, group_size=4, decay=1.0)
    for outcome in (0, 1):
        for _ in range(10):
            never.update("a", [outcome] * 4, 10.0)
    assert never.success_rate("a") == pytest.approx(41 / 82)


# ----------------------------------------------------------------- sampling
def test_unseen_tasks_are_explored_before_known_hopeless_ones():
    s = LearnabilitySampler(TASKS, seed=0, group_size=4)
    for _ in range(5):
        s.update(TASKS[0], [0, 0, 0, 0], 100.0)  # never solved
        s.update(TASKS[1], [1, 1, 1, 1], 100.0)  # always solved
    probs = s.probabilities()
    # unseen: p = 1/2 under the prior, the most learnable; 20 failures (decayed: 16.4) leave p = 1/18.4
    assert s.success_rate(TASKS[2]) == 0.5
    hopeless = learnability(1 / (4 * (1 - 0.9 ** 5) / 0.1 + 2), 4)
    assert s.weight(TASKS[0]) == pytest.approx(hopeless / 25.0)  # 100 per group of 4: 25 per episode
    assert probs[TASKS[2]] == pytest.approx(0.95 * 0.875 / (0.875 + 2 * hopeless) + 0.05 / 3)
    assert probs[TASKS[2]] > 3 * max(probs[TASKS[0]], probs[TASKS[1]])
    assert s.mean_cost(TASKS[2]) == pytest.approx(25.0)  # the seen tasks' mean, not 0 or infinity
    draws = s.sample(200)
    assert draws.count(TASKS[2]) > 110
    # the epsilon floor: no task starves
    assert min(probs.values()) >= s.epsilon / len(TASKS) - 1e-12
    assert all(draws.count(t) > 0 for t in TASKS)


def test_learnable_tasks_are_drawn_more_often():
    s = LearnabilitySampler(TASKS, seed=1, group_size=4, epsilon=0.1)
    for _ in range(20):
        s.update(TASKS[0], [1, 0, 0, 1], 50.0)
        s.update(TASKS[1], [0, 0, 0, 0], 50.0)
        s.update(TASKS[2], [1, 1, 1, 1], 50.0)
    draws = s.sample(1000)
    counts = {t: draws.count(t) for t in TASKS}
    assert counts[TASKS[0]] > 700
    assert counts[TASKS[1]] > 10 and counts[TASKS[2]] > 10


def test_all_zero_weights_fall_back_to_uniform():
    s = LearnabilitySampler(["a", "b"], seed=0, group_size=4, epsilon=0.0)
    s._stats["a"].wins = s._stats["b"].wins = 1e300  # estimates of exactly 1: zero weight everywhere
    assert s.probabilities() == {"a": 0.5, "b": 0.5}


def test_sequential_sampler_cycles_in_order_across_calls():
    s = SequentialSampler(TASKS)
    assert s.sample(2) == TASKS[:2]
    assert s.sample(2) == [TASKS[2], TASKS[0]]  # continues where it stopped, every task gets its turn
    assert s.sample(4) == [TASKS[1], TASKS[2], TASKS[0], TASKS[1]]


def test_uniform_sampler_covers_every_task_about_evenly():
    draws = UniformSampler(TASKS, seed=3).sample(3000)
    for t in TASKS:
        assert 850 < draws.count(t) < 1150


@pytest.mark.parametrize("name", TASK_SAMPLERS)
def test_same_seed_same_draws_and_no_global_random_state(name):
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    a = make_task_sampler(name, TASKS, seed=7, group_size=2)
    b = make_task_sampler(name, TASKS, seed=7, group_size=2)
    for _ in range(5):
        assert a.sample(3) == b.sample(3)
        for s in (a, b):
            s.update(TASKS[0], [1, 0], 30.0)
    assert (np.random.get_state()[1] == before).all()
    if name != "sequential":
        c = make_task_sampler(name, TASKS, seed=8, group_size=2)
        assert [c.sample(3) for _ in range(5)] != [make_task_sampler(name, TASKS, seed=7, group_size=2).sample(3)
                                                   for _ in range(5)]


@pytest.mark.parametrize("name", TASK_SAMPLERS)
def test_state_dict_round_trip_resumes_the_exact_sequence(name):
    rng = np.random.default_rng(5)

    def play(sampler, steps):
        drawn = []
        for _ in range(steps):
            tasks = sampler.sample(3)
            drawn.append(tasks)
            for t in tasks:
                sampler.update(t, [float(x) for x in rng.random(4) < 0.4], float(rng.integers(10, 100)))
        return drawn

    whole = make_task_sampler(name, TASKS, seed=11, group_size=4)
    play(whole, 6)
    state = json.loads(json.dumps(whole.state_dict()))  # it survives JSON, as in a checkpoint
    whole_at_6 = make_task_sampler(name, TASKS, seed=0, group_size=4)
    whole_at_6.load_state_dict(state)
    outcomes_state = rng.bit_generator.state
    rest = play(whole, 6)

    rng.bit_generator.state = outcomes_state
    resumed = make_task_sampler(name, TASKS, seed=999, group_size=4)  # another seed: the state decides
    resumed.load_state_dict(state)
    assert resumed.report() == whole_at_6.report()
    assert play(resumed, 6) == rest
    assert resumed.state_dict() == whole.state_dict()


def test_load_state_dict_rejects_another_samplers_state():
    state = LearnabilitySampler(TASKS, seed=0, group_size=4).state_dict()
    with pytest.raises(ValueError, match="'learnability' sampler's; this one is 'uniform'"):
        UniformSampler(TASKS, seed=0, group_size=4).load_state_dict(state)
    with pytest.raises(ValueError, match="tasks"):
        LearnabilitySampler(TASKS[:2], seed=0, group_size=4).load_state_dict(state)
    with pytest.raises(ValueError, match="group size"):
        LearnabilitySampler(TASKS, seed=0, group_size=2).load_state_dict(state)
    broken = dict(state, rng={"bit_generator": "PCG64", "state": "junk"})
    target = LearnabilitySampler(TASKS, seed=0, group_size=4)
    before = target.state_dict()
    with pytest.raises(ValueError, match="Malformed"):
        target.load_state_dict(broken)
    assert target.state_dict() == before  # a failed load changes nothing
    with pytest.raises(ValueError, match="Malformed"):
        target.load_state_dict({**state, "stats": {}})
    bad_counts = {t: dict(v, wins=float("nan")) for t, v in state["stats"].items()}
    for bad in ({"prior": [0, 1]}, {"decay": float("nan")}, {"prior": None}, {"stats": bad_counts}):
        with pytest.raises(ValueError, match="Malformed"):
            target.load_state_dict({**state, **bad})
    assert target.state_dict() == before
    with pytest.raises(ValueError, match="version"):
        target.load_state_dict({**state, "version": 99})


# ------------------------------------------------------------- bad arguments
def test_unknown_sampler_name_lists_the_choices():
    with pytest.raises(ValueError, match="uniform, sequential, learnability"):
        make_task_sampler("greedy", TASKS)


@pytest.mark.parametrize("tasks,match", [([], "non-empty"), ("game:GuessTheNumber-v0", "list"),
                                         (["a", ""], "non-empty"), (["a", "b", "a"], "repeated: a")])
def test_bad_task_lists(tasks, match):
    with pytest.raises(ValueError, match=match):
        UniformSampler(tasks)


@pytest.mark.parametrize("kwargs,match", [({"decay": 0.0}, "decay"), ({"decay": 1.5}, "decay"),
                                          ({"prior": (0, 1)}, "prior"), ({"prior": (1,)}, "prior"),
                                          ({"epsilon": -0.1}, "epsilon"), ({"epsilon": 2}, "epsilon")])
def test_bad_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LearnabilitySampler(TASKS, **kwargs)


def test_bad_updates_and_draws():
    s = LearnabilitySampler(TASKS, seed=0, group_size=2)
    with pytest.raises(KeyError, match="math:Arithmetic"):
        s.update("game:Wordle-v0", [1, 0], 1.0)
    with pytest.raises(ValueError, match="at least one"):
        s.update(TASKS[0], [], 1.0)
    for bad in ([2.0, 0.0], [float("nan"), 1.0], [-1, 0]):
        with pytest.raises(ValueError, match="successes"):
            s.update(TASKS[0], bad, 1.0)
    for bad_cost in (float("nan"), float("inf"), -1.0):
        with pytest.raises(ValueError, match="cost"):
            s.update(TASKS[0], [1, 0], bad_cost)
    for n in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="at least 1"):
            s.sample(n)
    with pytest.raises(ValueError, match="seed"):
        UniformSampler(TASKS, seed="zero")
    assert s.report()[0]["groups"] == 0  # nothing bad was recorded


def test_episode_cost_counts_tokens_or_seconds():
    turns = [SimpleNamespace(prompt_ids=[1] * 10, response_ids=[2] * 3, seconds=0.25),
             SimpleNamespace(prompt_ids=[1] * 20, response_ids=[2] * 5, seconds=0.5)]
    ep = SimpleNamespace(transitions=turns)
    assert episode_cost(ep, "tokens") == 38.0
    assert episode_cost(ep, "seconds") == 0.75
    with pytest.raises(ValueError, match="tokens, seconds"):
        episode_cost(ep, "dollars")
    assert math.isnan(LearnabilitySampler(TASKS).report()[0]["success_rate"])


# ------------------------------------------------------------------ gem train
def _train(tmp_path, name, *extra):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from gem.rl.train import main

    out = tmp_path / name
    code = main(["--model", "tiny", "--env", "game:GuessTheNumber-v0-easy,math:Arithmetic", "--algo", "reinforce",
                 "--num-envs", "4", "--group-size", "2", "--max-new-tokens", "4", "--max-turns", "2", "--quiet",
                 "--threads", "1", "--output-dir", str(out), *extra])
    assert code == 0
    return out


def _task_rows(out):
    return list(csv.DictReader((out / "tasks.csv").open()))


def test_gem_train_with_the_learnability_sampler_writes_and_resumes_its_state(tmp_path):
    out = _train(tmp_path, "first", "--task-sampler", "learnability", "--steps", "3", "--save-every", "2")
    rows = _task_rows(out)
    assert [r["step"] for r in rows] == ["1", "1", "2", "2", "3", "3"]
    assert {r["task"] for r in rows} == {"game:GuessTheNumber-v0-easy", "math:Arithmetic"}
    for step in ("1", "2", "3"):  # two groups per step, each of one task
        assert sum(int(r["groups"]) for r in rows if r["step"] == step) == 2
        assert sum(int(r["episodes"]) for r in rows if r["step"] == step) == 4
    last = [r for r in rows if r["step"] == "3"]
    assert sum(int(r["total_groups"]) for r in last) == 6
    assert sum(float(r["probability"]) for r in last) == pytest.approx(1.0, abs=1e-3)
    assert all(float(r["mean_cost"]) > 1 for r in last)  # tokens per episode, measured
    # the state is saved with every checkpoint and with the final model
    state2 = json.loads((out / "checkpoint-2" / "task_sampler.json").read_text())
    final = json.loads((out / "final" / "task_sampler.json").read_text())
    assert state2["kind"] == final["kind"] == "learnability" and state2["after_step"] == 2
    assert sum(s["groups"] for s in final["stats"].values()) == 6
    assert sum(s["groups"] for s in state2["stats"].values()) == 4
    # `gem train --model <checkpoint>` resumes the sampler: its counts go on from the checkpoint's
    resumed = _train(tmp_path, "resumed", "--model", str(out / "checkpoint-2"), "--task-sampler", "learnability",
                     "--steps", "1", "--save-every", "0")
    again = json.loads((resumed / "final" / "task_sampler.json").read_text())
    assert sum(s["groups"] for s in again["stats"].values()) == 6
    # and it drew what the uninterrupted run drew at step 3 (same state, same generator)
    step3 = {r["task"]: r["groups"] for r in rows if r["step"] == "3"}
    assert {r["task"]: r["groups"] for r in _task_rows(resumed)} == step3


def test_gem_train_sequential_gives_every_env_its_turn_and_default_keeps_the_fixed_assignment(tmp_path):
    seq = _train(tmp_path, "seq", "--task-sampler", "sequential", "--task-cost", "seconds", "--steps", "2",
                 "--num-envs", "2", "--save-every", "0")
    rows = _task_rows(seq)
    played = [(r["step"], r["task"]) for r in rows if r["groups"] != "0"]
    assert played == [("1", "game:GuessTheNumber-v0-easy"), ("2", "math:Arithmetic")]
    assert all(0 < float(r["mean_cost"]) < 30 for r in rows if r["step"] == "2")  # seconds per episode
    # no --task-sampler: group g of every step plays id g mod K, as before; no tasks.csv; a warning
    # names the id that a step with fewer groups than ids never reaches
    fixed = _train(tmp_path, "fixed", "--steps", "1", "--num-envs", "2", "--save-every", "0")
    assert not (fixed / "tasks.csv").exists() and not (fixed / "final" / "task_sampler.json").exists()
    assert "math:Arithmetic never played" in (fixed / "train.log").read_text()
    assert "never played" not in (seq / "train.log").read_text()


def test_gem_train_rejects_an_unknown_task_sampler_or_env(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from gem.rl.train import main

    with pytest.raises(SystemExit):
        main(["--task-sampler", "greedy", "--output-dir", str(tmp_path)])
    assert "learnability" in capsys.readouterr().err
    code = main(["--model", "tiny", "--env", "game:GuessTheNumber-v0-easy,game:GuessTheNumbr-v0", "--task-sampler",
                 "uniform", "--steps", "1", "--num-envs", "2", "--group-size", "1", "--output-dir", str(tmp_path)])
    assert code == 2
    assert "Unknown env id 'game:GuessTheNumbr-v0'. Did you mean" in capsys.readouterr().err
    from gem.rl.train import build_parser, train

    args = build_parser().parse_args(["--output-dir", str(tmp_path)])
    args.task_sampler = "greedy"  # from Python, past argparse's choices
    with pytest.raises(ValueError, match="uniform, sequential, learnability"):
        train(args)


# ----------------------------------------------------------------- env pool
def test_env_pool_lends_the_same_envs_and_builds_only_what_a_mix_needs():
    from gem.rl.collect import EnvPool, Generation, collect_episodes

    easy, arith = "game:GuessTheNumber-v0-easy", "math:Arithmetic"
    pool = EnvPool(seed=3)
    with pytest.raises(KeyError, match="Did you mean"):
        pool.check([easy, "game:GuessTheNumbr-v0"])
    first = pool.vector([easy, easy, arith])
    assert first.env_ids == [easy, easy, arith] and first.envs[0] is not first.envs[1]
    second = pool.vector([arith, easy])
    assert second.envs[0] is first.envs[2] and second.envs[1] is first.envs[0]  # lent again, not rebuilt
    third = pool.vector([easy, easy, easy])
    assert third.envs[:2] == first.envs[:2] and third.envs[2] not in first.envs  # built on first need

    class Scripted:  # answers every prompt with the same guess
        def generate(self, prompts):
            return [Generation([1, 2, 3], [4, 5], [-0.1, -0.2], "\\boxed{5}") for _ in prompts]

    episodes = collect_episodes(second, Scripted(), seeds=[0, 0], max_turns=3)
    assert [ep.env_id for ep in episodes] == [arith, easy]
    assert all(t.seconds > 0 for ep in episodes for t in ep.transitions)
    assert episode_cost(episodes[1], "tokens") == 5.0 * len(episodes[1].transitions)
    pool.close()
