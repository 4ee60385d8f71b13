"""The reference trainer on CPU with the tiny random model."""

from __future__ import annotations

import csv
import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from gem.rl.hf import HFPolicy, build_tiny_model, sequence_forward
from gem.rl.rollout import Transition
from gem.rl.train import build_parser, main, update
from gem.utils.tiny_tokenizer import get_tiny_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return get_tiny_tokenizer()


def test_hf_policy_generates_with_logprobs(tokenizer):
    model = build_tiny_model(tokenizer, seed=0)
    policy = HFPolicy(model, tokenizer, max_new_tokens=5)
    gens = policy.generate(["Guess a number.", "You are playing Guess The Number, a longer prompt."])
    assert len(gens) == 2
    for g in gens:
        assert 1 <= len(g.response_ids) <= 5 and len(g.logprobs) == len(g.response_ids)
        assert all(lp <= 0.0 for lp in g.logprobs)
        assert g.prompt_ids[-3:] == tokenizer("<|im_start|>assistant\n", add_special_tokens=False)["input_ids"][-3:]
    # the recorded log-probs are the model's: recompute them
    lp, _, _ = sequence_forward(model, [gens[0].prompt_ids], [gens[0].response_ids], policy.pad_id)
    assert lp[0, :len(gens[0].response_ids)].tolist() == pytest.approx(gens[0].logprobs, abs=1e-4)


def test_update_moves_logprob_with_the_advantage_sign(tokenizer):
    model = build_tiny_model(tokenizer, seed=1)
    prompt = tokenizer("Guess:", add_special_tokens=False)["input_ids"]
    good = tokenizer(" 5", add_special_tokens=False)["input_ids"]
    bad = tokenizer(" 7", add_special_tokens=False)["input_ids"]
    pad = tokenizer.pad_token_id
    trans = [Transition("o", "a", prompt, good, [], 1.0, 0, advantage=1.0),
             Transition("o", "a", prompt, bad, [], 0.0, 0, advantage=-1.0)]

    def lp(resp):
        with torch.no_grad():
            out, _, _ = sequence_forward(model, [prompt], [resp], pad)
        return float(out.sum())

    before = lp(good), lp(bad)
    args = build_parser().parse_args(["--algo", "reinforce", "--lr", "1e-2"])
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    stats = update(model, None, opt, trans, args, pad)
    after = lp(good), lp(bad)
    assert after[0] > before[0] and after[1] < before[1]
    assert stats["loss"] != 0.0


@pytest.mark.parametrize("algo,extra", [("reinforce", ["--wrappers", "concat_chat,episode_tracking"]), ("ppo", [])])
def test_trainer_runs_end_to_end(tmp_path, algo, extra):
    out = tmp_path / algo
    code = main(["--model", "tiny", "--env", "game:GuessTheNumber-v0-easy", "--algo", algo, "--steps", "2",
                 "--num-envs", "2", "--group-size", "1", "--max-new-tokens", "4", "--save-every", "1",
                 "--epochs", "2", "--lr", "1e-3", "--output-dir", str(out), *extra])
    assert code == 0
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    assert [r["step"] for r in rows] == ["1", "2"]
    assert all(-0.1 - 1e-9 <= float(r["mean_return"]) <= 1.0 for r in rows)
    assert (out / "checkpoint-1" / "config.json").is_file() and (out / "final" / "tokenizer.json").is_file()
    if algo == "ppo":
        assert (out / "final" / "value_head.pt").is_file() and rows[0]["value_loss"] != "nan"
    # the weights moved (the random model's format errors give a nonzero REINFORCE signal)
    from transformers import AutoModelForCausalLM

    trained = AutoModelForCausalLM.from_pretrained(str(out / "final"))
    fresh = build_tiny_model(get_tiny_tokenizer(), seed=0)
    diff = sum(float((a - b).abs().sum()) for a, b in zip(trained.parameters(), fresh.parameters()))
    assert diff > 0


