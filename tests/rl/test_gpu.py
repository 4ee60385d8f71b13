"""The trainer, the samplers and the evaluator on an NVIDIA GPU: ``pytest -m gpu tests/rl/test_gpu.py``.

CI has no GPU, so every test here is marked ``gpu`` and skips when ``torch.cuda.is_available()`` is
false. ``GEM_TEST_DEVICE`` picks another device (``GEM_TEST_DEVICE=cpu`` runs the same checks on
the CPU: a dry run of the tests themselves, where the CUDA-vs-CPU comparisons compare the CPU with
itself).

The random tiny model writes no well-formed guess, so ReBN and GRPO would skip every step (all
advantages zero). The trainer tests therefore start from :func:`format_primed_model`: the tiny model
after a few hundred supervised steps on CPU towards replies like ``\\boxed{7}`` with a uniformly
random number, so that its episodes earn different rewards from the env (wrong guesses, successes,
closeness at the turn limit) and every algorithm has a learning signal.
"""

from __future__ import annotations

import copy
import csv
import math
import os
import random
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import gem
import gem.rl.hf as hf_mod
import gem.rl.train as train_mod
from gem.rl.estimators import ALGORITHMS
from gem.rl.hf import HFPolicy, build_tiny_model, sequence_forward
from gem.rl.sampling import StaticSampler, sample_plain, sample_prefix
from gem.utils.prompting import user_content
from gem.utils.tiny_tokenizer import get_tiny_tokenizer

DEVICE = os.environ.get("GEM_TEST_DEVICE", "cuda")
ENV = "game:GuessTheNumber-v0-easy"

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(DEVICE.startswith("cuda") and not torch.cuda.is_available(),
                       reason="needs an NVIDIA GPU: torch.cuda.is_available() is false"),
]


@pytest.fixture(scope="module")
def tokenizer():
    return get_tiny_tokenizer()


def _guess_prompts(n: int) -> list[str]:
    """First-turn and later-turn user messages of the env, as the trainer renders them."""
    prompts = []
    for seed in range(n):
        env = gem.make(ENV)
        obs, info = env.reset(seed=seed)
        prompts.append(user_content(obs, info))
        obs, _, _, _, info = env.step(f"\\boxed{{{1 + seed % 10}}}")
        prompts.append(user_content(obs, info))
    return prompts


def format_primed_model(tokenizer, steps: int = 300) -> torch.nn.Module:
    """The tiny model (seed 0) taught on the CPU, in fp32 and with its own generators, to answer any
    env prompt with ``\\boxed{N}`` for a uniformly random N in 1..10 (so sampling varies the guess)."""
    model = build_tiny_model(tokenizer, seed=0)
    policy = HFPolicy(model, tokenizer)
    prompts = [policy.encode_prompt(p) for p in _guess_prompts(8)]
    rng = random.Random(0)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        batch = [rng.choice(prompts) for _ in range(16)]
        replies = [tokenizer(f"\\boxed{{{rng.randint(1, 10)}}}", add_special_tokens=False)["input_ids"]
                   + [tokenizer.eos_token_id] for _ in batch]
        logp, mask, _ = sequence_forward(model, batch, replies, tokenizer.pad_token_id)
        loss = -(logp * mask).sum() / mask.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


@pytest.fixture(scope="module")
def primed(tokenizer) -> torch.nn.Module:
    return format_primed_model(tokenizer)


@pytest.fixture(scope="module")
def primed_dir(tokenizer, primed, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("primed")
    primed.save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    return path


def _load(path: Path, dtype=None):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(path), **({"dtype": dtype} if dtype else {}))


# (algorithm, sampler, model). "auto" on CUDA is the default there, the static sampler compiled with
# CUDA graphs: one compilation per batch shape, so it runs once, on the random tiny model, whose
# episodes all end on their first turn (a format error; REINFORCE still learns from it).
TRAIN_CASES = [(a, s, "primed") for a in ALGORITHMS for s in ("plain", "static", "prefix")]
TRAIN_CASES += [("reinforce", "auto", "tiny")]


def _record_logits(model, seen: list) -> None:
    """Records (logits dtype, grad enabled) of every forward pass of ``model``'s output layer."""
    model.get_output_embeddings().register_forward_hook(
        lambda _m, _i, out: seen.append((out.dtype, torch.is_grad_enabled())))


