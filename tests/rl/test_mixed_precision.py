"""Mixed precision in the reference trainer, on CPU: ``--dtype bfloat16`` computes the forward passes
in bfloat16 (``torch.autocast``) while the parameters and AdamW's state stay float32, so updates of
``--lr 1e-5`` are not lost to bfloat16's rounding."""

from __future__ import annotations

import csv
import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import gem.rl.hf as hf
import gem.rl.train as train_mod
from gem.rl.hf import HFPolicy, build_tiny_model, sequence_forward
from gem.utils.tiny_tokenizer import get_tiny_tokenizer

ENV = "game:GuessTheNumber-v0-easy"


@pytest.fixture(scope="module")
def tokenizer():
    return get_tiny_tokenizer()


def _record_logits(model, seen: list) -> None:
    """Records (logits dtype, grad enabled) of every forward pass of ``model``'s output layer."""
    model.get_output_embeddings().register_forward_hook(
        lambda _m, _i, out: seen.append((out.dtype, torch.is_grad_enabled())))


def _train(tmp_path, monkeypatch, extra: list[str], model_ref: str = "tiny"):
    """A 3-step REINFORCE run of ``model_ref`` (the tiny model or a checkpoint of it) at ``--lr 1e-5``;
    returns (saved weights, start weights, what the update saw, the logits dtypes seen, metrics rows)."""
    from safetensors.torch import load_file

    logits_seen: list = []
    real_load = hf.load_model_and_tokenizer

    def load(*a, **kw):
        model, tok = real_load(*a, **kw)
        _record_logits(model, logits_seen)
        return model, tok

    updates = []
    real_update = train_mod.update

    def spy(model, value_head, optimizer, transitions, args, pad_id, **kw):
        stats = real_update(model, value_head, optimizer, transitions, args, pad_id, **kw)
        state = [t for s in optimizer.state.values() for t in s.values() if torch.is_tensor(t) and t.dim() > 0]
        updates.append({"params": {p.dtype for p in model.parameters()}, "state": {t.dtype for t in state},
                        "stats": stats})
        return stats

    monkeypatch.setattr(hf, "load_model_and_tokenizer", load)
    monkeypatch.setattr(train_mod, "update", spy)
    out = tmp_path / "run"
    code = train_mod.main(["--model", model_ref, "--env", ENV, "--algo", "reinforce", "--steps", "3", "--num-envs", "4",
                           "--group-size", "1", "--max-new-tokens", "8", "--lr", "1e-5", "--save-every", "0",
                           "--quiet", "--threads", "1", "--output-dir", str(out), *extra])
    assert code == 0
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    saved = load_file(str(out / "final" / "model.safetensors"))
    start = build_tiny_model(get_tiny_tokenizer(), seed=0).state_dict()
    return saved, start, updates, logits_seen, rows


def _changed_share(saved: dict, start: dict) -> float:
    changed = total = 0
    for name, t in saved.items():
        changed += int((t != start[name].to(t.dtype)).sum())
        total += t.numel()
    return changed / total


def test_bfloat16_trains_with_float32_master_weights(tmp_path, monkeypatch):
    saved, start, updates, logits_seen, rows = _train(tmp_path, monkeypatch, ["--dtype", "bfloat16"])
    assert [r["skipped"] for r in rows] == ["0", "0", "0"]
    assert all(math.isfinite(float(r["loss"])) for r in rows)
    assert len(updates) == 3
    for u in updates:  # master parameters and AdamW's moments stay float32
        assert u["params"] == {torch.float32} and u["state"] == {torch.float32}, u
        assert math.isfinite(u["stats"]["loss"])
    assert {t.dtype for t in saved.values()} == {torch.float32}  # the checkpoint holds the master weights
    # an update of about 1e-5 survives: essentially every weight moved (pure bfloat16 weights: 14.5%)
    assert _changed_share(saved, start) > 0.99
    # both the sampling passes (no grad) and the loss passes (grad) computed their logits in bfloat16
    assert {d for d, grad in logits_seen if not grad} == {torch.bfloat16}
    assert {d for d, grad in logits_seen if grad} == {torch.bfloat16}


def test_float32_computes_in_float32(tmp_path, monkeypatch):
    saved, start, updates, logits_seen, _ = _train(tmp_path, monkeypatch, [])
    assert {d for d, _ in logits_seen} == {torch.float32}
    assert all(u["params"] == {torch.float32} for u in updates)
    assert _changed_share(saved, start) > 0.99


