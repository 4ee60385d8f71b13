"""The learning-run machinery: partial freezing, the held-out harness, the record and its docs table."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from gem.rl.evaluate import (
    EVAL_SEED_BASE,
    evaluate,
    eval_seeds,
    improvement,
    render_markdown,
    standard_error,
    summarize,
    write_record,
)
from gem.rl.hf import build_tiny_model
from gem.rl.train import freeze_all_but_last, main as train_main
from gem.utils.tiny_tokenizer import get_tiny_tokenizer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tokenizer():
    return get_tiny_tokenizer()


def test_standard_error_and_summary():
    assert standard_error(0.2, 100) == pytest.approx(0.04)
    assert standard_error(0.0, 10) == 0.0
    with pytest.raises(ValueError):
        standard_error(0.5, 0)
    with pytest.raises(ValueError):
        standard_error(1.5, 10)
    s = summarize([1.0, 0.0, 0.0, 1.0], [True, False, False, True])
    assert s["n"] == 4 and s["success_rate"] == 0.5 and s["se"] == pytest.approx(0.25)
    assert s["mean_return"] == 0.5
    # an env that does not report success: the mean return and its standard error
    s = summarize([1.0, 3.0], [None, None])
    assert "success_rate" not in s and s["mean_return"] == 2.0 and s["se"] == pytest.approx(1.0)
    with pytest.raises(ValueError):
        summarize([], [])


def test_eval_seeds_are_far_from_training_seeds():
    seeds = eval_seeds(3)
    assert seeds == [EVAL_SEED_BASE, EVAL_SEED_BASE + 1, EVAL_SEED_BASE + 2]
    # the trainer's seeds for seed 0..9, 10k steps of 64 groups stay below the held-out range
    assert 9 * 1_000_003 + 10_000 * 64 + 64 < EVAL_SEED_BASE
    with pytest.raises(ValueError):
        eval_seeds(0)


def test_improvement_is_clear_only_beyond_two_and_a_half_se():
    before = {"success_rate": 0.10, "se": 0.02, "n": 200}
    clear = improvement(before, {"success_rate": 0.20, "se": 0.03, "n": 200})
    assert clear["diff"] == pytest.approx(0.10) and clear["se"] == pytest.approx(math.sqrt(0.02**2 + 0.03**2))
    assert clear["clear"] and clear["z"] > 2.5
    assert not improvement(before, {"success_rate": 0.17, "se": 0.03, "n": 200})["clear"]
    assert not improvement(before, {"success_rate": 0.02, "se": 0.01, "n": 200})["clear"]
    with pytest.raises(ValueError):
        improvement(before, {"mean_return": 0.5, "se": 0.1, "n": 10})


def test_freeze_all_but_last_trains_only_the_top_blocks(tokenizer):
    model = build_tiny_model(tokenizer, seed=0, n_layer=3)
    total = sum(p.numel() for p in model.parameters())
    assert freeze_all_but_last(model, 0) == total
    n = freeze_all_but_last(model, 1)
    trainable = {name for name, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(name.startswith(("transformer.h.2.", "transformer.ln_f.")) for name in trainable)
    assert n == sum(p.numel() for p in model.parameters() if p.requires_grad) < total
    assert not model.transformer.wte.weight.requires_grad
    with pytest.raises(ValueError, match="more than"):
        freeze_all_but_last(model, 4)


def test_trainer_with_train_layers_moves_only_the_top_block(tmp_path):
    out = tmp_path / "run"
    code = train_main(["--model", "tiny", "--env", "game:GuessTheNumber-v0-easy", "--algo", "reinforce",
                       "--steps", "2", "--num-envs", "2", "--group-size", "1", "--max-new-tokens", "4",
                       "--lr", "1e-2", "--train-layers", "1", "--output-dir", str(out), "--quiet"])
    assert code == 0
    from transformers import AutoModelForCausalLM

    trained = dict(AutoModelForCausalLM.from_pretrained(str(out / "final")).named_parameters())
    fresh = dict(build_tiny_model(get_tiny_tokenizer(), seed=0).named_parameters())
    moved = {k for k in fresh if not torch.equal(trained[k], fresh[k])}
    assert moved and all(k.startswith(("transformer.h.1.", "transformer.ln_f.")) for k in moved)
    header = (out / "metrics.csv").read_text().splitlines()[0].split(",")
    assert {"sample_seconds", "update_seconds", "response_tokens"} <= set(header)


def test_train_layers_rejects_negative(tmp_path):
    with pytest.raises(SystemExit):
        train_main(["--model", "tiny", "--train-layers", "-1", "--output-dir", str(tmp_path)])


def test_evaluate_on_the_tiny_model_is_deterministic(tokenizer):
    model = build_tiny_model(tokenizer, seed=0)
    a = evaluate(model, tokenizer, "game:GuessTheNumber-v0-easy", 5, batch=2, max_new_tokens=4, max_turns=3)
    b = evaluate(model, tokenizer, "game:GuessTheNumber-v0-easy", 5, batch=5, max_new_tokens=4, max_turns=3)
    assert a == b  # greedy, fixed held-out seeds: batching does not change the result
    assert a["n"] == 5 and 0.0 <= a["success_rate"] <= 1.0
    assert a["se"] == pytest.approx(standard_error(a["success_rate"], 5))
    # a random model writes no well-formed guess: every first turn is a format error (-0.1)
    assert a["success_rate"] == 0.0 and a["mean_return"] < 0


def test_write_record_validates_and_adds_the_verdict(tmp_path):
    rec = {"model": "m", "env": "e", "algo": "rebn", "steps": 2, "command": "c", "seconds": 60.0,
           "before": {"success_rate": 0.1, "se": 0.02, "n": 200},
           "after": {"success_rate": 0.3, "se": 0.03, "n": 200}, "curve": [{"step": 1, "success_rate": 0.1}]}
    path = write_record(tmp_path / "r.json", rec)
    data = json.loads(path.read_text())
    assert data["improvement"]["clear"] and data["improvement"]["diff"] == pytest.approx(0.2)
    with pytest.raises(ValueError, match="lacks"):
        write_record(tmp_path / "bad.json", {k: v for k, v in rec.items() if k != "after"})
    with pytest.raises(ValueError, match="needs"):
        write_record(tmp_path / "bad.json", {**rec, "after": {"success_rate": 0.3, "n": 200}})
    table = render_markdown([data])
    assert "0.100 ± 0.020 (n=200)" in table and "0.300 ± 0.030 (n=200)" in table and "| yes |" in table


def test_learn_end_to_end_on_the_tiny_model(tmp_path):
    from gem.rl.learn import main

    code = main(["--model", "tiny", "--name", "tiny-run", "--record-dir", str(tmp_path / "rec"),
                 "--env", "game:GuessTheNumber-v0-easy", "--algo", "reinforce", "--steps", "2", "--num-envs", "2",
                 "--group-size", "1", "--max-new-tokens", "4", "--max-turns", "3", "--eval-episodes", "3",
                 "--output-dir", str(tmp_path / "run"), "--quiet"])
    assert code == 0
    rec = json.loads((tmp_path / "rec" / "tiny-run.json").read_text())
    assert rec["steps"] == 2 and [row["step"] for row in rec["curve"]] == [1, 2]
    assert rec["before"]["n"] == rec["after"]["n"] == 3
    assert rec["command"].startswith("python -m gem.rl.learn --model tiny")
    assert (tmp_path / "rec" / "tiny-run.png").stat().st_size > 1000
    assert rec["training_seconds"] == pytest.approx(sum(row["seconds"] for row in rec["curve"]), abs=0.2)
    # the same run evaluated again on more episodes, without training
    code = main(["--model", "tiny", "--name", "again", "--record-dir", str(tmp_path / "rec"),
                 "--env", "game:GuessTheNumber-v0-easy", "--algo", "reinforce", "--max-new-tokens", "4",
                 "--max-turns", "3", "--eval-episodes", "5", "--output-dir", str(tmp_path / "run"), "--quiet",
                 "--skip-training"])
    assert code == 0
    again = json.loads((tmp_path / "rec" / "again.json").read_text())
    assert again["curve"] == rec["curve"] and again["after"]["n"] == 5 and again["training"].startswith("an earlier")
    assert "(re-evaluated)" in render_markdown([again])
    with pytest.raises(SystemExit):
        main(["--model", "tiny", "--name", "x", "--record-dir", str(tmp_path / "rec"), "--skip-training",
              "--output-dir", str(tmp_path / "nothing"), "--eval-episodes", "1", "--max-new-tokens", "2", "--quiet"])


def test_docs_show_the_learning_records_exactly():
    """docs/rl.md's learning table is the rendering of docs/learning/*.json (no typed figures)."""
    records = [json.loads(p.read_text()) for p in sorted((ROOT / "docs" / "learning").glob("*.json"))]
    text = (ROOT / "docs" / "rl.md").read_text()
    m = re.search(r"<!-- learning-records:begin -->\n(.*?)<!-- learning-records:end -->", text, re.S)
    assert m, "docs/rl.md lacks the learning-records block"
    assert m.group(1) == render_markdown(records)