@pytest.mark.parametrize("algo,sampler,model", TRAIN_CASES)
def test_trainer_trains_on_the_device_in_bfloat16(tmp_path, monkeypatch, tokenizer, primed_dir, algo, sampler, model):
    """``--dtype bfloat16`` is mixed precision: the sampling and loss forward passes compute in
    bfloat16 (autocast), the parameters and AdamW's state stay float32 on the device."""
    seen = []
    real_update = train_mod.update

    def spy(model_, value_head, optimizer, transitions, args, pad_id, **kw):
        stats = real_update(model_, value_head, optimizer, transitions, args, pad_id, **kw)
        params = list(model_.parameters()) + (list(value_head.parameters()) if value_head is not None else [])
        state = [t for s in optimizer.state.values() for t in s.values() if torch.is_tensor(t) and t.dim() > 0]
        seen.append({"devices": {p.device.type for p in params} | {t.device.type for t in state},
                     "dtypes": {p.dtype for p in params} | {t.dtype for t in state},
                     "finite": all(bool(torch.isfinite(p).all()) for p in params), "stats": stats})
        return stats

    logits_seen: list = []
    if sampler != "auto":  # the compiled (CUDA-graph) decode step runs without Python hooks
        real_load = hf_mod.load_model_and_tokenizer

        def load(*a, **kw):
            lm, tok = real_load(*a, **kw)
            _record_logits(lm, logits_seen)
            return lm, tok

        monkeypatch.setattr(hf_mod, "load_model_and_tokenizer", load)
    monkeypatch.setattr(train_mod, "update", spy)
    out = tmp_path / "run"
    ref = "tiny" if model == "tiny" else str(primed_dir)
    argv = ["--model", ref, "--env", ENV, "--algo", algo, "--sampler", sampler, "--steps", "3", "--num-envs", "8",
            "--group-size", "4", "--max-new-tokens", "16", "--lr", "1e-3", "--save-every", "0", "--quiet",
            "--device", DEVICE, "--dtype", "bfloat16", "--output-dir", str(out)]
    if sampler == "static":
        argv += ["--compile", "off"]
    assert train_mod.main(argv) == 0

    rows = list(csv.DictReader((out / "metrics.csv").open()))
    assert [r["step"] for r in rows] == ["1", "2", "3"]
    for r in rows:
        assert math.isfinite(float(r["mean_return"])) and -0.1 - 1e-9 <= float(r["mean_return"]) <= 1.0
        if r["skipped"] == "0":
            assert math.isfinite(float(r["loss"])), r
    trained_rows = [r for r in rows if r["skipped"] == "0"]
    assert trained_rows, f"no step had a learning signal: {rows}"
    assert len(seen) == len(trained_rows)
    for s in seen:
        assert s["devices"] == {torch.device(DEVICE).type}, s
        assert s["dtypes"] == {torch.float32}, s  # master weights and optimizer state
        assert s["finite"] and math.isfinite(s["stats"]["loss"]), s
        if algo == "ppo":
            assert math.isfinite(s["stats"]["value_loss"]), s

    if sampler != "auto":  # sampling (no grad) and the loss (grad) computed their logits in bfloat16
        assert {d for d, grad in logits_seen if not grad} == {torch.bfloat16}
        assert {d for d, grad in logits_seen if grad} == {torch.bfloat16}
    trained = _load(out / "final")
    assert {p.dtype for p in trained.parameters()} == {torch.float32}  # saved as the float32 master weights
    start = build_tiny_model(tokenizer, seed=0) if model == "tiny" else _load(primed_dir)
    changed = total = 0
    for a, b in zip(trained.parameters(), start.parameters()):
        assert bool(torch.isfinite(a).all())
        changed += int((a != b).sum())
        total += a.numel()
    assert changed / total > 0.95, f"only {changed} of {total} parameters moved"
    if algo == "ppo":
        head = torch.load(out / "final" / "value_head.pt", map_location="cpu")
        assert any(bool(v.abs().sum() > 0) for v in head.values())  # the zero-initialised critic learned


def _prompt_ids(tokenizer) -> list[list[int]]:
    policy = HFPolicy(build_tiny_model(tokenizer, seed=0), tokenizer)
    texts = _guess_prompts(3) + ["Guess a number.", "Guess a number.", "Compute 2 + 3."]
    return [policy.encode_prompt(t) for t in texts]


def _kwargs(tokenizer, **extra):
    return dict(max_new_tokens=12, pad_id=tokenizer.pad_token_id, eos_id=tokenizer.eos_token_id, **extra)


def _samplers(model, compiled: bool = False):
    samplers = {"plain": lambda p, **kw: (sample_plain(model, p, **kw), None),
                "prefix": lambda p, **kw: sample_prefix(model, p, **kw),
                "static": StaticSampler(model).sample}
    if compiled:  # compiling costs tens of seconds: once, in the greedy test
        samplers["static-compiled"] = StaticSampler(model, compile=True).sample
    return samplers