def test_param_dtype_bfloat16_keeps_pure_bfloat16_weights_and_loses_small_updates(tmp_path, monkeypatch):
    """The memory-saving opt-in: parameters and optimizer state in bfloat16, and the rounding it costs."""
    saved, start, updates, logits_seen, _ = _train(tmp_path, monkeypatch, ["--param-dtype", "bfloat16"])
    assert all(u["params"] == {torch.bfloat16} and u["state"] == {torch.bfloat16} for u in updates)
    assert {t.dtype for t in saved.values()} == {torch.bfloat16}
    assert {d for d, _ in logits_seen} == {torch.bfloat16}
    assert _changed_share(saved, start) < 0.5


def test_float16_uses_a_grad_scaler_and_float32_master_weights(tmp_path, monkeypatch):
    saved, start, updates, logits_seen, rows = _train(tmp_path, monkeypatch, ["--dtype", "float16"])
    assert all(u["params"] == {torch.float32} for u in updates)
    assert {d for d, _ in logits_seen} == {torch.float16}
    assert all(math.isfinite(float(r["loss"])) for r in rows if r["skipped"] == "0")
    assert {t.dtype for t in saved.values()} == {torch.float32}
    assert _changed_share(saved, start) > 0.9


def test_auto_computes_in_the_checkpoints_dtype_with_float32_master_weights(tmp_path, monkeypatch, tokenizer):
    """A checkpoint stored in bfloat16 (as many hub models are): ``--dtype auto`` computes in bfloat16,
    the parameters are trained (and saved) in float32; without ``--dtype`` it computes in float32."""
    ckpt = tmp_path / "ckpt"
    build_tiny_model(tokenizer, seed=0).to(torch.bfloat16).save_pretrained(str(ckpt))
    tokenizer.save_pretrained(str(ckpt))
    saved, start, updates, logits_seen, _ = _train(tmp_path / "auto", monkeypatch, ["--dtype", "auto"], str(ckpt))
    assert all(u["params"] == {torch.float32} and u["state"] == {torch.float32} for u in updates)
    assert {d for d, _ in logits_seen} == {torch.bfloat16}
    assert {t.dtype for t in saved.values()} == {torch.float32}
    bf16_start = {k: v.to(torch.bfloat16).float() for k, v in start.items()}
    assert _changed_share(saved, bf16_start) > 0.99
    _, _, updates, logits_seen, _ = _train(tmp_path / "default", monkeypatch, [], str(ckpt))
    assert {d for d, _ in logits_seen} == {torch.float32}
    assert all(u["params"] == {torch.float32} for u in updates)


def test_bad_param_dtype_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(SystemExit):
        train_mod.main(["--param-dtype", "float16", "--output-dir", str(tmp_path)])
    assert "float32" in capsys.readouterr().err


@pytest.mark.parametrize("sampler", ["plain", "static", "prefix"])
def test_policy_samples_in_bfloat16_from_float32_weights(tokenizer, sampler):
    model = build_tiny_model(tokenizer, seed=0).eval()
    seen: list = []
    _record_logits(model, seen)
    policy = HFPolicy(model, tokenizer, max_new_tokens=6, sampler=sampler, seed=1, compute_dtype="bfloat16")
    gens = policy.generate(["Guess a number.", "You are playing Guess The Number, a longer prompt."])
    assert seen and {d for d, _ in seen} == {torch.bfloat16}
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    for g in gens:
        assert 1 <= len(g.response_ids) == len(g.logprobs) <= 6
        assert all(math.isfinite(lp) and lp <= 0.0 for lp in g.logprobs)
    # the recorded log-probs are the bfloat16 forward's (recomputed under the same autocast)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        lp, _, _ = sequence_forward(model, [gens[0].prompt_ids], [gens[0].response_ids], policy.pad_id)
    assert lp.dtype == torch.float32
    assert lp[0, :len(gens[0].response_ids)].tolist() == pytest.approx(gens[0].logprobs, abs=0.1)


def test_unknown_compute_dtype_is_a_clear_error(tokenizer):
    with pytest.raises(ValueError, match="bfloat16"):
        HFPolicy(build_tiny_model(tokenizer), tokenizer, compute_dtype="int8")
