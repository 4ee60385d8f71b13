"""Samplers (plain vs static cache), prompts with the env's instruction, skipped steps, logs, RNG."""

from __future__ import annotations

import csv
import logging
import random
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import gem
from gem.rl.hf import HFPolicy, build_tiny_model, sequence_forward
from gem.rl.rollout import Transition, collect_episodes
from gem.rl.sampling import StaticSampler, sample_plain
from gem.rl.train import SKIP_NOTE, has_signal, main
from gem.utils.tiny_tokenizer import get_tiny_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return get_tiny_tokenizer()


@pytest.fixture(scope="module")
def model(tokenizer):
    return build_tiny_model(tokenizer, seed=3).eval()


def _prompts(tokenizer):
    texts = ["Guess a number.", "You are playing Guess The Number, a longer prompt here.", "Compute 2 + 3."]
    return [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]


def test_static_sampler_matches_generate_greedily(tokenizer, model):
    prompts = _prompts(tokenizer)
    kw = dict(max_new_tokens=12, pad_id=tokenizer.pad_token_id, eos_id=tokenizer.eos_token_id, greedy=True)
    plain = sample_plain(model, prompts, **kw)
    static = StaticSampler(model, pad_multiple=16)
    rows, logps = static.sample(prompts, **kw)
    assert rows == plain
    assert any(len(r) > 1 for r in rows)
    # the cache is reused for a second call of the same shape, with the same result
    again, _ = static.sample(prompts, **kw)
    assert again == rows
    # the recorded log-probs are the model's
    lp, _, _ = sequence_forward(model, prompts, rows, tokenizer.pad_token_id)
    for i, r in enumerate(rows):
        assert lp[i, :len(r)].tolist() == pytest.approx(logps[i], abs=1e-4)


def test_min_new_tokens_holds_back_eos_in_both_samplers(tokenizer, model):
    prompts = _prompts(tokenizer)
    kw = dict(max_new_tokens=6, min_new_tokens=6, pad_id=tokenizer.pad_token_id, eos_id=tokenizer.eos_token_id)
    gen = torch.Generator().manual_seed(0)
    assert all(len(r) == 6 for r in sample_plain(model, prompts, generator=gen, **kw))
    rows, _ = StaticSampler(model).sample(prompts, generator=gen, **kw)
    assert all(len(r) == 6 for r in rows)


def test_sampling_is_seeded_locally_and_leaves_global_rng_alone(tokenizer, model):
    py_state, torch_state = random.getstate(), torch.get_rng_state()
    outs = []
    for sampler in ("plain", "static", "plain"):
        policy = HFPolicy(model, tokenizer, max_new_tokens=8, sampler=sampler, seed=5)
        outs.append([g.response_ids for g in policy.generate(["Guess a number."] * 3)])
    assert outs[0] == outs[2]  # same seed, same samples
    assert random.getstate() == py_state and torch.equal(torch.get_rng_state(), torch_state)
    with pytest.raises(ValueError, match="plain, static"):
        HFPolicy(model, tokenizer, sampler="fast")


class _Recorder:
    def __init__(self):
        self.prompts = []

    def generate(self, prompts):
        from gem.rl.rollout import Generation

        self.prompts.extend(prompts)
        return [Generation([1], [2], [-1.0], "\\boxed{5}") for _ in prompts]


def test_every_prompt_carries_the_env_instruction():
    vec = gem.make_vec("math:Arithmetic", num_envs=2)
    rec = _Recorder()
    eps = collect_episodes(vec, rec, seeds=[0, 1])
    assert len(rec.prompts) == 2
    for p, ep in zip(rec.prompts, eps):
        assert p.endswith("Put your final answer within \\boxed{}.")
        assert ep.transitions[0].prompt == p and p.startswith(ep.transitions[0].observation)


def test_has_signal():
    t = Transition("o", "a", [1], [2], [], 0.0, 0)
    assert not has_signal([t, t], "rebn")
    assert has_signal([Transition("o", "a", [1], [2], [], 0.0, 0, advantage=0.5)], "grpo")
    # ppo: zero advantages but a critic still off its target
    assert has_signal([Transition("o", "a", [1], [2], [], 1.0, 0, value=0.0, ret=1.0)], "ppo")


def test_step_without_signal_is_skipped_and_logged(tmp_path, tokenizer, caplog):
    # GRPO with groups of 2 on GuessTheNumber: the random tiny model never formats a guess, so both
    # episodes of each group get -0.1, every advantage is zero and no update is made
    out = tmp_path / "run"
    code = main(["--model", "tiny", "--env", "game:GuessTheNumber-v0-easy", "--algo", "grpo", "--steps", "1",
                 "--num-envs", "2", "--group-size", "2", "--max-new-tokens", "3", "--output-dir", str(out),
                 "--sample-every", "1", "--threads", "1"])
    assert code == 0
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    assert rows[0]["skipped"] == "1" and rows[0]["loss"] == ""
    log = (out / "train.log").read_text()
    assert SKIP_NOTE in log and "step 1:" in log
    assert "model wrote" in log and "Put your guess inside" in log
    from transformers import AutoModelForCausalLM

    trained = AutoModelForCausalLM.from_pretrained(str(out / "final"))
    fresh = build_tiny_model(tokenizer, seed=0)
    assert all(torch.equal(a, b) for a, b in zip(trained.state_dict().values(), fresh.state_dict().values()))
    # the handlers the CLI added are gone again
    assert logging.getLogger("gem.rl").handlers == []


def test_missing_torch_names_the_extra(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)
    code = main(["--steps", "1", "--output-dir", str(tmp_path)])
    assert code == 2
    err = capsys.readouterr().err
    assert 'pip install -e ".[rl]"' in err and "torch" in err


def test_demo_writes_curves_and_summary_to_its_run_dir(tmp_path):
    import json

    from gem.rl.demo import main as demo_main

    out = tmp_path / "demo"
    code = demo_main(["--model", "tiny", "--algos", "rebn,reinforce", "--steps", "2", "--num-envs", "2",
                      "--group-size", "2", "--max-new-tokens", "3", "--threads", "1", "--quiet",
                      "--output-dir", str(out)])
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["results"]) == {"rebn", "reinforce"}
    for algo in ("rebn", "reinforce"):
        rows = list(csv.DictReader((out / algo / "metrics.csv").open()))
        assert len(rows) == 2
        assert summary["results"][algo]["steps"] == 2
        assert summary["results"][algo]["first_return"] == pytest.approx(float(rows[0]["mean_return"]))
    assert (out / "success.png").stat().st_size > 1000
    with pytest.raises(SystemExit, match="unknown algorithm"):
        demo_main(["--algos", "dqn", "--output-dir", str(out)])
