"""Async collection (gem.rl.async_collect): the same episodes as sync collection, slots refilled as
episodes finish, bounded staleness with importance weights, and ``gem train --collect async``."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import gem
from gem.core import Env
from gem.envs.registration import registry
from gem.rl.async_collect import AsyncCollector, EpisodeRequest, requests_for
from gem.rl.collect import EnvPool, Generation, collect_episodes, sampling_seed

ENV_ID = "test:AsyncTurns-v0"
REPO = Path(__file__).resolve().parents[2]


class TurnsEnv(Env):
    """An episode of ``seed % 20 + 1`` turns; each turn pays 0.1 per (action length mod 3), so the
    policy's tokens decide the rewards and there is a learning signal."""

    def __init__(self, seed: int | None = None) -> None:
        self.length = self.turn = 0

    def reset(self, seed: int | None = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        self.length, self.turn = (seed or 0) % 20 + 1, 0
        return f"Say something. {self.length} turns to go.", {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self.turn += 1
        reward = 0.1 * (len(action) % 3)
        return (f"You said {len(action)} characters. Turn {self.turn + 1}.", reward, self.turn >= self.length, False,
                {})

    def sample_random_action(self) -> str:
        return "hi"


@pytest.fixture(scope="module", autouse=True)
def turns_env():
    gem.register(ENV_ID, TurnsEnv, override=True)
    yield
    registry.pop(ENV_ID, None)


class Scripted:
    """Answers ``"ok"``; token ids are code points, log-probs -0.5. Records each batch's size."""

    def __init__(self) -> None:
        self.batches: list[int] = []

    def generate(self, prompts):
        self.batches.append(len(prompts))
        return [Generation([1], [111, 107], [-0.5, -0.5], "ok") for _ in prompts]


def _async(policy, seeds, slots, batch_size=None, staleness=0, group_size=1, run_seed=None, **kw):
    pool = EnvPool()
    groups = requests_for([ENV_ID] * len(seeds), seeds, run_seed=run_seed, group_size=group_size)
    return AsyncCollector(pool, policy, groups, batch_size=batch_size or len(seeds), slots=slots,
                          staleness=staleness, **kw), pool


# ------------------------------------------------------------------ identical episodes
@pytest.mark.parametrize("sampler", ["prefix", "plain"])
def test_async_plays_the_same_episodes_as_sync_token_for_token(sampler):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from gem.rl.hf import HFPolicy, build_tiny_model
    from gem.utils.tiny_tokenizer import get_tiny_tokenizer

    tok = get_tiny_tokenizer()
    policy = HFPolicy(build_tiny_model(tok, seed=0), tok, max_new_tokens=4, sampler=sampler)
    seeds = [3, 0, 5, 1, 7, 2, 0, 4]  # 4, 1, 6, 2, 8, 3, 1, 5 turns
    keys = [sampling_seed(11, i) for i in range(len(seeds))]
    vec = gem.make_vec(ENV_ID, num_envs=4)
    sync = collect_episodes(vec, policy, seeds=seeds[:4], sample_seeds=keys[:4], max_turns=20)
    sync += collect_episodes(vec, policy, seeds=seeds[4:], sample_seeds=keys[4:], max_turns=20)
    vec.close()
    collector, pool = _async(policy, seeds, slots=3, run_seed=11, max_turns=20)
    with collector:
        got = sorted(collector.collect(), key=lambda ep: ep.env_index)
    pool.close()
    assert collector.stats["refills"] >= 3  # three slots for eight episodes: the batches were not the sync ones
    assert [len(ep) for ep in got] == [s % 20 + 1 for s in seeds] == [len(ep) for ep in sync]
    for a, b in zip(sync, got):
        assert a.rewards == b.rewards and a.group == b.group and a.terminated and b.terminated
        for s, t in zip(a.transitions, b.transitions):
            assert (s.prompt_ids, s.response_ids, s.action) == (t.prompt_ids, t.response_ids, t.action)
            assert s.logprobs == pytest.approx(t.logprobs, abs=1e-5)  # batched float32 may differ in the last bits
    # the per-episode streams matter: another run seed gives other tokens
    collector, pool = _async(policy, seeds, slots=3, run_seed=12, max_turns=20)
    with collector:
        other = sorted(collector.collect(), key=lambda ep: ep.env_index)
    pool.close()
    assert [t.response_ids for ep in other for t in ep.transitions] != [t.response_ids for ep in got for t in ep.transitions]


def test_per_row_generators_make_a_row_independent_of_its_batch():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from gem.rl.hf import HFPolicy, build_tiny_model
    from gem.utils.tiny_tokenizer import get_tiny_tokenizer

    tok = get_tiny_tokenizer()
    for sampler in ("plain", "prefix", "static"):
        policy = HFPolicy(build_tiny_model(tok, seed=0), tok, max_new_tokens=6, sampler=sampler)
        alone = policy.generate(["a short prompt"], seeds=[42])[0]
        batched = policy.generate(["another, much longer prompt than the first", "a short prompt", "x"],
                                  seeds=[1, 42, 2])[1]
        assert alone.response_ids == batched.response_ids, sampler
        with pytest.raises(ValueError, match="seeds"):
            policy.generate(["a", "b"], seeds=[1])
    state = torch.random.get_rng_state()
    HFPolicy(build_tiny_model(tok, seed=0), tok, max_new_tokens=3).generate(["a"], seeds=[5])
    assert torch.equal(state, torch.random.get_rng_state())  # global random state untouched


# ------------------------------------------------------------------ continuous batching
def test_finished_episodes_leave_and_new_ones_start_in_their_slots():
    policy = Scripted()
    seeds = [4, 0, 0, 0, 0, 4]  # 5, 1, 1, 1, 1, 5 turns
    collector, pool = _async(policy, seeds, slots=2)
    with collector:
        episodes = collector.collect()
    pool.close()
    # the long first episode did not hold its batch: four short ones came and went beside it
    assert [ep.env_index for ep in episodes] == [1, 2, 3, 4, 0, 5]
    assert collector.stats["max_in_flight"] == 2 and max(policy.batches) == 2
    assert collector.stats["refills"] >= 4 and collector.stats["finished"] == 6
    assert sum(policy.batches) == sum(len(ep) for ep in episodes) == 14
    # sync collection of the same episodes in batches of two needs a generation per turn of each batch's longest
    assert len(policy.batches) < 5 + 1 + 5


def test_groups_are_returned_whole_and_batches_have_the_quota():
    collector, pool = _async(Scripted(), [0, 0, 3, 3, 1, 1, 0, 0], slots=4, batch_size=4, group_size=2)
    with collector:
        first = collector.collect()
        with pytest.raises(RuntimeError, match="policy_updated"):  # staleness 0 admits one batch per version
            collector.collect()
        collector.policy_updated()
        second = collector.collect()
    pool.close()
    assert len(first) == len(second) == 4
    for batch in (first, second):
        assert batch[0].group == batch[1].group and batch[2].group == batch[3].group
    assert sorted(ep.env_index for ep in first + second) == list(range(8))


# ------------------------------------------------------------------ staleness
def test_staleness_zero_carries_nothing_over_and_never_mixes_versions():
    seeds = [19, 0, 1, 2, 5, 0, 3, 9, 0, 0, 1, 1]
    collector, pool = _async(Scripted(), seeds, slots=4, batch_size=4, staleness=0)
    with collector:
        for _ in range(3):
            batch = collector.collect()
            assert len(batch) == 4 and collector.in_flight == 0
            assert {t.version for ep in batch for t in ep.transitions} == {collector.version}
            assert collector.policy_updated() == 0
    pool.close()
    assert collector.stats["dropped"] == 0 and collector.stats["started"] == 12


def test_staleness_k_bounds_carry_overs_and_drops_what_is_too_old():
    seeds = [19, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2] * 2
    collector, pool = _async(Scripted(), seeds, slots=4, batch_size=2, staleness=1)
    mixed = 0
    with collector:
        for _ in range(8):
            batch = collector.collect()
            if not batch:
                break
            versions = [t.version for ep in batch for t in ep.transitions]
            assert collector.version - min(versions) <= 1  # no turn more than K versions old
            mixed += sum(1 for ep in batch if len({t.version for t in ep.transitions}) > 1)
            collector.policy_updated()
    pool.close()
    assert mixed >= 1  # episodes carried over into the next version
    assert collector.stats["dropped"] >= 1  # the 20-turn episode outlived the bound


def test_importance_weights_match_a_hand_computed_case():
    torch = pytest.importorskip("torch")
    from gem.rl.losses import importance_weights, ppo_loss, reinforce_loss

    logp = torch.tensor([[-1.0, -2.0, -3.0]])
    behaviour = torch.tensor([[-1.5, -1.0, -9.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    w = importance_weights(logp, behaviour, mask, cap=2.0)
    assert w.tolist()[0] == pytest.approx([math.exp(0.5), math.exp(-1.0), 0.0])
    w = importance_weights(logp, behaviour, mask, cap=1.5)
    assert w.tolist()[0] == pytest.approx([1.5, math.exp(-1.0), 0.0])
    # REINFORCE: -(w1 * A * lp1 + w2 * A * lp2) / 2 with A = 2
    loss = reinforce_loss(logp, torch.tensor([2.0]), mask, weights=w)
    assert float(loss) == pytest.approx(-(1.5 * 2 * -1.0 + math.exp(-1.0) * 2 * -2.0) / 2)
    # decoupled PPO at rho = 1: the same weighted mean of the advantages
    loss, _ = ppo_loss(logp, logp, torch.tensor([2.0]), mask, 0.2, weights=w)
    assert float(loss) == pytest.approx(-(1.5 * 2 + math.exp(-1.0) * 2) / 2)
    with pytest.raises(ValueError, match="positive"):
        importance_weights(logp, behaviour, mask, cap=0.0)
    with pytest.raises(ValueError, match="shape"):
        reinforce_loss(logp, torch.tensor([2.0]), mask, weights=torch.ones(1, 2))


def test_update_weighs_stale_turns_by_their_behaviour_probability():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from gem.rl.hf import build_tiny_model, sequence_forward
    from gem.rl.rollout import Transition
    from gem.rl.train import build_parser, update
    from gem.utils.tiny_tokenizer import get_tiny_tokenizer

    tok = get_tiny_tokenizer()
    prompt = tok("Say:", add_special_tokens=False)["input_ids"]
    resp = tok(" hello", add_special_tokens=False)["input_ids"]
    args = build_parser().parse_args(["--algo", "reinforce", "--is-cap", "2"])

    def moved(version: int, shift: float) -> float:
        model = build_tiny_model(tok, seed=1)
        with torch.no_grad():
            lp, _, _ = sequence_forward(model, [prompt], [resp], tok.pad_token_id)
        behaviour = [x + shift for x in lp[0, :len(resp)].tolist()]
        t = Transition("o", "a", prompt, resp, behaviour, 1.0, 0, advantage=1.0, version=version)
        before = [p.detach().clone() for p in model.parameters()]
        update(model, None, torch.optim.SGD(model.parameters(), lr=0.1), [t], args, tok.pad_token_id, version=1)
        return sum(float((p.detach() - b).abs().sum()) for p, b in zip(model.parameters(), before))

    on_policy = moved(version=1, shift=0.0)
    assert on_policy > 0
    # a stale turn its sampler found e^30 times likelier than the policy does now weighs ~0
    assert moved(version=0, shift=30.0) < 1e-6 * on_policy
    # a stale turn with the same probabilities weighs 1: the same update as on-policy
    assert moved(version=0, shift=0.0) == pytest.approx(on_policy, rel=1e-4)


# ------------------------------------------------------------------ arguments
def test_collector_rejects_bad_arguments():
    pool = EnvPool()
    groups = requests_for([ENV_ID] * 4, [0, 1, 2, 3])
    for kwargs, word in (({"slots": 0}, "slots"), ({"staleness": -1}, "staleness"), ({"batch_size": 0}, "batch_size"),
                         ({"min_batch": 9}, "min_batch"), ({"max_turns": 0}, "max_turns")):
        args = {"batch_size": 4, "slots": 2, **kwargs}
        with pytest.raises(ValueError, match=word):
            AsyncCollector(pool, Scripted(), groups, **args)
    with AsyncCollector(pool, Scripted(), requests_for([ENV_ID] * 4, [0] * 4, group_size=4), batch_size=4,
                        slots=2) as c, pytest.raises(ValueError, match="does not fit 2 slots"):
        c.collect()
    seeded = [[EpisodeRequest(ENV_ID, 0, 0, sample_seed=5)]]
    with AsyncCollector(pool, Scripted(), seeded, batch_size=1, slots=1) as c, pytest.raises(ValueError, match="seeds="):
        c.collect()
    with pytest.raises(ValueError, match="seeds="):
        collect_episodes(gem.make_vec(ENV_ID, num_envs=1), Scripted(), seeds=[0], sample_seeds=[1])
    pool.close()


# ------------------------------------------------------------------ gem train
@pytest.mark.parametrize("staleness", [0, 1])
def test_gem_train_collects_async(tmp_path, staleness):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from gem.rl.train import main

    out = tmp_path / f"k{staleness}"
    code = main(["--model", "tiny", "--env", ENV_ID, "--algo", "reinforce", "--collect", "async", "--staleness",
                 str(staleness), "--steps", "3", "--num-envs", "4", "--group-size", "2", "--async-slots", "4",
                 "--max-new-tokens", "3", "--max-turns", "6", "--lr", "1e-3", "--save-every", "0", "--quiet",
                 "--output-dir", str(out)])
    assert code == 0
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    assert [r["step"] for r in rows] == ["1", "2", "3"]
    assert all(int(r["transitions"]) >= 4 and math.isfinite(float(r["mean_return"])) for r in rows)
    if staleness == 0:
        assert all(r["stale_transitions"] == "0" and r["dropped_episodes"] == "0" for r in rows)
    else:  # 20-turn caps of 6 with four slots and batches of four: unfinished episodes carry over
        assert sum(int(r["stale_transitions"]) for r in rows) > 0


def test_gem_train_rejects_bad_async_flags(tmp_path):
    from gem.rl.train import main

    base = ["--steps", "1", "--num-envs", "2", "--group-size", "2", "--output-dir", str(tmp_path)]
    with pytest.raises(SystemExit, match="--staleness needs --collect async"):
        main([*base, "--staleness", "1"])
    with pytest.raises(SystemExit, match="--staleness must be 0 or more"):
        main([*base, "--collect", "async", "--staleness", "-1"])
    with pytest.raises(SystemExit, match="--async-slots"):
        main([*base, "--collect", "async", "--async-slots", "1"])
    with pytest.raises(SystemExit, match="--is-cap"):
        main([*base, "--collect", "async", "--is-cap", "0"])
    with pytest.raises(SystemExit):
        main([*base, "--collect", "bogus"])


# ------------------------------------------------------------------ the benchmark
@pytest.mark.slow
def test_benchmark_reports_identical_episodes():
    pytest.importorskip("transformers")
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "async_collect.py"), "--episodes", "8",
                           "--rounds", "1", "--latency", "0.02", "--no-threads-baseline", "--json"],
                          capture_output=True, text=True, timeout=600, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["identical_episodes"] is True
    assert result["sync_seconds"] > 0 and result["async_seconds"] > 0 and result["speedup"] > 0


def test_gem_train_collects_async_with_a_task_sampler(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from gem.rl.train import main

    out = tmp_path / "tasks"
    code = main(["--model", "tiny", "--env", f"{ENV_ID},game:GuessTheNumber-v0-easy", "--task-sampler", "sequential",
                 "--collect", "async", "--steps", "2", "--num-envs", "4", "--group-size", "2", "--max-new-tokens", "3",
                 "--max-turns", "4", "--save-every", "0", "--quiet", "--output-dir", str(out)])
    assert code == 0
    rows = list(csv.DictReader((out / "tasks.csv").open()))
    played = {r["task"]: int(r["groups"]) for r in rows if r["step"] == "1"}
    assert played == {ENV_ID: 1, "game:GuessTheNumber-v0-easy": 1}  # round robin over the two ids
