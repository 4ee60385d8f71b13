"""Reinforcement learning on GEM envs: return/advantage estimators, losses, rollouts, a trainer.

* :mod:`gem.rl.estimators` (NumPy only): per-turn discounted returns, Return Batch Normalization
  (ReBN), GRPO group normalization, GAE over turns with a turn-level value.
* :mod:`gem.rl.losses` (torch, imported when used): REINFORCE and clipped PPO policy losses over token
  masks, truncated importance weights for stale turns, and the value loss.
* :mod:`gem.rl.collect`: multi-turn episodes from a vector env, as per-turn transitions (``gem.rl.rollout`` is its former path).
* :mod:`gem.rl.async_collect`: the same episodes collected asynchronously (concurrent env steps,
  continuous batching, bounded staleness; ``gem train --collect async``).
* :mod:`gem.rl.models`: ``--model`` resolution; GGUF files become cached ``transformers`` checkpoints.
* :mod:`gem.rl.sampling` (torch): ``model.generate`` and a static-KV-cache decoding loop.
* :mod:`gem.rl.task_sampler`: which env id each group plays (uniform, sequential, learnability per cost).
* :mod:`gem.rl.train` (``python -m gem.rl.train`` / ``gem train``): a small reference trainer.
* :mod:`gem.rl.demo` (``python -m gem.rl.demo``): ReBN, GRPO and REINFORCE on one env, with curves.

Importing this package imports neither torch nor transformers.
"""

from gem.rl.estimators import (
    ALGORITHMS,
    compute_advantages,
    discounted_returns,
    gae,
    grpo_advantages,
    rebn,
)

__all__ = ["ALGORITHMS", "compute_advantages", "discounted_returns", "gae", "grpo_advantages", "rebn"]
