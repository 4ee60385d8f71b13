"""REINFORCE vs ReBN vs GRPO vs PPO on a multi-turn game, with a small neural policy on CPU.

The task is GEM's ``game:GuessTheNumber-v0-hard`` (a number in 1..50, 7 turns; hints say higher or
lower; reward 1 for a hit, 0 per hint or repeated/out-of-range guess, closeness reward when the turn
limit cuts the episode). The policy is an MLP over a featurized history (which numbers are still
possible, which were guessed, the turn), choosing one of the 50 numbers; its choice is sent to the
env as ``\\boxed{n}`` through a ``gem.make_vec`` vector env with the ``concat`` wrapper, collected with
:func:`gem.rl.collect.collect_episodes`. Each estimator of :mod:`gem.rl.estimators` is trained with
the same budget, batch, optimizer and learning rate over several seeds; no per-method tuning.

    python examples/rl_experiment.py                 # writes runs/rl_experiment/rl_curves.png, rl_results.{md,json}
    python examples/rl_experiment.py --updates 20 --seeds 1 --out runs/rl-quick   # a quick look

The figures in docs/rl.md are this script's output files, written there by the commands the page
shows (``--out docs/rl_experiment``); tests/docs/test_rl_figures.py checks that the page's tables
are the tables of those files, and that each table is :func:`results_table` of its JSON.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

import gem
from gem.rl.losses import ppo_loss, reinforce_loss, value_loss
from gem.rl.collect import Generation, assign_advantages, collect_episodes, episode_stats
from gem.wrappers.wrapper_factory import get_wrapper_fns

ALGOS = ("reinforce", "rebn", "grpo", "ppo")
_RANGE = re.compile(r"between (\d+) and (\d+)")
_HINT = re.compile(r"you guessed (\d+), and the target number is (higher|lower)")
_GUESS = re.compile(r"you guessed (\d+)")


def featurize(obs: str, low: int, high: int, max_turns: int) -> np.ndarray:
    """[possible numbers (n), guessed numbers (n), turn one-hot (max_turns + 1)] from the history text."""
    n = high - low + 1
    lo, hi = low, high
    for g, kind in _HINT.findall(obs):
        if kind == "higher":
            lo = max(lo, int(g) + 1)
        else:
            hi = min(hi, int(g) - 1)
    possible = np.zeros(n, dtype=np.float32)
    possible[max(lo - low, 0):max(hi - low + 1, 0)] = 1.0
    guessed = np.zeros(n, dtype=np.float32)
    guesses = [int(g) for g in _GUESS.findall(obs)]
    for g in guesses:
        if low <= g <= high:
            guessed[g - low] = 1.0
    turn = np.zeros(max_turns + 1, dtype=np.float32)
    turn[min(len(guesses), max_turns)] = 1.0
    return np.concatenate([possible, guessed, turn])


def mlp(inp: int, out: int, hidden: int) -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(inp, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, hidden),
                               torch.nn.Tanh(), torch.nn.Linear(hidden, out))


class MLPPolicy:
    """Samples a number from the MLP's softmax; records the action index and its log-prob."""

    def __init__(self, low: int, high: int, max_turns: int, hidden: int, critic: bool) -> None:
        self.low, self.high, self.max_turns = low, high, max_turns
        self.n = high - low + 1
        dim = 2 * self.n + max_turns + 1
        self.net = mlp(dim, self.n, hidden)
        self.critic = mlp(dim, 1, hidden) if critic else None

    def features(self, observations: Sequence[str]) -> torch.Tensor:
        return torch.from_numpy(np.stack([featurize(o, self.low, self.high, self.max_turns) for o in observations]))

    @torch.no_grad()
    def generate(self, prompts: Sequence[str]) -> list[Generation]:
        x = self.features(prompts)
        dist = torch.distributions.Categorical(logits=self.net(x))
        a = dist.sample()
        lp = dist.log_prob(a)
        v = self.critic(x).squeeze(-1) if self.critic is not None else None
        return [Generation([], [int(a[i])], [float(lp[i])], f"\\boxed{{{int(a[i]) + self.low}}}",
                           None if v is None else float(v[i])) for i in range(len(prompts))]


