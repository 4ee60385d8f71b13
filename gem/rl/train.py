"""A small reference trainer: REINFORCE, ReBN, GRPO or PPO on GEM envs with a causal LM.

    python -m gem.rl.train --model tiny --env game:GuessTheNumber-v0-easy --algo rebn --steps 3
    gem train --model Qwen/Qwen3-0.6B-Base --env game:GuessTheNumber-v0 --algo rebn --device cuda

Each step plays one episode in each of ``--num-envs`` envs (``--group-size`` consecutive envs replay
the same task, so GRPO has groups), turns the per-turn rewards into advantages with the chosen
estimator (:mod:`gem.rl.estimators`), and takes ``--epochs`` gradient passes over the transitions
(one transition = one turn: the observation as prompt, the response tokens as the masked loss
span). ``ppo`` adds a linear value head on the LM's last prompt hidden state (a turn-level critic)
and uses GAE over turns with the clipped surrogate. A step whose advantages are all zero (no
learning signal: e.g. every episode of a GRPO group got the same reward) skips the backward pass and
the optimizer step and says so. One line per step goes to the ``gem.rl`` logger (and
``<output-dir>/train.log``), with what the model wrote every ``--sample-every`` steps; rewards go to
``<output-dir>/metrics.csv`` (and to wandb with ``--wandb PROJECT`` when wandb is installed); a
checkpoint (model, tokenizer, value head) is saved every ``--save-every`` steps and at the end.
``--trajectory-dir DIR`` writes every collected episode as a trajectory record (:mod:`gem.rl.records`:
the sampled token ids and log-probs of each turn, the ones the update trains on) to
``DIR/episodes.jsonl`` and the run's summary, with its ``token_drift``, to ``DIR/summary.json``.

With several ids in ``--env``, ``--task-sampler`` (:mod:`gem.rl.task_sampler`: ``uniform``,
``sequential``, ``learnability``) picks each group's id; each step's per-task counts and success go
to ``<output-dir>/tasks.csv``, and the sampler's state to ``task_sampler.json`` in each checkpoint,
from which ``--model <checkpoint>`` resumes it. Without the flag, group ``g`` plays id ``g mod K``.

``--model`` takes ``tiny``, a GGUF file (converted once into a cached checkpoint, see
:mod:`gem.rl.models`), a directory or a hub id. The trainer never touches global random state:
sampling uses its own seeded ``torch.Generator`` and the minibatch order a local ``random.Random``.
The command-line entry (:func:`run`) sets torch's process-wide thread count (``--threads``);
:func:`train` does not.
"""

from __future__ import annotations

import argparse
import csv
import logging
import math
import os
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gem.errors import missing_extra
from gem.rl.estimators import ALGORITHMS
from gem.rl.task_sampler import TASK_COSTS, TASK_SAMPLERS

logger = logging.getLogger("gem.rl.train")  # also when run as __main__

CSV_FIELDS = ["step", "mean_return", "success_rate", "mean_turns", "transitions", "loss", "value_loss",
              "mean_advantage", "seconds", "skipped", "sample_seconds", "update_seconds", "response_tokens",
              "stale_transitions", "dropped_episodes"]
COLLECT_CHOICES = ("sync", "async")
SAMPLER_CHOICES = ("auto", "plain", "static", "prefix")
SKIP_NOTE = "skipped: no learning signal (all advantages are zero)"
PARAM_DTYPES = ("float32", "bfloat16")
TASK_FIELDS = ["step", "task", "groups", "episodes", "success_rate", "total_groups", "estimate", "mean_cost",
               "probability"]
TASK_STATE_FILE = "task_sampler.json"