def test_max_minutes_stops_training_early(tmp_path):
    out = tmp_path / "run"
    code = train_main(["--model", "tiny", "--env", "game:GuessTheNumber-v0-easy", "--algo", "reinforce",
                       "--steps", "5", "--num-envs", "2", "--group-size", "1", "--max-new-tokens", "4",
                       "--max-minutes", "1e-6", "--output-dir", str(out), "--quiet"])
    assert code == 0
    rows = (out / "metrics.csv").read_text().splitlines()
    assert len(rows) == 2  # the header and step 1 only
    assert (out / "final" / "config.json").is_file()


def test_served_summary_counts_errored_episodes_as_failures(tmp_path):
    from gem.rl.served import served_summary

    rows = [
        {"key": "e#0", "status": "ok", "total_reward": 1.0, "success": True},
        {"key": "e#1", "status": "ok", "total_reward": -0.1, "success": False},
        {"key": "e#2", "status": "error", "total_reward": 0.0, "success": None},
        {"key": "e#1", "status": "ok", "total_reward": 1.0, "success": True},  # a rerun: the last one counts
    ]
    base = {"env_id": "e", "index": 0, "sample": 0, "seed": 0, "num_turns": 1, "seconds": 0.1}
    (tmp_path / "episodes.jsonl").write_text("".join(json.dumps({**base, **r}) + "\n" for r in rows))
    out = served_summary(tmp_path)
    assert out["n"] == 3 and out["success_rate"] == pytest.approx(2 / 3) and out["errors"] == 1
    assert out["se"] == pytest.approx(standard_error(2 / 3, 3))


