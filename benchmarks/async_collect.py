"""Sync vs async episode collection in gem.rl on a long-tail multi-turn tool env, same episodes.

The env, ``bench:LongTailTool-v0`` (defined here), plays a task whose length is drawn from its seed:
1 to 20 turns with ``P(L) ~ 1/L`` (most episodes are short, a few run 20 turns). Each step is a real
sandboxed Python call (:class:`gem.sandbox.Sandbox`): the program reads the action, prints a digest
of it, and waits the tool's latency (drawn from the seed, ``--latency`` seconds on average), as a
remote tool or test run would. The policy is fixed: the tiny random GPT-2 of ``gem train --model
tiny``, sampling every turn of every episode on its own seeded stream, so the same seeds give the
same episodes whatever shares their batch.

Both modes play the same ``--episodes`` episodes (same env seeds, same sampling seeds), that is the
same generations and the same tool calls:

* ``sync``: :func:`gem.rl.collect.collect_episodes` in batches of ``--slots`` episodes on the
  default vector env (``gem.make_vec``, the one ``gem train`` uses): each turn generates for the
  batch, then steps its envs one after the other; the batch ends with its longest episode.
* ``sync_threads``: the same on the thread vector env (the batch's steps run concurrently).
* ``async``: :class:`gem.rl.async_collect.AsyncCollector` with ``--slots`` episodes in flight: steps
  run concurrently, the policy generates for the episodes whose replies have come, and a finished
  episode's slot starts the next one at once.

The modes alternate in one process for ``--rounds`` rounds (the machine may be shared: compare
ratios within a round); the JSON gives each mode's median seconds, the median per-round ratios,
whether every round's episodes were identical token for token (response ids, rewards, lengths), the
largest log-prob difference seen (batched float32 arithmetic may differ in the last bits), and the
load average.

    python benchmarks/async_collect.py --quick --json     # under 3 minutes on 2 cores
    python benchmarks/async_collect.py --json              # 64 episodes, 5 rounds
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

from gem.core import Env

ENV_ID = "bench:LongTailTool-v0"
MAX_TURNS = 20

# the tool: a digest of the action (the code runs in the sandbox), then the tool's latency
TOOL = """
import sys, time, zlib
data = sys.stdin.read()
head, _, action = data.partition("\\n")
print(zlib.crc32(action.encode("utf-8", "replace")) % 1000)
time.sleep(float(head))
"""

_SANDBOX: Any = None


def sandbox() -> Any:
    """One warm sandbox shared by every env of the benchmark (its runs are independent)."""
    global _SANDBOX
    if _SANDBOX is None:
        from gem.sandbox import Sandbox

        _SANDBOX = Sandbox()
    return _SANDBOX


def episode_length(rng: Any) -> int:
    """1..20 turns, ``P(L) ~ 1/L``: the long tail."""
    weights = [1.0 / n for n in range(1, MAX_TURNS + 1)]
    total = sum(weights)
    return int(rng.choice(range(1, MAX_TURNS + 1), p=[w / total for w in weights]))


class LongTailToolEnv(Env):
    """A multi-turn task of seeded length; every step is a sandboxed tool call with real latency.

    The reward is earned on the last turn: 1 when the tool's digests of the episode's actions sum to
    an even number (a coin the policy's tokens decide), else 0. The same seed and actions give the
    same observations and rewards.
    """

    def __init__(self, latency: float = 0.1, seed: int | None = None) -> None:
        self.latency = float(latency)
        self.length, self.turn, self.total = 1, 0, 0
        self.delays: list[float] = []

    def reset(self, seed: int | None = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        self.length = episode_length(self.np_random)
        self.delays = [float(d) for d in self.np_random.uniform(0.5 * self.latency, 1.5 * self.latency, self.length)]
        self.turn, self.total = 0, 0
        return "Call the tool with any text; it answers with a number. Turn 1.", {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        result = sandbox().run(TOOL, stdin=f"{self.delays[self.turn]}\n{action}", timeout=10)
        digest = int(result.stdout.strip() or 0) if result.ok else 0
        self.total += digest
        self.turn += 1
        done = self.turn >= self.length
        reward = float(self.total % 2 == 0) if done else 0.0
        return f"Tool answered {digest}. Turn {self.turn + 1}.", reward, done, False, {}

    def sample_random_action(self) -> str:
        return "call"



def _policy(max_new_tokens: int) -> Any:
    from gem.rl.hf import HFPolicy, build_tiny_model
    from gem.utils.tiny_tokenizer import get_tiny_tokenizer

    tokenizer = get_tiny_tokenizer()
    return HFPolicy(build_tiny_model(tokenizer, seed=0), tokenizer, max_new_tokens=max_new_tokens, sampler="prefix")


class Counted:
    """The policy, counting its generate calls, rows and seconds."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.calls, self.rows, self.seconds = 0, 0, 0.0

    def generate(self, prompts: Any, seeds: Any = None) -> Any:
        t0 = time.perf_counter()
        out = self.policy.generate(prompts, seeds=seeds)
        self.calls, self.rows, self.seconds = self.calls + 1, self.rows + len(prompts), self.seconds + time.perf_counter() - t0
        return out

    def take(self) -> dict[str, float]:
        out = {"generate_calls": self.calls, "generated_rows": self.rows, "generate_seconds": round(self.seconds, 3)}
        self.calls, self.rows, self.seconds = 0, 0, 0.0
        return out


def run_sync(policy: Any, seeds: list[int], keys: list[int], slots: int, backend: str) -> list[Any]:
    import gem
    from gem.rl.collect import collect_episodes

    vec = gem.make_vec(ENV_ID, num_envs=slots, **({} if backend == "sync" else {"backend": backend}))
    try:
        out = []
        for start in range(0, len(seeds), slots):
            out += collect_episodes(vec, policy, seeds=seeds[start:start + slots], max_turns=MAX_TURNS,
                                    sample_seeds=keys[start:start + slots])
        for i, ep in enumerate(out):
            ep.env_index = i
        return out
    finally:
        vec.close()


def run_async(policy: Any, seeds: list[int], keys: list[int], slots: int,
              min_batch: int | None = None) -> tuple[list[Any], dict[str, int]]:
    from gem.rl.async_collect import AsyncCollector, EpisodeRequest
    from gem.rl.collect import EnvPool

    groups = [[EpisodeRequest(ENV_ID, s, s, k)] for s, k in zip(seeds, keys)]
    pool = EnvPool()
    try:
        with AsyncCollector(pool, policy, groups, batch_size=len(seeds), slots=slots, max_turns=MAX_TURNS,
                            min_batch=min_batch) as c:
            out = c.collect()
            return sorted(out, key=lambda ep: ep.env_index), dict(c.stats)
    finally:
        pool.close()


def compare(a: list[Any], b: list[Any]) -> tuple[bool, float]:
    """Whether two runs played the same episodes token for token; the largest log-prob gap."""
    same = len(a) == len(b)
    gap = 0.0
    for x, y in zip(a, b):
        same = same and len(x) == len(y) and x.rewards == y.rewards
        for s, t in zip(x.transitions, y.transitions):
            same = same and s.response_ids == t.response_ids and s.prompt_ids == t.prompt_ids
            gap = max([gap, *(abs(p - q) for p, q in zip(s.logprobs, t.logprobs))])
    return same, gap


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--episodes", type=int, default=64)
    p.add_argument("--slots", type=int, default=8, help="episodes per sync batch = async episodes in flight")
    p.add_argument("--rounds", type=int, default=5, help="sync and async alternate this many times")
    p.add_argument("--latency", type=float, default=0.1, help="mean seconds a tool call waits")
    p.add_argument("--max-new-tokens", type=int, default=16)
    p.add_argument("--min-batch", type=int, default=None,
                   help="async: generate once this many episodes await an action (default: --slots)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="24 episodes, 3 rounds (under 3 minutes on 2 cores)")
    p.add_argument("--no-threads-baseline", action="store_true", help="skip the sync run on the thread vector env")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    if args.quick:
        args.episodes, args.rounds = 24, 3
    for name in ("episodes", "slots", "rounds", "max_new_tokens"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.latency < 0:
        p.error("--latency must be 0 or more")

    import torch

    import gem
    from gem.rl.collect import sampling_seed

    torch.set_num_threads(1)
    gem.register(ENV_ID, lambda **kw: LongTailToolEnv(latency=args.latency, **kw), override=True,
                 description="benchmarks/async_collect.py: seeded 1-20 turns, a sandboxed tool call per step")
    policy = Counted(_policy(args.max_new_tokens))
    seeds = [args.seed * 100_003 + i for i in range(args.episodes)]
    keys = [sampling_seed(args.seed, i) for i in range(args.episodes)]
    load_before = os.getloadavg()
    sandbox().run("pass")  # start the warm worker outside the timings
    modes = ["sync", "async"] + ([] if args.no_threads_baseline else ["sync_threads"])
    times: dict[str, list[float]] = {m: [] for m in modes}
    identical, gap, reference = True, 0.0, None
    stats: dict[str, Any] = {}
    try:
        for r in range(args.rounds):
            for mode in modes:
                t0 = time.perf_counter()
                if mode == "async":
                    eps, collector = run_async(policy, seeds, keys, args.slots, args.min_batch)
                    stats["async_refills"] = collector["refills"]
                else:
                    eps = run_sync(policy, seeds, keys, args.slots, "sync" if mode == "sync" else "thread")
                times[mode].append(time.perf_counter() - t0)
                stats[mode] = policy.take()
                if reference is None:
                    reference = eps
                else:
                    same, g = compare(reference, eps)
                    identical, gap = identical and same, max(gap, g)
            if not args.json:
                print(f"round {r + 1}: " + ", ".join(f"{m} {times[m][-1]:.2f}s" for m in modes), file=sys.stderr)
    finally:
        if _SANDBOX is not None:
            _SANDBOX.close()
    lengths = [len(ep) for ep in reference]
    ratio = [s / a for s, a in zip(times["sync"], times["async"])]
    result: dict[str, Any] = {
        "sync_seconds": round(statistics.median(times["sync"]), 3),
        "async_seconds": round(statistics.median(times["async"]), 3),
        "speedup": round(statistics.median(ratio), 3),
        "identical_episodes": identical,
        "max_logprob_diff": gap,
        "episodes": args.episodes, "slots": args.slots, "rounds": args.rounds, "latency": args.latency,
        "turns": sum(lengths), "mean_turns": round(sum(lengths) / len(lengths), 2), "max_turns": max(lengths),
        "round_speedups": [round(x, 3) for x in ratio],
        "last_round": stats,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "cpu_count": os.cpu_count(),
    }
    if "sync_threads" in times:
        threads = [s / a for s, a in zip(times["sync_threads"], times["async"])]
        result["sync_threads_seconds"] = round(statistics.median(times["sync_threads"]), 3)
        result["speedup_vs_sync_threads"] = round(statistics.median(threads), 3)
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k}: {v}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