def default_threads() -> int:
    """Torch CPU threads for ``gem train``: one per two cores this process may use, at least one.

    On a 2-core machine one thread was faster than two (intra-op threads spinning against each
    other and against the env processes); see docs/rl.md for the measurement.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, cores // 2)


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    p = parser or argparse.ArgumentParser(prog="python -m gem.rl.train", description=__doc__.split("\n")[0])
    p.add_argument("--model", default="tiny", help="a causal LM path or hub id; 'tiny' builds a random 2-layer GPT-2")
    p.add_argument("--env", default="game:GuessTheNumber-v0-easy", help="env id, or several separated by commas")
    p.add_argument("--task-sampler", choices=TASK_SAMPLERS, default=None,
                   help="how each group picks its env id from --env: uniformly, in order (round robin across steps) "
                        "or by learnability (the chance a group gives a learning signal, per unit of --task-cost); "
                        "default: group g of every step plays the (g mod number of ids)-th id")
    p.add_argument("--task-cost", choices=TASK_COSTS, default="tokens",
                   help="the learnability sampler's cost of an episode: its prompt and response tokens, or its "
                        "share of the collection's seconds")
    p.add_argument("--wrappers", default="", help="WRAPPER_FACTORY names, e.g. concat_chat,episode_tracking")
    p.add_argument("--algo", choices=ALGORITHMS, default="rebn")
    p.add_argument("--steps", type=int, default=100, help="training steps (each: collect, then update)")
    p.add_argument("--num-envs", type=int, default=8, help="episodes per step")
    p.add_argument("--group-size", type=int, default=4, help="envs replaying the same task (GRPO groups)")
    p.add_argument("--gamma", type=float, default=0.9)
    p.add_argument("--lam", type=float, default=0.95, help="GAE lambda (ppo)")
    p.add_argument("--lr", type=float, default=1e-5)
    p.add_argument("--epochs", type=int, default=1, help="gradient passes over each batch (ppo: >1 uses clipping)")
    p.add_argument("--minibatch", type=int, default=16, help="transitions per forward pass")
    p.add_argument("--clip", type=float, default=0.2, help="PPO ratio clip")
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=1.0)
    p.add_argument("--max-minutes", type=float, default=0.0,
                   help="stop after the step that passes this many minutes of training (0: run all --steps)")
    p.add_argument("--train-layers", type=int, default=0,
                   help="train only the last N transformer blocks and the final norm (0: the whole model)")
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--max-prompt-tokens", type=int, default=768)
    p.add_argument("--max-turns", type=int, default=50, help="safety cap on turns per episode")
    p.add_argument("--collect", choices=COLLECT_CHOICES, default="sync",
                   help="sync: each step plays its batch in lock step until the longest episode ends; async: env "
                        "steps run concurrently and a finished episode's slot starts the next one at once")
    p.add_argument("--staleness", type=int, default=0,
                   help="--collect async: the most policy versions a turn may lag the update that uses it; episodes "
                        "unfinished at an update carry over (0: on-policy, nothing carries over)")
    p.add_argument("--is-cap", type=float, default=2.0,
                   help="truncate the importance weights of stale turns (current / behaviour probability) at this")
    p.add_argument("--async-slots", type=int, default=None,
                   help="--collect async: episodes in flight at once (default: --num-envs)")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--no-chat-template", action="store_true", help="feed observations as raw text")
    p.add_argument("--rollout", choices=("hf", "vllm"), default="hf", help="sampler: transformers or vLLM (GPU)")
    p.add_argument("--sampler", choices=SAMPLER_CHOICES, default="auto",
                   help="hf rollout: 'plain' model.generate, 'static' a static-KV-cache decoding loop "
                        "(auto: static and compiled on CUDA, plain on CPU); 'prefix' runs the prompt pass once per "
                        "distinct prompt (fastest on a CPU when envs share their first prompt)")
    p.add_argument("--compile", choices=("auto", "on", "off"), default="auto",
                   help="torch.compile the static sampler's decode step (auto: on CUDA only)")
    p.add_argument("--threads", type=int, default=None,
                   help=f"torch CPU threads (default: half the usable cores, here {default_threads()})")
    p.add_argument("--sample-every", type=int, default=10,
                   help="log a prompt and what the model wrote every N steps (0: never)")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no per-step log lines")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default=None,
                   help="the dtype the forward passes compute in: float32 (default), bfloat16 or float16 (mixed "
                        "precision: torch.autocast, float32 parameters and optimizer state; float16 adds a "
                        "gradient scaler) or auto (the checkpoint's stored dtype)")
    p.add_argument("--param-dtype", choices=PARAM_DTYPES, default="float32",
                   help="the dtype of the trained parameters, AdamW's state and the saved checkpoints; bfloat16 "
                        "halves their memory but loses updates smaller than bfloat16's rounding (see docs/rl.md)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output-dir", default="runs/gem-rl")
    p.add_argument("--save-every", type=int, default=50, help="checkpoint every N steps (0: only at the end)")
    p.add_argument("--wandb", default=None, metavar="PROJECT", help="also log to this wandb project")
    p.add_argument("--trajectory-dir", default=None, metavar="DIR",
                   help="write every collected episode as a trajectory record (the sampled token ids and "
                        "log-probs of each turn, sampling settings, outcome, costs) to DIR/episodes.jsonl, and "
                        "DIR/summary.json at the end (with token_drift); gem replay and gem regrade read DIR")
    return p


def _validate(args: argparse.Namespace) -> None:
    for name in ("steps", "num_envs", "group_size", "epochs", "minibatch", "max_new_tokens", "max_turns"):
        if getattr(args, name) < 1:
            raise SystemExit(f"gem train: --{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}.")
    if getattr(args, "threads", None) is not None and args.threads < 1:
        raise SystemExit(f"gem train: --threads must be at least 1, got {args.threads}.")
    if getattr(args, "train_layers", 0) < 0:
        raise SystemExit(f"gem train: --train-layers must be 0 or more, got {args.train_layers}.")
    directory = getattr(args, "trajectory_dir", None)
    if directory and Path(directory).exists() and not Path(directory).is_dir():
        raise SystemExit(f"gem train: --trajectory-dir {directory} is a file; give a directory.")
    if getattr(args, "sample_every", 0) < 0:
        raise SystemExit(f"gem train: --sample-every must be 0 or more, got {args.sample_every}.")
    if args.num_envs % args.group_size:
        raise SystemExit(f"gem train: --num-envs ({args.num_envs}) must be a multiple of --group-size ({args.group_size}).")
    if args.algo == "grpo" and args.group_size < 2:
        raise SystemExit("gem train: grpo needs --group-size of at least 2 (it normalizes within groups).")
    collect = getattr(args, "collect", "sync")
    if collect not in COLLECT_CHOICES:
        raise SystemExit(f"gem train: --collect must be one of: {', '.join(COLLECT_CHOICES)}; got {collect!r}.")
    staleness = getattr(args, "staleness", 0)
    if staleness < 0:
        raise SystemExit(f"gem train: --staleness must be 0 or more, got {staleness}.")
    if staleness and collect != "async":
        raise SystemExit("gem train: --staleness needs --collect async (sync collection is always on-policy).")
    cap = getattr(args, "is_cap", 2.0)
    if not (isinstance(cap, (int, float)) and math.isfinite(cap) and cap > 0):
        raise SystemExit(f"gem train: --is-cap must be a positive number, got {cap}.")
    slots = getattr(args, "async_slots", None)
    if slots is not None:
        if collect != "async":
            raise SystemExit("gem train: --async-slots needs --collect async.")
        if slots < args.group_size:
            raise SystemExit(f"gem train: --async-slots ({slots}) must be at least --group-size ({args.group_size}): "
                             "a group's episodes start together.")


def _env_ids(args: argparse.Namespace) -> list[str]:
    return [e.strip() for e in args.env.split(",") if e.strip()]


def _wrapper_fns(args: argparse.Namespace, tokenizer: Any) -> list[Any]:
    if not args.wrappers:
        return []
    from gem.wrappers.wrapper_factory import get_wrapper_fns

    return get_wrapper_fns(args.wrappers, tokenizer=tokenizer)


def _make_envs(args: argparse.Namespace, tokenizer: Any) -> Any:
    """The fixed assignment (no ``--task-sampler``): group ``g`` of every step plays id ``g mod K``."""
    from gem.vector import make_vec

    ids = _env_ids(args)
    # envs of a group share an id, so a group replays one task
    groups = args.num_envs // args.group_size
    env_ids = [ids[(g % len(ids))] for g in range(groups) for _ in range(args.group_size)]
    unplayed = [e for e in dict.fromkeys(ids) if e not in env_ids]
    if unplayed:
        logger.warning("%d groups per step for %d env ids: %s never played; pass --task-sampler sequential (or "
                       "uniform, learnability) to give every id its turn", groups, len(ids), ", ".join(unplayed))
    return make_vec(env_ids, wrappers=_wrapper_fns(args, tokenizer), seed=args.seed)


def _make_task_sampler(args: argparse.Namespace) -> Any:
    """The ``--task-sampler`` (``None`` without it), resumed from ``--model``'s checkpoint when that
    holds the state of the same kind of sampler over the same tasks."""
    name = getattr(args, "task_sampler", None)
    if name is None:
        return None
    from gem.rl.task_sampler import make_task_sampler

    ids = list(dict.fromkeys(_env_ids(args)))
    sampler = make_task_sampler(name, ids, seed=args.seed, group_size=args.group_size)
    state_path = Path(str(args.model)) / TASK_STATE_FILE
    if state_path.is_file():
        import json

        try:
            sampler.load_state_dict(json.loads(state_path.read_text(encoding="utf-8")))
        except (ValueError, OSError) as exc:
            logger.warning("not resuming the task sampler from %s (%s); starting a fresh one", state_path, exc)
        else:
            logger.info("task sampler resumed from %s", state_path)
    return sampler


def _update_task_sampler(sampler: Any, tasks: Sequence[str], episodes: Sequence[Any], group_size: int,
                         cost: str) -> dict[str, list[float]]:
    """Tell ``sampler`` what each group did; returns each task's episode outcomes of this step."""
    from gem.rl.task_sampler import episode_cost

    outcomes: dict[str, list[float]] = {}
    for g, task in enumerate(tasks):
        group = episodes[g * group_size:(g + 1) * group_size]
        successes = [1.0 if ep.success else 0.0 for ep in group]  # unknown or ungraded counts as failed
        sampler.update(task, successes, sum(episode_cost(ep, cost) for ep in group))
        outcomes.setdefault(task, []).extend(successes)
    return outcomes


