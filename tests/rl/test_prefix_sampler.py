"""The prefix sampler: one prompt pass per distinct prompt, same tokens as ``generate``, true log-probs."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from gem.rl.hf import HFPolicy, build_tiny_model, sequence_forward
from gem.rl.sampling import sample_plain, sample_prefix
from gem.utils.tiny_tokenizer import get_tiny_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return get_tiny_tokenizer()


@pytest.fixture(scope="module")
def model(tokenizer):
    return build_tiny_model(tokenizer, seed=3).eval()


def _prompts(tokenizer):
    texts = ["Guess a number.", "You are playing Guess The Number, a longer prompt here.", "Guess a number.",
             "Compute 2 + 3.", "Guess a number."]
    return [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]


def test_prefix_sampler_matches_generate_greedily_with_repeated_prompts(tokenizer, model):
    prompts = _prompts(tokenizer)
    kw = dict(max_new_tokens=12, pad_id=tokenizer.pad_token_id, eos_id=tokenizer.eos_token_id, greedy=True)
    plain = sample_plain(model, prompts, **kw)
    rows, logps = sample_prefix(model, prompts, **kw)
    assert rows == plain
    assert rows[0] == rows[2] == rows[4] and any(len(r) > 1 for r in rows)
    lp, _, _ = sequence_forward(model, prompts, rows, tokenizer.pad_token_id)
    for i, r in enumerate(rows):
        assert lp[i, :len(r)].tolist() == pytest.approx(logps[i], abs=1e-4)


def test_prefix_sampler_runs_the_prompt_pass_once_per_distinct_prompt(tokenizer, model):
    prompts = _prompts(tokenizer)
    shapes = []
    handle = model.register_forward_pre_hook(lambda mod, args, kwargs: shapes.append(tuple(kwargs["input_ids"].shape)),
                                             with_kwargs=True)
    try:
        sample_prefix(model, prompts, max_new_tokens=3, pad_id=tokenizer.pad_token_id, eos_id=None, greedy=True)
    finally:
        handle.remove()
    width = max(len(p) for p in prompts)
    assert shapes[0] == (3, width)  # three distinct prompts in the prompt pass
    assert shapes[1:] == [(5, 1), (5, 1)]  # then every row, one token at a time


def test_prefix_sampling_is_seeded_and_logprobs_are_the_tempered_models(tokenizer, model):
    prompts = _prompts(tokenizer)
    kw = dict(max_new_tokens=8, pad_id=tokenizer.pad_token_id, eos_id=tokenizer.eos_token_id, temperature=0.7)
    a = sample_prefix(model, prompts, generator=torch.Generator().manual_seed(5), **kw)
    b = sample_prefix(model, prompts, generator=torch.Generator().manual_seed(5), **kw)
    assert a == b
    lp, _, _ = sequence_forward(model, prompts, a[0], tokenizer.pad_token_id, temperature=0.7)
    for i, r in enumerate(a[0]):
        assert lp[i, :len(r)].tolist() == pytest.approx(a[1][i], abs=1e-4)


def test_policy_with_prefix_sampler(tokenizer, model):
    policy = HFPolicy(model, tokenizer, max_new_tokens=4, sampler="prefix", seed=1)
    gens = policy.generate(["Guess a number.", "Guess a number."])
    assert len(gens) == 2 and all(len(g.logprobs) == len(g.response_ids) >= 1 for g in gens)
    with pytest.raises(ValueError, match="prefix"):
        HFPolicy(model, tokenizer, sampler="bogus")


def test_prefix_forward_equals_the_plain_forward_and_its_gradient(tokenizer):
    from gem.rl.hf import sequence_forward_prefix

    model = build_tiny_model(tokenizer, seed=4)
    prompts = _prompts(tokenizer)
    responses = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in [" 5", " seven and", "", " 3", " 12 4"]]
    pad = tokenizer.pad_token_id
    adv = torch.tensor([1.0, -0.5, 0.3, 2.0, -1.0])

    def grads(fn):
        model.zero_grad()
        lp, mask = fn()[:2]
        (lp.sum(-1) * adv).sum().backward()
        return lp.detach(), mask, [p.grad.clone() for p in model.parameters()]

    a_lp, a_mask, a_g = grads(lambda: sequence_forward(model, prompts, responses, pad, 0.8))
    b_lp, b_mask, b_g = grads(lambda: sequence_forward_prefix(model, prompts, responses, pad, 0.8))
    assert torch.equal(a_mask, b_mask)
    assert torch.allclose(a_lp, b_lp, atol=1e-5)
    assert all(torch.allclose(x, y, atol=1e-5) for x, y in zip(a_g, b_g))