def test_greedy_tokens_on_the_device_equal_the_cpus(tokenizer):
    """Greedy decoding in fp32: every sampler on the device writes the CPU's tokens (the module's
    claim that the three samplers agree greedily, checked across devices)."""
    prompts = _prompt_ids(tokenizer)
    cpu_model = build_tiny_model(tokenizer, seed=3).eval()
    expected = sample_plain(cpu_model, prompts, **_kwargs(tokenizer, greedy=True))
    assert any(len(r) > 1 for r in expected)
    model = build_tiny_model(tokenizer, seed=3).eval().to(DEVICE)
    for name, sample in _samplers(model, compiled=True).items():
        rows, logps = sample(prompts, **_kwargs(tokenizer, greedy=True))
        assert rows == expected, name
        if logps is not None:  # the recorded log-probs are the model's on that device
            lp, _, _ = sequence_forward(model, prompts, rows, tokenizer.pad_token_id)
            for i, r in enumerate(rows):
                assert lp[i, :len(r)].tolist() == pytest.approx(logps[i], abs=1e-4), name


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_seeded_sampling_on_the_device_is_reproducible(tokenizer, dtype):
    """A device generator's draws differ from a CPU generator's, so what holds across devices is
    reproducibility: the same seed gives the same tokens run to run, another seed other tokens."""
    prompts = _prompt_ids(tokenizer)
    model = build_tiny_model(tokenizer, seed=3).eval().to(DEVICE, dtype)
    for name, sample in _samplers(model).items():
        runs = [sample(prompts, **_kwargs(tokenizer, temperature=1.0,
                                          generator=torch.Generator(device=DEVICE).manual_seed(seed)))
                for seed in (5, 5, 6)]
        assert runs[0][0] == runs[1][0], name
        assert runs[0][0] != runs[2][0], name
        if runs[0][1] is not None:
            assert runs[0][1] == runs[1][1], name
            assert all(lp <= 0.0 and math.isfinite(lp) for row in runs[0][1] for lp in row), name


@pytest.mark.parametrize("sampler", ["plain", "static", "prefix"])
def test_policy_on_the_device_samples_in_bfloat16_with_logprobs(tokenizer, sampler):
    """float32 weights, bfloat16 compute (the trainer's ``--dtype bfloat16``)."""
    model = build_tiny_model(tokenizer, seed=0).to(DEVICE)
    seen: list = []
    _record_logits(model, seen)
    policy = HFPolicy(model, tokenizer, max_new_tokens=8, sampler=sampler, seed=1, compute_dtype="bfloat16")
    assert policy.generator.device.type == torch.device(DEVICE).type
    gens = policy.generate(_guess_prompts(2))
    assert seen and {d for d, _ in seen} == {torch.bfloat16}
    again = HFPolicy(model, tokenizer, max_new_tokens=8, sampler=sampler, seed=1,
                     compute_dtype="bfloat16").generate(_guess_prompts(2))
    assert [g.response_ids for g in gens] == [g.response_ids for g in again]
    for g in gens:
        assert 1 <= len(g.response_ids) == len(g.logprobs) <= 8
        assert all(math.isfinite(lp) and lp <= 0.0 for lp in g.logprobs)


@pytest.mark.parametrize("sampler", ["plain", "prefix"])
def test_greedy_evaluation_on_the_device_equals_the_cpus(tokenizer, primed, sampler):
    """``gem.rl.evaluate`` in fp32 with greedy decoding: the same numbers on the device as on the CPU."""
    from gem.rl.evaluate import evaluate

    kw = dict(batch=8, max_new_tokens=16, sampler=sampler)
    on_cpu = evaluate(primed, tokenizer, ENV, 8, **kw)
    assert on_cpu["success_rate"] > 0.0 or on_cpu["mean_return"] > -0.1  # the primed model makes guesses
    on_device = evaluate(copy.deepcopy(primed).to(DEVICE), tokenizer, ENV, 8, **kw)
    assert on_device == on_cpu


def test_sampled_evaluation_in_bfloat16_on_the_device_is_reproducible(tokenizer, primed):
    from gem.rl.evaluate import evaluate

    model = copy.deepcopy(primed).to(DEVICE)
    kw = dict(batch=8, max_new_tokens=16, greedy=False, sample_seed=4, compute_dtype="bfloat16")
    first = evaluate(model, tokenizer, ENV, 8, **kw)
    assert first["n"] == 8 and math.isfinite(first["mean_return"])
    assert evaluate(model, tokenizer, ENV, 8, **kw) == first