class _Logger:
    def __init__(self, out: Path, args: argparse.Namespace) -> None:
        self.path = out / "metrics.csv"
        self.file = self.path.open("w", newline="")
        self.writer = csv.DictWriter(self.file, fieldnames=CSV_FIELDS)
        self.writer.writeheader()
        self.task_file: Any = None
        self.task_writer: Any = None
        self.wandb = None
        if args.wandb:
            try:
                import wandb
            except ImportError:
                logger.warning("--wandb given but wandb is not installed; logging to CSV only.")
            else:
                self.wandb = wandb.init(project=args.wandb, config=vars(args))

    def log(self, row: dict[str, Any]) -> None:
        self.writer.writerow({k: row.get(k, "") for k in CSV_FIELDS})
        self.file.flush()
        if self.wandb is not None:
            self.wandb.log(row, step=row["step"])

    def log_tasks(self, step: int, sampler: Any, tasks: Sequence[str], outcomes: dict[str, list[float]]) -> None:
        """One ``tasks.csv`` row per task: this step's groups, episodes and success rate; the running
        totals, estimate, mean cost and the chance of the next draw."""
        if self.task_writer is None:
            self.task_file = (self.path.parent / "tasks.csv").open("w", newline="")
            self.task_writer = csv.DictWriter(self.task_file, fieldnames=TASK_FIELDS)
            self.task_writer.writeheader()
        flat: dict[str, float] = {}
        for info in sampler.report():
            task = info["task"]
            done = outcomes.get(task, [])
            row = {"step": step, "task": task, "groups": tasks.count(task), "episodes": len(done),
                   "success_rate": round(sum(done) / len(done), 4) if done else "",
                   "total_groups": info["groups"], "estimate": round(info["estimate"], 4),
                   "mean_cost": round(info["mean_cost"], 4), "probability": round(info["probability"], 4)}
            self.task_writer.writerow(row)
            flat.update({f"task/{task}/{k}": v for k, v in row.items() if k not in ("step", "task") and v != ""})
        self.task_file.flush()
        if self.wandb is not None:
            self.wandb.log(flat, step=step)

    def close(self) -> None:
        self.file.close()
        if self.task_file is not None:
            self.task_file.close()
        if self.wandb is not None:
            self.wandb.finish()


