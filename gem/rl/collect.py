"""Collect multi-turn episodes from a GEM vector env as per-turn transitions.

A *policy* is any object with ``generate(prompts: list[str]) -> list[Generation]`` (see
:class:`gem.rl.hf.HFPolicy` for a ``transformers`` causal LM, :class:`gem.rl.vllm_policy.VLLMPolicy`
for vLLM). :func:`collect_episodes` resets every env of the vector (optionally with per-env seeds, so
several envs replay the same task for GRPO groups), then steps only the envs whose episode is still
running until every one has ended, and returns one :class:`Trajectory` per env. The model is prompted with
:func:`gem.utils.prompting.user_content` of each observation and its info (the env's instruction, e.g.
``Put your final answer within \\boxed{}.``, lives in ``info["suffix"]``). Each turn becomes a :class:`Transition` holding the prompt and
response tokens, the sampling log-probs, the turn's reward and, after :func:`assign_advantages`, its
discounted return and advantage.

This module imports neither torch nor transformers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional, Protocol

import numpy as np

from gem.rl.estimators import compute_advantages
from gem.rollout import EpisodeRecorder
from gem.utils.prompting import user_content

logger = logging.getLogger(__name__)


@dataclass
class Generation:
    """One sampled response: token ids, their log-probs under the sampler, the decoded text."""

    prompt_ids: list[int]
    response_ids: list[int]
    logprobs: list[float]
    text: str
    value: float | None = None


class Policy(Protocol):
    def generate(self, prompts: Sequence[str]) -> list[Generation]:
        """One :class:`Generation` per prompt."""


@dataclass
class Transition:
    """One turn of one episode (``prompt``: the user-turn text the policy was given)."""

    observation: str
    action: str
    prompt_ids: list[int]
    response_ids: list[int]
    logprobs: list[float]
    reward: float
    turn: int
    value: float | None = None
    ret: float = 0.0
    advantage: float = 0.0
    prompt: str = ""
    seconds: float = 0.0  # this turn's share of the wall time: generate + env step, split over the running episodes


@dataclass
class Trajectory:
    """One episode as training data: its transitions, the env it ran in and its group (task).

    (The episode loop's own record is :class:`gem.rollout.Episode`; this is what a trainer needs
    of it, token by token.)"""

    env_index: int
    env_id: str
    group: Hashable
    transitions: list[Transition] = field(default_factory=list)
    terminated: bool = False
    truncated: bool = False
    success: bool | None = None
    infra_error: dict[str, Any] | None = None  # a failure of GEM's machinery, not the policy's

    @property
    def rewards(self) -> list[float]:
        return [t.reward for t in self.transitions]

    @property
    def total_reward(self) -> float:
        return float(sum(self.rewards))

    def __len__(self) -> int:
        return len(self.transitions)


def collect_episodes(
    vec_env: Any,
    policy: Policy,
    seeds: Sequence[int | None] | None = None,
    groups: Sequence[Hashable] | None = None,
    max_turns: int = 100,
) -> list[Trajectory]:
    """Play one episode in every env of ``vec_env`` with ``policy``; return them in env order.

    Args:
        vec_env: a :class:`gem.vector.VectorEnv` (``gem.make_vec``).
        policy: maps a batch of observations to :class:`Generation` s.
        seeds: one reset seed per env (repeat a seed to replay a task); ``None`` continues each env's
            stream.
        groups: the group id of each env's episode (defaults to its seed, else its index).
        max_turns: a safety cap; an episode still running after it is marked ``truncated``.
    """
    n = vec_env.num_envs
    if max_turns < 1:
        raise ValueError(f"max_turns must be at least 1, got {max_turns!r}.")
    if seeds is not None and len(seeds) != n:
        raise ValueError(f"Got {len(seeds)} seeds for {n} envs.")
    if groups is None:
        groups = list(seeds) if seeds is not None else list(range(n))
    elif len(groups) != n:
        raise ValueError(f"Got {len(groups)} group ids for {n} envs.")
    obs, infos = vec_env.reset(seed=list(seeds) if seeds is not None else None)
    episodes = [Trajectory(i, vec_env.env_ids[i], groups[i]) for i in range(n)]
    # The bookkeeping every GEM loop shares (success, truncation, tool bonus, infra failures).
    levels = _success_rewards(vec_env)
    books = [
        EpisodeRecorder(
            env_id=vec_env.env_ids[i], seed=None if seeds is None else seeds[i], max_steps=max_turns,
            record=False, success_reward=levels[i],
        )
        for i in range(n)
    ]
    for i in range(n):
        books[i].start(obs[i], infos[i])
    current = list(obs)
    prompts = [user_content(o, info) for o, info in zip(obs, infos)]
    active = list(range(n))
    turn = 0
    while active:
        t_turn = time.perf_counter()
        gens = policy.generate([prompts[i] for i in active])
        if len(gens) != len(active):
            raise RuntimeError(f"policy.generate returned {len(gens)} generations for {len(active)} prompts.")
        actions = {i: g.text for i, g in zip(active, gens)}
        next_obs, rewards, terminated, truncated, infos = vec_env.step(actions)
        share = (time.perf_counter() - t_turn) / len(active)
        for k, i in enumerate(active):
            g = gens[k]
            episodes[i].transitions.append(Transition(
                observation=current[i], action=g.text, prompt_ids=list(g.prompt_ids),
                response_ids=list(g.response_ids), logprobs=list(g.logprobs), reward=float(rewards[k]),
                turn=turn, value=g.value, prompt=prompts[i], seconds=share,
            ))
            ended = bool(terminated[k] or truncated[k])
            final = infos[k].get("final_info", infos[k]) if ended else infos[k]
            books[i].begin_turn()
            books[i].add_turn(g.text, next_obs[k], rewards[k], terminated[k], truncated[k], final)
            if not ended:
                current[i] = next_obs[k]
                prompts[i] = user_content(next_obs[k], infos[k])
        active = [i for i in active if books[i].running]
        turn += 1
    for i, ep in enumerate(episodes):
        book = books[i].finish()
        ep.terminated, ep.truncated = book.terminated, book.truncated
        ep.success = book.success
        ep.infra_error = book.infra_error
        if book.truncated and not book.terminated and not books[i].ended:
            logger.debug("episode in env %d cut at max_turns=%d", i, max_turns)
    return episodes


class EnvPool:
    """Envs kept per id and lent out as a vector env, so each step can play another mix of ids.

    ``vector(env_ids)`` returns a :class:`gem.vector.SyncVectorEnv` whose ``k``-th env of an id is
    that id's ``k``-th env in the pool, built on first need (``gem.make`` with ``wrappers``, seeded
    ``seed`` plus its build order, as ``make_vec`` seeds its members). The pool owns the envs: close
    the pool, not the vectors it lends.
    """

    def __init__(self, wrappers: Sequence[Any] = (), seed: int = 0) -> None:
        self.wrappers = tuple(wrappers)
        self.seed = seed
        self._envs: dict[str, list[Any]] = {}
        self._built = 0

    def check(self, env_ids: Sequence[str]) -> None:
        """Raise the registry's ``KeyError`` (with suggestions) for an unknown id, building nothing."""
        from gem.envs.registration import interop_spec, spec

        for env_id in dict.fromkeys(env_ids):
            if interop_spec(env_id) is None:
                spec(env_id)

    def vector(self, env_ids: Sequence[str]) -> Any:
        """A vector env over pooled envs of ``env_ids`` (in that order)."""
        from gem.vector.env_factory import EnvFactory
        from gem.vector.sync_vector_env import SyncVectorEnv

        used: dict[str, int] = {}
        fns = []
        for env_id in env_ids:
            k = used.get(env_id, 0)
            used[env_id] = k + 1
            envs = self._envs.setdefault(env_id, [])
            if k == len(envs):
                envs.append(EnvFactory(env_id, {"seed": self.seed + self._built}, self.wrappers)())
                self._built += 1
            fns.append(_Lent(envs[k]))
        return SyncVectorEnv(list(env_ids), fns)

    def close(self) -> None:
        for envs in self._envs.values():
            for env in envs:
                env.close()
        self._envs.clear()