def test_trainer_rejects_bad_arguments(tmp_path):
    with pytest.raises(SystemExit, match="group-size"):
        main(["--algo", "grpo", "--group-size", "1", "--num-envs", "2", "--output-dir", str(tmp_path)])
    with pytest.raises(SystemExit, match="multiple"):
        main(["--num-envs", "3", "--group-size", "2", "--output-dir", str(tmp_path)])


def test_gem_train_subcommand_is_registered():
    from gem.cli import SUBCOMMANDS

    assert SUBCOMMANDS["train"] == "gem.rl.cli:add_parser"


def test_vllm_rollout_fails_cleanly_without_vllm(tmp_path, capsys):
    from gem.rl.vllm_policy import vllm_available

    if vllm_available():
        pytest.skip("vllm and a GPU are present")
    code = main(["--rollout", "vllm", "--steps", "1", "--num-envs", "1", "--group-size", "1",
                 "--output-dir", str(tmp_path)])
    assert code == 2
    assert "vllm" in capsys.readouterr().err


@pytest.mark.gpu
def test_trainer_on_gpu_with_vllm(tmp_path):
    from gem.rl.vllm_policy import vllm_available

    if not vllm_available():
        pytest.skip("needs vllm and a CUDA GPU")
    model = __import__("os").environ.get("GEM_RL_TEST_MODEL")
    if not model:
        pytest.skip("set GEM_RL_TEST_MODEL to a local causal LM directory")
    code = main(["--model", model, "--rollout", "vllm", "--device", "cuda", "--steps", "2", "--num-envs", "4",
                 "--group-size", "2", "--algo", "grpo", "--max-new-tokens", "32", "--output-dir", str(tmp_path)])
    assert code == 0


def test_missing_model_is_a_clear_error(tmp_path, capsys):
    code = main(["--model", str(tmp_path / "no-such-model"), "--steps", "1", "--num-envs", "1", "--group-size", "1",
                 "--output-dir", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert "no-such-model" in err and "--model tiny" in err


def test_dtype_applies_to_the_tiny_model_and_bad_names_are_clear_errors(tmp_path):
    from gem.rl.hf import load_model_and_tokenizer

    for name, expected in ((None, torch.float32), ("auto", torch.float32), ("bfloat16", torch.bfloat16),
                           ("float16", torch.float16)):
        model, _ = load_model_and_tokenizer("tiny", dtype=name)
        assert {p.dtype for p in model.parameters()} == {expected}
    for bad in ("bogus", "int8", "long", "cuda"):
        with pytest.raises(ValueError, match="bfloat16"):
            load_model_and_tokenizer("tiny", dtype=bad)
    with pytest.raises(SystemExit, match="--dtype"):
        main(["--dtype", "int8", "--steps", "1", "--num-envs", "1", "--group-size", "1",
              "--output-dir", str(tmp_path / "bad")])


def test_trainer_trains_the_tiny_model_in_bfloat16(tmp_path):
    from safetensors.torch import load_file

    out = tmp_path / "bf16"
    code = main(["--model", "tiny", "--algo", "reinforce", "--steps", "2", "--num-envs", "2", "--group-size", "1",
                 "--max-new-tokens", "4", "--lr", "1e-2", "--dtype", "bfloat16", "--save-every", "0", "--quiet",
                 "--output-dir", str(out)])
    assert code == 0
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    assert all(r["skipped"] == "0" and math.isfinite(float(r["loss"])) for r in rows)
    weights = load_file(str(out / "final" / "model.safetensors"))
    assert {t.dtype for t in weights.values()} == {torch.float32}  # bfloat16 compute, float32 master weights
    fresh = build_tiny_model(get_tiny_tokenizer(), seed=0).state_dict()
    assert any(not torch.equal(t, fresh[k]) for k, t in weights.items() if k in fresh)