def _save(model: Any, tokenizer: Any, value_head: Any, path: Path, task_sampler: Any = None,
          step: int = 0) -> None:
    import torch

    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    if value_head is not None:
        torch.save(value_head.state_dict(), path / "value_head.pt")
    if task_sampler is not None:  # a later `gem train --model <this checkpoint>` resumes the sampler from it
        import json

        state = {**task_sampler.state_dict(), "after_step": step}
        (path / TASK_STATE_FILE).write_text(json.dumps(state, indent=1), encoding="utf-8")


def update(model: Any, value_head: Any, optimizer: Any, transitions: Sequence[Any], args: argparse.Namespace,
           pad_id: int, compute_dtype: Any = None, scaler: Any = None, version: int = 0) -> dict[str, float]:
    """``args.epochs`` passes of the policy (and value) loss over ``transitions``; returns mean losses.

    The forward passes run in ``compute_dtype`` (``torch.autocast`` for bfloat16 and float16; see
    :func:`gem.rl.hf.compute_context`), the losses and the optimizer step in the parameters' dtype.
    ``scaler``, a ``torch.amp.GradScaler``, scales the loss before the backward pass (float16).
    ``version`` is the policy version being updated: a transition sampled by an older one (async
    collection with ``--staleness``) has its tokens weighted by ``min(pi_old / mu, --is-cap)``,
    ``pi_old`` the policy at the start of this update and ``mu`` the sampler's recorded log-probs
    (:func:`gem.rl.losses.importance_weights`); current turns weigh 1.
    """
    import torch

    from gem.rl.hf import compute_context, sequence_forward, sequence_forward_prefix
    from gem.rl.losses import importance_weights, ppo_loss, reinforce_loss, value_loss

    params = [p for p in model.parameters() if p.requires_grad]
    params += list(value_head.parameters()) if value_head is not None else []
    device = next(model.parameters()).device
    order = list(range(len(transitions)))
    rng = random.Random(args.seed)
    losses, vlosses = [], []
    cap = getattr(args, "is_cap", 2.0)
    model.eval()  # no dropout: the loss must see the policy that sampled
    old_cache: dict[int, Any] = {}
    for _ in range(args.epochs):
        rng.shuffle(order)
        for start in range(0, len(order), args.minibatch):
            batch = [transitions[i] for i in order[start:start + args.minibatch]]
            batch_idx = order[start:start + args.minibatch]
            with compute_context(device, compute_dtype):
                if getattr(args, "sampler", "auto") == "prefix" and args.algo != "ppo":
                    logp, mask = sequence_forward_prefix(
                        model, [t.prompt_ids for t in batch], [t.response_ids for t in batch], pad_id,
                        args.temperature)
                    values = None
                else:
                    logp, mask, values = sequence_forward(
                        model, [t.prompt_ids for t in batch], [t.response_ids for t in batch], pad_id,
                        args.temperature, value_head if args.algo == "ppo" else None,
                    )
            adv = torch.tensor([t.advantage for t in batch], dtype=torch.float32, device=device)
            # the loss is a mean over the masked tokens of the minibatch, weighted by its share of the batch
            weight = len(batch) / len(transitions)
            stale = [row for row, t in enumerate(batch) if getattr(t, "version", 0) < version]
            old = None
            if args.algo == "ppo" or stale:
                old = torch.zeros_like(logp)
                for row, (i, t) in enumerate(zip(batch_idx, batch)):
                    if i not in old_cache:  # pi_old: the policy at this update's first forward pass
                        old_cache[i] = logp[row, :len(t.response_ids)].detach().clone()
                    old[row, :len(t.response_ids)] = old_cache[i]
            weights = None
            if stale:
                behaviour = torch.zeros_like(logp)
                for row in stale:
                    lp = batch[row].logprobs[:len(batch[row].response_ids)]
                    behaviour[row, :len(lp)] = torch.tensor(lp, dtype=behaviour.dtype, device=device)
                weights = mask.clone().float()
                weights[stale] = importance_weights(old[stale], behaviour[stale], mask[stale], cap)
            if args.algo == "ppo":
                loss, _ = ppo_loss(logp, old, adv, mask, args.clip, weights=weights)
                targets = torch.tensor([t.ret for t in batch], dtype=torch.float32, device=device)
                old_v = torch.tensor([t.value for t in batch], dtype=torch.float32, device=device)
                vloss = value_loss(values, targets, old_v, args.clip)
                total = loss + args.vf_coef * vloss
                vlosses.append(float(vloss.detach()))
            else:
                loss = reinforce_loss(logp, adv, mask, weights=weights)
                total = loss
            scaled = total * weight
            (scaled if scaler is None else scaler.scale(scaled)).backward()
            losses.append(float(loss.detach()))
        if scaler is None:
            torch.nn.utils.clip_grad_norm_(params, args.max_grad_norm)
            optimizer.step()
        else:  # unscale first so the clip sees the true norm; a step with inf/nan gradients is skipped
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(params, args.max_grad_norm)
            scaler.step(optimizer)
            scaler.update()
        optimizer.zero_grad(set_to_none=True)
    return {"loss": float(sum(losses) / max(len(losses), 1)),
            "value_loss": float(sum(vlosses) / len(vlosses)) if vlosses else float("nan")}