def run(algo: str, seed: int, args: argparse.Namespace) -> dict[str, list[float]]:
    torch.manual_seed(seed)
    env = gem.make(args.env)
    env.reset(seed=0)
    base = env.unwrapped if hasattr(env, "unwrapped") else env
    low, high, max_turns = base.min_number, base.max_number, base.max_turns
    policy = MLPPolicy(low, high, max_turns, args.hidden, critic=algo == "ppo")
    params = list(policy.net.parameters()) + (list(policy.critic.parameters()) if policy.critic else [])
    opt = torch.optim.Adam(params, lr=args.lr)
    vec = gem.make_vec(args.env, num_envs=args.batch, wrappers=get_wrapper_fns("concat"), seed=seed)
    curve: dict[str, list[float]] = {"return": [], "success": [], "turns": []}
    groups = args.batch // args.group_size
    for update in range(args.updates):
        first = seed * 10_000_000 + update * groups
        seeds = [first + i // args.group_size for i in range(args.batch)]  # GRPO groups replay one task
        eps = collect_episodes(vec, policy, seeds=seeds, max_turns=max_turns + 1)
        stats = episode_stats(eps)
        curve["return"].append(stats["mean_return"])
        curve["success"].append(stats["success_rate"])
        curve["turns"].append(stats["mean_turns"])
        assign_advantages(eps, algo, gamma=args.gamma, lam=args.lam)
        trans = [t for ep in eps for t in ep.transitions]
        x = policy.features([t.observation for t in trans])
        actions = torch.tensor([t.response_ids[0] for t in trans])
        old = torch.tensor([t.logprobs[0] for t in trans]).unsqueeze(-1)
        adv = torch.tensor([t.advantage for t in trans], dtype=torch.float32)
        mask = torch.ones(len(trans), 1)
        epochs = args.ppo_epochs if algo == "ppo" else 1
        for _ in range(epochs):
            logp = torch.distributions.Categorical(logits=policy.net(x)).log_prob(actions).unsqueeze(-1)
            if algo == "ppo":
                loss, _ = ppo_loss(logp, old, adv, mask, args.clip)
                targets = torch.tensor([t.ret for t in trans], dtype=torch.float32)
                loss = loss + 0.5 * value_loss(policy.critic(x).squeeze(-1), targets)
            else:
                loss = reinforce_loss(logp, adv, mask)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
    vec.close()
    return curve


def smooth(x: Sequence[float], k: int) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if k <= 1:
        return x
    c = np.cumsum(np.insert(x, 0, 0.0))
    out = np.empty_like(x)
    for i in range(len(x)):
        j = max(0, i - k + 1)
        out[i] = (c[i + 1] - c[j]) / (i + 1 - j)
    return out


def results_table(results: dict[str, list[dict[str, list[float]]]], last: int) -> str:
    """The Markdown table of final values: per algorithm, the mean over the last ``last`` updates of
    each seed's return, success rate and turns, as mean ± std over the seeds."""
    seeds = len(next(iter(results.values()), []))
    lines = [f"| algorithm | final return (mean ± std over {seeds} seeds) | final success rate | final turns/episode |",
             "| --- | --- | --- | --- |"]
    for algo, runs in results.items():
        fr = [np.mean(c["return"][-last:]) for c in runs]
        fs = [np.mean(c["success"][-last:]) for c in runs]
        ft = [np.mean(c["turns"][-last:]) for c in runs]
        lines.append(f"| {algo} | {np.mean(fr):.3f} ± {np.std(fr):.3f} | {np.mean(fs):.3f} ± {np.std(fs):.3f} | "
                     f"{np.mean(ft):.2f} ± {np.std(ft):.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: Any = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env", default="game:GuessTheNumber-v0-hard")
    p.add_argument("--algos", default=",".join(ALGOS))
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--updates", type=int, default=200)
    p.add_argument("--batch", type=int, default=32, help="episodes per update")
    p.add_argument("--group-size", type=int, default=4, help="episodes per task (GRPO groups); all methods get the same batches")
    p.add_argument("--gamma", type=float, default=0.9)
    p.add_argument("--lam", type=float, default=0.95)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--ppo-epochs", type=int, default=4)
    p.add_argument("--clip", type=float, default=0.2)
    p.add_argument("--last", type=int, default=20, help="final return = mean over the last N updates")
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument("--out", default="runs/rl_experiment",
                   help="the run directory: rl_curves.png, rl_results.md and rl_results.json go there")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, list[dict[str, list[float]]]] = {}
    t0 = time.perf_counter()
    for algo in algos:
        results[algo] = []
        for seed in range(args.seeds):
            s = time.perf_counter()
            results[algo].append(run(algo, seed, args))
            fin = np.mean(results[algo][-1]["return"][-args.last:])
            print(f"{algo:9s} seed {seed}: final return {fin:.3f} ({time.perf_counter() - s:.1f}s)", flush=True)
    elapsed = time.perf_counter() - t0
    (out / "rl_results.json").write_text(
        json.dumps({"args": vars(args), "seconds": round(elapsed, 1), "results": results})
    )

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    episodes_per_update = args.batch
    for algo in algos:
        for ax, key in zip(axes, ("return", "success")):
            curves = np.array([smooth(c[key], 10) for c in results[algo]])
            x = np.arange(curves.shape[1]) * episodes_per_update
            m, sd = curves.mean(0), curves.std(0)
            ax.plot(x, m, label=algo)
            ax.fill_between(x, m - sd, m + sd, alpha=0.2)
    axes[0].set_ylabel("mean episode return")
    axes[1].set_ylabel("success rate")
    for ax in axes:
        ax.set_xlabel("training episodes")
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.suptitle(f"{args.env}: MLP policy, {args.seeds} seeds (mean ± std, 10-update moving average)")
    fig.tight_layout()
    fig.savefig(out / "rl_curves.png", dpi=110)

    table = results_table(results, args.last)
    (out / "rl_results.md").write_text(table + f"\n{args.updates} updates x {args.batch} episodes, {elapsed:.0f} s in all.\n")
    print(table)
    print(f"total {elapsed:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
