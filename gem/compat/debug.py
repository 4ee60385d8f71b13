"""Debugging helpers: play one episode and print every step (the original GEM's ``gem.utils.debug``).

These are for looking at an env by eye, so they print to stdout (or to ``file``); library code
logs through :mod:`logging` instead. A vector env works too: ``policy`` then maps the list of
observations to a list of actions, and the episode ends when every sub-env is done.
"""

from __future__ import annotations

import sys
import time
from pprint import pformat
from typing import Any, Callable, Optional, TextIO

import numpy as np

RULE = "=" * 30


def _section(title: str, value: Any, out: TextIO) -> None:
    print(f"{'-' * 10} {title} {'-' * 10}", file=out)
    print(pformat(value), file=out)


def _print_step(obs: Any, action: Any, result: tuple, out: TextIO) -> tuple[Any, bool]:
    """Print one step; return the next observation and whether the episode is over (for vectors:
    every sub-env)."""
    next_obs, reward, terminated, truncated, _ = result
    print(RULE, file=out)
    _section("observation", obs, out)
    _section("action", action, out)
    _section("reward", reward, out)
    print("terminated:", terminated, "truncated:", truncated, file=out)
    print(RULE, file=out)
    return next_obs, bool(np.all(np.logical_or(terminated, truncated)))


def run_and_print_episode(
    env: Any,
    policy: Callable[[Any], Any],
    ignore_done: bool = False,
    max_steps: float = 1e9,
    file: Optional[TextIO] = None,
) -> None:
    """Reset ``env``, then step it with ``policy(observation)`` and print each step.

    Stops when the episode ends (unless ``ignore_done``, for vector envs that reset themselves)
    or after ``max_steps`` steps, then prints the time taken.
    """
    out = sys.stdout if file is None else file
    start = time.time()
    obs, _ = env.reset()
    steps, done = 0, False
    while not ((done and not ignore_done) or steps >= max_steps):
        steps += 1
        action = policy(obs)
        obs, done = _print_step(obs, action, env.step(action), out)
    print(f"----TIME: {time.time() - start:.2f} seconds", file=out)


async def run_and_print_episode_async(
    env: Any,
    policy: Callable[[Any], Any],
    ignore_done: bool = False,
    max_steps: float = 1e9,
    file: Optional[TextIO] = None,
) -> None:
    """:func:`run_and_print_episode` for an env whose ``reset`` and ``step`` are coroutines."""
    out = sys.stdout if file is None else file
    start = time.time()
    obs, _ = await env.reset()
    steps, done = 0, False
    while not ((done and not ignore_done) or steps >= max_steps):
        steps += 1
        action = policy(obs)
        obs, done = _print_step(obs, action, await env.step(action), out)
    print(f"----TIME: {time.time() - start:.2f} seconds", file=out)


def run_and_print_episode_with_selective_step(
    env: Any,
    policy: Callable[[Any], Any],
    ignore_done: bool = False,
    max_steps: float = 1e9,
    file: Optional[TextIO] = None,
    seed: Optional[int] = None,
) -> None:
    """:func:`run_and_print_episode` for a vector env that steps only some of its envs each time.

    ``policy(observations)`` returns one action per env; each step sends a random, non-empty
    subset of them as ``{index: action}`` (each env with probability 1/2, drawn from a generator
    seeded with ``seed``).
    """
    out = sys.stdout if file is None else file
    rng = np.random.default_rng(seed)
    start = time.time()
    obs, _ = env.reset()
    steps, done = 0, False
    while not ((done and not ignore_done) or steps >= max_steps):
        steps += 1
        actions = policy(obs)
        chosen: dict[int, Any] = {}
        while not chosen:
            chosen = {i: a for i, a in enumerate(actions) if rng.random() > 0.5}
        obs, done = _print_step(obs, chosen, env.step(chosen), out)
    print(f"----TIME: {time.time() - start:.2f} seconds", file=out)


# The name the original GEM's own game test imports.
run_and_print_episode_with_random_selection = run_and_print_episode_with_selective_step