def _blocks(model: Any) -> Any:
    """The model's stack of transformer blocks (Llama-style ``model.layers``, GPT-2 ``transformer.h``)."""
    for path in ("model.layers", "transformer.h", "gpt_neox.layers", "model.decoder.layers"):
        obj = model
        for name in path.split("."):
            obj = getattr(obj, name, None)
            if obj is None:
                break
        if obj is not None:
            return obj
    raise ValueError(f"--train-layers: cannot find the transformer blocks of {type(model).__name__}; "
                     "pass --train-layers 0 to train the whole model.")


def freeze_all_but_last(model: Any, n: int) -> int:
    """Train only the last ``n`` transformer blocks and the final norm; returns the trainable count.

    Embeddings (and a tied output layer) stay frozen, so autograd does not run through the frozen
    lower blocks at all: the backward pass covers only the ``n`` top blocks. ``n`` of 0 leaves every
    parameter trainable; ``n`` above the number of blocks is an error.
    """
    if n == 0:
        return sum(p.numel() for p in model.parameters() if p.requires_grad)
    blocks = _blocks(model)
    if n > len(blocks):
        raise ValueError(f"--train-layers {n} is more than the model's {len(blocks)} blocks.")
    for p in model.parameters():
        p.requires_grad_(False)
    keep = list(blocks[len(blocks) - n:])
    for name in ("model.norm", "transformer.ln_f", "gpt_neox.final_layer_norm", "model.decoder.final_layer_norm"):
        obj = model
        for part in name.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if obj is not None:
            keep.append(obj)
            break
    for module in keep:
        for p in module.parameters():
            p.requires_grad_(True)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def has_signal(transitions: Sequence[Any], algo: str, eps: float = 1e-12) -> bool:
    """Whether an update would change anything: some advantage is nonzero (for ``ppo``, or some
    value target differs from its value, so the critic still learns)."""
    if any(abs(t.advantage) > eps for t in transitions):
        return True
    return algo == "ppo" and any(t.value is not None and abs(t.ret - t.value) > eps for t in transitions)


def _import_torch() -> Any:
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError as exc:
        raise missing_extra("gem train", "rl", exc.name or "torch") from exc
    return torch


def _samplers(args: argparse.Namespace) -> tuple[str, bool]:
    cuda = str(args.device).startswith("cuda")
    sampler = getattr(args, "sampler", "auto")
    if sampler == "auto":
        sampler = "static" if cuda else "plain"
    compile_ = getattr(args, "compile", "auto")
    return sampler, (cuda if compile_ == "auto" else compile_ == "on")


def _format_step(row: dict[str, Any]) -> str:
    loss = row.get("loss")
    loss_text = "-" if loss is None or (isinstance(loss, float) and math.isnan(loss)) else f"{loss:.4f}"
    text = (f"step {row['step']}: return {row['mean_return']:.3f}, success {row['success_rate']:.2f}, "
            f"loss {loss_text}, {row['transitions']} transitions, {row['seconds']:.1f}s")
    return text + (f"; {SKIP_NOTE}" if row.get("skipped") else "")


def _format_tasks(sampler: Any, tasks: Sequence[str], outcomes: dict[str, list[float]]) -> str:
    parts = []
    for info in sampler.report():
        task, done = info["task"], outcomes.get(info["task"], [])
        played = f"{tasks.count(task)} group(s), success {sum(done) / len(done):.2f}" if done else "not played"
        parts.append(f"{task} {played}, next chance {info['probability']:.2f}")
    return "; ".join(parts)


