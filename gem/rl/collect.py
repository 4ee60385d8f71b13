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

``sample_seeds`` gives each episode its own sampling stream: turn ``t`` of the episode with key
``k`` is sampled with the seed :func:`sampling_seed` ``(k, t)``, whatever else shares its batch, so
the same seeds give the same episodes token for token (policies take ``seeds=`` in ``generate``).
:mod:`gem.rl.async_collect` collects the same episodes without waiting for the longest one.

This module imports neither torch nor transformers.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Protocol

import numpy as np

from gem.rl.estimators import compute_advantages
from gem.rollout import EpisodeRecorder
from gem.utils.prompting import user_content

if TYPE_CHECKING:  # not a name of this module: the one Episode class is the episode loop's
    from gem.rollout import Episode

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
        """One :class:`Generation` per prompt (a policy may also take ``seeds=``, one per prompt)."""


def sampling_seed(*parts: int) -> int:
    """A 63-bit seed mixed from ``parts`` (``numpy.random.SeedSequence``): e.g. (run seed, episode
    index) for an episode's key, (key, turn) for one turn's sampling stream."""
    words = [int(p) % 2**63 for p in parts]
    return int(np.random.SeedSequence(words).generate_state(1, np.uint64)[0]) >> 1


def accepts_seeds(policy: Any) -> bool:
    """Whether ``policy.generate`` takes ``seeds=`` (one sampling seed per prompt)."""
    try:
        params = inspect.signature(policy.generate).parameters
    except (TypeError, ValueError):
        return False
    return "seeds" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def generate(policy: Any, prompts: Sequence[str], seeds: Sequence[int] | None = None) -> list[Generation]:
    """``policy.generate`` (with ``seeds`` when given), checked to return one generation per prompt."""
    gens = policy.generate(list(prompts)) if seeds is None else policy.generate(list(prompts), seeds=list(seeds))
    if len(gens) != len(prompts):
        raise RuntimeError(f"policy.generate returned {len(gens)} generations for {len(prompts)} prompts.")
    return gens


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
    version: int = 0  # the policy version that sampled this turn (async collection; 0 in sync collection)


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
    kwargs: dict[str, Any] | None = None  # what the env was made with (gem.make's kwargs), when known
    sample_seed: int | None = None  # the episode's sampling key (turn t: sampling_seed(key, t)), if any
    episode: Episode | None = None  # the episode loop's record (turns, observations, costs), after finish

    @property
    def seed(self) -> int | None:
        """The reset seed (``None``: the env's own stream, or not finished yet)."""
        return None if self.episode is None else self.episode.seed

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
    sample_seeds: Sequence[int] | None = None,
) -> list[Trajectory]:
    """Play one episode in every env of ``vec_env`` with ``policy``; return them in env order.

    Args:
        vec_env: a :class:`gem.vector.VectorEnv` (``gem.make_vec``).
        policy: maps a batch of observations to :class:`Generation` s.
        seeds: one reset seed per env (repeat a seed to replay a task); ``None`` continues each env's
            stream.
        groups: the group id of each env's episode (defaults to its seed, else its index).
        max_turns: a safety cap; an episode still running after it is marked ``truncated``.
        sample_seeds: one sampling key per env's episode: turn ``t`` is sampled with
            ``sampling_seed(key, t)`` (the policy must take ``seeds=``); ``None``: the policy's own
            stream, shared by the batch.
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
    _check_sample_seeds(policy, sample_seeds, n)
    obs, infos = vec_env.reset(seed=list(seeds) if seeds is not None else None)
    # The bookkeeping every GEM loop shares (success, truncation, tool bonus, infra failures).
    levels = _success_rewards(vec_env)
    live = [
        RunningEpisode(
            Trajectory(i, vec_env.env_ids[i], groups[i], kwargs=_env_kwargs(vec_env, i)), obs[i], infos[i], max_turns,
            seed=None if seeds is None else seeds[i], success_reward=levels[i],
            sample_seed=None if sample_seeds is None else sample_seeds[i],
        )
        for i in range(n)
    ]
    active = list(range(n))
    while active:
        t_turn = time.perf_counter()
        gens = generate(policy, [live[i].prompt for i in active], _turn_seeds([live[i] for i in active]))
        actions = {i: g.text for i, g in zip(active, gens)}
        next_obs, rewards, terminated, truncated, infos = vec_env.step(actions)
        share = (time.perf_counter() - t_turn) / len(active)
        for k, i in enumerate(active):
            live[i].record(gens[k], next_obs[k], rewards[k], terminated[k], truncated[k], infos[k], share)
        active = [i for i in active if live[i].running]
    return [ep.finish() for ep in live]


def _env_kwargs(vec_env: Any, i: int) -> dict[str, Any] | None:
    """The kwargs env ``i`` of ``vec_env`` was made with (its :class:`gem.vector.EnvFactory`'s, or a
    pooled env's); ``None`` when the vector env does not say."""
    fns = getattr(vec_env, "env_fns", None)
    fn = fns[i] if fns is not None and i < len(fns) else None
    kwargs = getattr(fn, "kwargs", None)
    if not isinstance(kwargs, dict):
        return None
    seed = getattr(fn, "seed", None)  # the construction seed (EnvFactory.seed): make(id, seed=...) takes it
    return {**kwargs, "seed": seed} if seed is not None else dict(kwargs)


def _check_sample_seeds(policy: Any, sample_seeds: Sequence[int] | None, n: int) -> None:
    if sample_seeds is None:
        return
    if len(sample_seeds) != n:
        raise ValueError(f"Got {len(sample_seeds)} sample seeds for {n} episodes.")
    if not accepts_seeds(policy):
        raise ValueError(f"sample_seeds needs a policy whose generate takes seeds=; "
                         f"{type(policy).__name__}.generate does not.")


def _turn_seeds(episodes: Sequence[RunningEpisode]) -> list[int] | None:
    if not episodes or episodes[0].sample_seed is None:
        return None
    return [sampling_seed(ep.sample_seed, len(ep.trajectory)) for ep in episodes]


class RunningEpisode:
    """One episode in flight: its :class:`Trajectory`, the bookkeeping every GEM loop shares
    (:class:`gem.rollout.EpisodeRecorder`: success, truncation, tool bonus, infra failures) and the
    prompt the policy sees next. The sync and async collectors both record turns through it."""

    def __init__(self, trajectory: Trajectory, observation: str, info: dict[str, Any], max_turns: int,
                 seed: int | None = None, success_reward: float | None = None,
                 sample_seed: int | None = None) -> None:
        self.trajectory = trajectory
        self.sample_seed = trajectory.sample_seed = sample_seed
        # record=True keeps the texts for the trajectory record; they are the transitions' own strings
        self.book = EpisodeRecorder(env_id=trajectory.env_id, seed=seed, max_steps=max_turns, record=True,
                                    success_reward=success_reward)
        self.book.start(observation, info)
        self.observation = observation
        self.prompt = user_content(observation, info)

    @property
    def running(self) -> bool:
        return self.book.running

    def record(self, gen: Generation, next_obs: str, reward: float, terminated: bool, truncated: bool,
               info: dict[str, Any], seconds: float, version: int = 0) -> None:
        """The turn's generation and the env's answer to it."""
        self.trajectory.transitions.append(Transition(
            observation=self.observation, action=gen.text, prompt_ids=list(gen.prompt_ids),
            response_ids=list(gen.response_ids), logprobs=list(gen.logprobs), reward=float(reward),
            turn=len(self.trajectory.transitions), value=gen.value, prompt=self.prompt, seconds=seconds,
            version=version,
        ))
        ended = bool(terminated or truncated)
        final = info.get("final_info", info) if ended else info
        # a vector env that reset the finished env at once returns the next episode's first
        # observation; the episode's own last one is under final_obs
        last_obs = info.get("final_obs", next_obs) if ended else next_obs
        usage = {"prompt_tokens": len(gen.prompt_ids), "completion_tokens": len(gen.response_ids)}
        self.book.begin_turn()
        self.book.add_turn(gen.text, last_obs, reward, terminated, truncated, final, call={"usage": usage})
        if not ended:
            self.observation = next_obs
            self.prompt = user_content(next_obs, info)

    def finish(self) -> Trajectory:
        """Decide success and truncation; returns the trajectory."""
        book = self.book.finish()
        ep = self.trajectory
        ep.terminated, ep.truncated = book.terminated, book.truncated
        ep.success = book.success
        ep.infra_error = book.infra_error
        ep.episode = book
        return ep


class EnvPool:
    """Envs kept per id and lent out as a vector env, so each step can play another mix of ids.

    ``vector(env_ids)`` returns a :class:`gem.vector.SyncVectorEnv` whose ``k``-th env of an id is
    that id's ``k``-th env in the pool, built on first need (``gem.make`` with ``wrappers``, seeded
    ``seed`` plus its build order, as ``make_vec`` seeds its members). The pool owns the envs: close
    the pool, not the vectors it lends. :meth:`acquire` and :meth:`release` lend single envs instead
    (the async collector's way); a pool serves one of the two ways, not both.
    """

    def __init__(self, wrappers: Sequence[Any] = (), seed: int = 0) -> None:
        self.wrappers = tuple(wrappers)
        self.seed = seed
        self._envs: dict[str, list[Any]] = {}
        self._idle: dict[str, list[Any]] = {}
        self._kwargs: dict[int, dict[str, Any]] = {}  # by id(env): the pool holds its envs until close
        self._built = 0

    def _build(self, env_id: str) -> Any:
        from gem.vector.env_factory import EnvFactory

        kwargs = {"seed": self.seed + self._built}
        env = EnvFactory(env_id, kwargs, self.wrappers)()
        self._built += 1
        self._envs.setdefault(env_id, []).append(env)
        self._kwargs[id(env)] = kwargs
        return env

    def kwargs_of(self, env: Any) -> dict[str, Any] | None:
        """The kwargs the pool made ``env`` with (``gem.make(env_id, **kwargs)``)."""
        kwargs = self._kwargs.get(id(env))
        return None if kwargs is None else dict(kwargs)

    def acquire(self, env_id: str) -> Any:
        """An env of ``env_id`` no one else holds (an idle one, else a new one)."""
        idle = self._idle.get(env_id)
        return idle.pop() if idle else self._build(env_id)

    def release(self, env_id: str, env: Any) -> None:
        """Give back an env from :meth:`acquire`."""
        self._idle.setdefault(env_id, []).append(env)

    def check(self, env_ids: Sequence[str]) -> None:
        """Raise the registry's ``KeyError`` (with suggestions) for an unknown id, building nothing."""
        from gem.envs.registration import interop_spec, spec

        for env_id in dict.fromkeys(env_ids):
            if interop_spec(env_id) is None:
                spec(env_id)

    def vector(self, env_ids: Sequence[str]) -> Any:
        """A vector env over pooled envs of ``env_ids`` (in that order)."""
        from gem.vector.sync_vector_env import SyncVectorEnv

        used: dict[str, int] = {}
        fns = []
        for env_id in env_ids:
            k = used.get(env_id, 0)
            used[env_id] = k + 1
            envs = self._envs.setdefault(env_id, [])
            if k == len(envs):
                self._build(env_id)
            fns.append(_Lent(envs[k], self._kwargs.get(id(envs[k]))))
        return SyncVectorEnv(list(env_ids), fns)

    def close(self) -> None:
        for envs in self._envs.values():
            for env in envs:
                env.close()
        self._envs.clear()
        self._idle.clear()
        self._kwargs.clear()


class _Lent:
    """An env factory that hands out one existing env (the pool's); ``kwargs``: what it was made with."""

    def __init__(self, env: Any, kwargs: dict[str, Any] | None = None) -> None:
        self.env = env
        self.kwargs = kwargs

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