def test_served_reads_the_run_from_the_record_command_and_refuses_what_it_cannot_serve(tmp_path):
    from gem.rl.served import run_args, served_eval

    rec = {"command": "python -m gem.rl.learn --name x --env game:GuessTheNumber-v0-easy --max-new-tokens 16 "
                      f"--output-dir {tmp_path / 'run'} --model tiny"}
    args = run_args(rec)
    assert args.max_new_tokens == 16 and args.output_dir == str(tmp_path / "run") and args.model == "tiny"
    with pytest.raises(ValueError, match="not a gem.rl.learn command"):
        run_args({"command": "python -m gem.rl.train --steps 1"})
    path = tmp_path / "x.json"
    path.write_text(json.dumps(rec))
    with pytest.raises(SystemExit, match="needs the GGUF"):
        served_eval(path)  # the tiny model is no GGUF: nothing for llama.cpp to serve


def test_render_markdown_shows_the_served_figures():
    rec = {"name": "n", "model": "m", "env": "e", "algo": "rebn", "steps": 2, "command": "c", "seconds": 60.0,
           "before": {"success_rate": 0.1, "se": 0.02, "n": 200}, "after": {"success_rate": 0.3, "se": 0.03, "n": 200},
           "curve": [{"step": 1, "success_rate": 0.1, "seconds": 1.0}],
           "served": {"before": {"success_rate": 0.05, "se": 0.02, "n": 100},
                      "after": {"success_rate": 0.25, "se": 0.04, "n": 100}}}
    text = render_markdown([rec])
    assert "before 0.050 ± 0.020 (n=100), after 0.250 ± 0.040 (n=100)" in text
    assert "python -m gem.rl.served docs/learning/n.json" in text