def _log_sample(step: int, episodes: Sequence[Any]) -> None:
    for ep in episodes:
        if ep.transitions:
            t = ep.transitions[0]
            logger.info("step %d sample (%s, reward %.3f)\n--- prompt ---\n%s\n--- model wrote ---\n%s",
                        step, ep.env_id, t.reward, t.prompt or t.observation, t.action)
            return


def train(args: argparse.Namespace, progress: Any = None) -> Path:
    """Run the trainer; returns the output directory (with ``metrics.csv`` and checkpoints).

    ``progress``, when given, is called with each step's metrics row (the CLI drives its progress
    bar with it). Global random state and torch's thread count are left alone.
    """
    torch = _import_torch()

    from gem.rl.hf import HFPolicy
    from gem.rl.collect import assign_advantages, collect_episodes, episode_stats

    _validate(args)
    task_sampler = _make_task_sampler(args)
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    model, tokenizer, compute_dtype = load_for_training(args)
    model.to(args.device)
    scaler = None
    if compute_dtype == torch.float16:  # float16's narrow range: scale the loss so gradients do not underflow
        scaler = torch.amp.GradScaler(torch.device(args.device).type)
    trainable = freeze_all_but_last(model, getattr(args, "train_layers", 0))
    logger.info("%d of %d parameters are trained", trainable, sum(p.numel() for p in model.parameters()))
    value_head = None
    if args.algo == "ppo":
        value_head = torch.nn.Linear(model.config.hidden_size, 1).to(args.device)
        torch.nn.init.zeros_(value_head.weight)
        torch.nn.init.zeros_(value_head.bias)
    chat = not args.no_chat_template and "concat_chat" not in args.wrappers
    if args.rollout == "vllm":
        from gem.rl.vllm_policy import VLLMPolicy

        sampler: Any = VLLMPolicy(args.model, max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                                  apply_chat_template=chat, seed=args.seed)
    kind, compile_ = _samplers(args)
    hf_policy = HFPolicy(model, tokenizer, args.max_new_tokens, args.temperature, args.max_prompt_tokens, chat,
                         value_head, sampler=kind, compile=compile_, seed=args.seed, compute_dtype=compute_dtype)
    if args.rollout != "vllm":
        sampler = hf_policy
    params = [p for p in model.parameters() if p.requires_grad]
    params += list(value_head.parameters()) if value_head is not None else []
    optimizer = torch.optim.AdamW(params, lr=args.lr)
    pool = collector = None
    if getattr(args, "collect", "sync") == "async":
        collector, pool = _make_collector(args, tokenizer, sampler, task_sampler)
    elif task_sampler is None:
        vec = _make_envs(args, tokenizer)
    else:
        from gem.rl.collect import EnvPool

        pool = EnvPool(_wrapper_fns(args, tokenizer), seed=args.seed)
        pool.check(task_sampler.tasks)
    log = _Logger(out, args)
    sample_every = getattr(args, "sample_every", 0)
    logger.info("training %s with %s on %s: %d steps of %d episodes (sampler %s%s)", args.model, args.algo,
                args.env, args.steps, args.num_envs, kind, ", compiled" if compile_ else "")
    started = time.perf_counter()
    max_seconds = 60.0 * (getattr(args, "max_minutes", 0.0) or 0.0)
    recorder = None
    try:
        recorder = _make_recorder(args, tokenizer, "vllm" if args.rollout == "vllm" else kind)
        for step in range(1, args.steps + 1):
            t0 = time.perf_counter()
            groups = args.num_envs // args.group_size
            base = args.seed * 1_000_003 + step * groups
            seeds = [base + i // args.group_size for i in range(args.num_envs)]
            if collector is not None:  # the next --num-envs episodes to finish, in whole groups
                episodes = collector.collect()
                tasks = [ep.env_id for ep in episodes[::args.group_size]]
            else:
                if task_sampler is not None:  # one task per group, a vector of the pool's envs for them
                    tasks = task_sampler.sample(groups)
                    vec = pool.vector([t for t in tasks for _ in range(args.group_size)])
                episodes = collect_episodes(vec, sampler, seeds=seeds, max_turns=args.max_turns)
            if task_sampler is not None:
                outcomes = _update_task_sampler(task_sampler, tasks, episodes, args.group_size, args.task_cost)
                log.log_tasks(step, task_sampler, tasks, outcomes)
                logger.info("step %d tasks: %s", step, _format_tasks(task_sampler, tasks, outcomes))
            t_sampled = time.perf_counter()
            if args.algo == "ppo" and args.rollout == "vllm":  # values from the trainer's critic
                _fill_values(hf_policy, episodes)
            assign_advantages(episodes, args.algo, gamma=args.gamma, lam=args.lam)
            transitions = [t for ep in episodes for t in ep.transitions if t.response_ids]
            stats = episode_stats(episodes)
            skipped = not transitions or not has_signal(transitions, args.algo)
            if recorder is not None:  # before the update: the records are what it trains on
                recorder.write(step, episodes, update_skipped=skipped)
            t_update = time.perf_counter()
            version = collector.version if collector is not None else 0
            losses = {} if skipped else update(model, value_head, optimizer, transitions, args, hf_policy.pad_id,
                                               compute_dtype=compute_dtype, scaler=scaler, version=version)
            t_done = time.perf_counter()
            if args.rollout == "vllm" and not skipped:
                sampler.load_weights(model)
            # a version is a training step: episodes in flight now sample under the next one
            dropped = collector.policy_updated() if collector is not None else 0
            row = {"step": step, **stats, **losses, "seconds": round(time.perf_counter() - t0, 3),
                   "mean_advantage": float(sum(t.advantage for t in transitions) / max(len(transitions), 1)),
                   "skipped": int(skipped), "sample_seconds": round(t_sampled - t0, 3),
                   "update_seconds": round(t_done - t_update, 3),
                   "response_tokens": sum(len(t.response_ids) for t in transitions),
                   "stale_transitions": sum(1 for t in transitions if t.version < version),
                   "dropped_episodes": dropped}
            log.log(row)
            logger.info("%s", _format_step(row))
            if sample_every and (step == 1 or step % sample_every == 0):
                _log_sample(step, episodes)
            if progress is not None:
                progress(row)
            if args.save_every and step % args.save_every == 0:
                _save(model, tokenizer, value_head, out / f"checkpoint-{step}", task_sampler, step)
            if max_seconds and time.perf_counter() - started > max_seconds and step < args.steps:
                logger.info("stopping after step %d of %d: --max-minutes %.1f reached", step, args.steps,
                            args.max_minutes)
                break
        _save(model, tokenizer, value_head, out / "final", task_sampler, step)
    finally:
        log.close()
        if recorder is not None:
            recorder.close()
        if collector is not None:
            collector.close()
        if pool is not None:
            pool.close()
        else:
            vec.close()
    return out


def _make_recorder(args: argparse.Namespace, tokenizer: Any, sampler: str) -> Any:
    """The ``--trajectory-dir`` recorder (:class:`gem.rl.records.TrajectoryRecorder`), or ``None``."""
    directory = getattr(args, "trajectory_dir", None)
    if not directory:
        return None
    from gem.rl.records import TrajectoryRecorder

    model = str(args.model)
    sampling = {"temperature": args.temperature, "top_p": 1.0, "top_k": 0, "max_tokens": args.max_new_tokens,
                "max_prompt_tokens": args.max_prompt_tokens, "sampler": sampler,
                "chat_template": not args.no_chat_template and "concat_chat" not in args.wrappers}
    trainer = {"model": model, "env": args.env, "algo": args.algo, "steps": args.steps, "num_envs": args.num_envs,
               "group_size": args.group_size, "collect": getattr(args, "collect", "sync"),
               "staleness": getattr(args, "staleness", 0), "seed": args.seed, "output_dir": str(args.output_dir)}
    try:
        return TrajectoryRecorder(directory, model=Path(model).name if Path(model).exists() else model,
                                  wrappers=args.wrappers, sampling=sampling, tokenizer=tokenizer, sampler=sampler,
                                  trainer=trainer)
    except (ValueError, OSError) as exc:
        raise SystemExit(f"gem train: --trajectory-dir: {exc}") from None


def _make_collector(args: argparse.Namespace, tokenizer: Any, policy: Any, task_sampler: Any) -> tuple[Any, Any]:
    """The ``--collect async`` collector over a pool of envs, and the pool.

    Group ``G`` (counted over the whole run) plays ``--task-sampler``'s draw, else id ``G mod K``,
    with the reset seed sync collection gives it (``seed * 1000003 + groups per step + G``), so
    without carry-over both modes play the same tasks; episode ``e`` samples with its own stream
    (``sampling_seed(seed, e)``) when the policy takes seeds.
    """
    from itertools import count

    from gem.rl.async_collect import AsyncCollector, EpisodeRequest
    from gem.rl.collect import EnvPool, accepts_seeds, sampling_seed

    ids = list(dict.fromkeys(_env_ids(args)))
    pool = EnvPool(_wrapper_fns(args, tokenizer), seed=args.seed)
    pool.check(task_sampler.tasks if task_sampler is not None else ids)
    seeded = accepts_seeds(policy)
    per_step = args.num_envs // args.group_size

    def groups() -> Any:
        for g in count():
            env_id = task_sampler.sample(1)[0] if task_sampler is not None else ids[g % len(ids)]
            seed = args.seed * 1_000_003 + per_step + g
            yield [EpisodeRequest(env_id, seed, seed,
                                  sampling_seed(args.seed, g * args.group_size + m) if seeded else None)
                   for m in range(args.group_size)]

    collector = AsyncCollector(pool, policy, groups(), batch_size=args.num_envs,
                               slots=getattr(args, "async_slots", None) or args.num_envs,
                               staleness=getattr(args, "staleness", 0), max_turns=args.max_turns)
    return collector, pool


def load_for_training(args: argparse.Namespace, model_ref: str | None = None) -> tuple[Any, Any, Any]:
    """The model ``model_ref`` (default ``--model``) with its parameters in ``--param-dtype``, its
    tokenizer, and the dtype the forward passes compute in (``--dtype``; ``auto`` is the checkpoint's
    stored dtype; bfloat16 parameters compute in bfloat16); ``None`` means float32, no autocast."""
    import torch

    from gem.rl.hf import autocast_dtype, load_model_and_tokenizer, torch_dtype

    param_name = getattr(args, "param_dtype", "float32")
    if param_name not in PARAM_DTYPES:
        raise SystemExit(f"gem train: --param-dtype must be one of: {', '.join(PARAM_DTYPES)}; got {param_name!r}.")
    try:
        compute = torch_dtype(args.dtype)
        autocast_dtype(compute)  # rejects dtypes that cannot be computed in
    except ValueError as exc:
        raise SystemExit(f"gem train: --dtype: {exc}") from None
    model_ref = args.model if model_ref is None else model_ref
    if args.dtype == "auto":  # the checkpoint's own dtype decides the compute dtype
        model, tokenizer = load_model_and_tokenizer(model_ref, seed=args.seed, dtype="auto")
        compute = next(model.parameters()).dtype
        model.to(torch_dtype(param_name))
    else:
        model, tokenizer = load_model_and_tokenizer(model_ref, seed=args.seed, dtype=param_name)
    if compute in (None, torch.float32) and param_name != "float32":
        compute = torch_dtype(param_name)
    return model, tokenizer, (None if compute == torch.float32 else compute)


def _fill_values(policy: Any, episodes: Sequence[Any]) -> None:
    import torch

    from gem.rl.hf import sequence_forward

    trans = [t for ep in episodes for t in ep.transitions]
    with torch.no_grad(), policy.autocast():
        for start in range(0, len(trans), 16):
            chunk = trans[start:start + 16]
            _, _, values = sequence_forward(policy.model, [t.prompt_ids for t in chunk],
                                            [t.response_ids for t in chunk], policy.pad_id,
                                            policy.temperature, policy.value_head)
            for t, v in zip(chunk, values.tolist()):
                t.value = float(v)


class _TqdmHandler(logging.Handler):
    """Writes log records above the progress bar (``tqdm.write``) instead of through it."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from tqdm import tqdm

            tqdm.write(self.format(record), file=sys.stderr)
        except Exception:  # noqa: BLE001 - logging must never raise
            self.handleError(record)


def _configure_logging(args: argparse.Namespace) -> list[logging.Handler]:
    """Console (above the bar) and ``<output-dir>/train.log`` handlers on the ``gem.rl`` logger."""
    rl_logger = logging.getLogger("gem.rl")
    console = _TqdmHandler(level=logging.WARNING if args.quiet else logging.INFO)
    console.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    Path(args.output_dir).mkdir(parents=True, exist_ok=True)
    file = logging.FileHandler(Path(args.output_dir) / "train.log", encoding="utf-8")
    file.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handlers: list[logging.Handler] = [console, file]
    for h in handlers:
        rl_logger.addHandler(h)
    rl_logger.setLevel(logging.INFO)
    rl_logger.propagate = False
    return handlers


def run(args: argparse.Namespace) -> int:
    """Entry for ``gem train`` / ``python -m gem.rl.train``: threads, logging, progress bar, errors."""
    from gem.errors import GemError

    _validate(args)  # bad flags are named first, whether or not torch is installed
    try:
        torch = _import_torch()
    except GemError as exc:
        print(f"gem train: {exc}", file=sys.stderr)
        return 2
    threads = args.threads if getattr(args, "threads", None) else default_threads()
    torch.set_num_threads(threads)
    rl_logger = logging.getLogger("gem.rl")
    old_level = rl_logger.level
    handlers = _configure_logging(args)
    from tqdm import tqdm

    bar = tqdm(total=args.steps, desc="gem train", unit="step", disable=True if args.quiet else None,
               file=sys.stderr, dynamic_ncols=True)

    def progress(row: dict[str, Any]) -> None:
        bar.set_postfix(ret=f"{row['mean_return']:.3f}", success=f"{row['success_rate']:.2f}", refresh=False)
        bar.update(1)

    try:
        logger.info("torch uses %d CPU thread(s)", threads)
        out = train(args, progress=progress)
    except GemError as exc:
        print(f"gem train: {exc}", file=sys.stderr)
        return 2
    finally:
        bar.close()
        for h in handlers:
            rl_logger.removeHandler(h)
            h.close()
        rl_logger.propagate = True
        rl_logger.setLevel(old_level)
    directory = getattr(args, "trajectory_dir", None)
    records = f"; trajectories in {Path(directory) / 'episodes.jsonl'}" if directory else ""
    print(f"gem train: metrics in {out / 'metrics.csv'}, final checkpoint in {out / 'final'}{records}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