class _Lent:
    """An env factory that hands out one existing env (the pool's)."""

    def __init__(self, env: Any) -> None:
        self.env = env

    def __call__(self) -> Any:
        return self.env


def _success_rewards(vec_env: Any) -> list[Optional[float]]:
    """Each env's success level, in one ``get_attr`` call (``None``: the default, when the vector
    env cannot tell)."""
    try:
        return [float(level) for level in vec_env.get_attr("success_reward")]
    except Exception:  # noqa: BLE001 -- backends without get_attr, or envs without the attribute
        return [None] * vec_env.num_envs


def assign_advantages(
    episodes: Sequence[Trajectory], algorithm: str, gamma: float = 1.0, lam: float = 1.0
) -> None:
    """Fill ``ret`` and ``advantage`` of every transition with ``algorithm`` (see ``compute_advantages``).

    ``ppo`` uses each transition's ``value`` (from the policy's critic).
    """
    rewards = [ep.rewards for ep in episodes]
    values = None
    if algorithm == "ppo":
        values = [[t.value if t.value is not None else 0.0 for t in ep.transitions] for ep in episodes]
        if any(t.value is None for ep in episodes for t in ep.transitions):
            raise ValueError("ppo needs a value for every transition: give the policy a value head.")
    advs, rets = compute_advantages(
        algorithm, rewards, gamma=gamma, group_ids=[ep.group for ep in episodes], values=values, lam=lam
    )
    for ep, a, r in zip(episodes, advs, rets):
        for t, adv, ret in zip(ep.transitions, a, r):
            t.advantage, t.ret = float(adv), float(ret)


def episode_stats(episodes: Sequence[Trajectory]) -> dict[str, float]:
    """Mean return, success rate (over episodes that report it), mean turns and transitions."""
    if not episodes:
        return {"mean_return": 0.0, "success_rate": 0.0, "mean_turns": 0.0, "transitions": 0}
    known = [ep.success for ep in episodes if ep.success is not None]
    return {
        "mean_return": float(np.mean([ep.total_reward for ep in episodes])),
        "success_rate": float(np.mean(known)) if known else 0.0,
        "mean_turns": float(np.mean([len(ep) for ep in episodes])),
        "transitions": int(sum(len(ep) for ep in episodes)),
    }
