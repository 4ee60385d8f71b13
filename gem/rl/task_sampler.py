"""Which task each group of a training step plays: uniform, in order, or by learnability per cost.

A *task* is an env id as ``gem train --env`` takes it; a preset is an id of its own
(``game:GuessTheNumber-v0-easy``), so ``--env A,B,C`` over several envs and presets gives three
tasks. A sampler picks one task per group (``sample(n)``: the ``--group-size`` episodes of a group
replay one seed of one task), is told what each group did (``update(task, successes, cost)``), and
saves and restores all it knows, its random generator included (``state_dict()`` /
``load_state_dict()``), so a resumed run draws the tasks the uninterrupted run would have drawn.

* :class:`UniformSampler`: every task equally likely, independently per group.
* :class:`SequentialSampler`: the tasks in order, round robin, continuing across steps.
* :class:`LearnabilitySampler`: tasks weighted by the chance that a group of ``G`` episodes gives a
  learning signal, per unit of cost (OpenEnv's RFC 013 samples tasks this way). A GRPO group has
  an advantage that is not zero only when its episodes do not all get the same reward; with a
  per-task success rate ``p`` that chance is ``1 - p^G - (1-p)^G`` (:func:`learnability`): zero
  for a task the policy always fails or always solves, highest at ``p = 1/2``. The weight is that
  chance divided by the task's running mean cost per episode (tokens or seconds, see
  :func:`episode_cost`).

Every sampler keeps, per task, a running success rate and cost (decayed counts: each update
multiplies the old counts by ``decay``, so the estimate follows a policy that improves) with a
Beta prior (``prior=(1, 1)``: an unseen task counts as ``p = 1/2``, the most learnable, so it is
tried early). An unseen task's cost is the mean of the seen tasks' (1 when none is seen).
``epsilon`` of the probability is spread evenly over the tasks, so no task starves: a task whose
estimate says "always solved" (or "never") is still drawn now and then, and its estimate can change.

Randomness comes from the sampler's own ``numpy.random.Generator`` (a seed or a generator is
passed in), never from global state. This module imports neither torch nor transformers.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

TASK_SAMPLERS = ("uniform", "sequential", "learnability")
TASK_COSTS = ("tokens", "seconds")
STATE_VERSION = 1

SeedLike = int | np.random.Generator | None


class TaskSampler(Protocol):
    """What the trainer needs of a task sampler."""

    tasks: tuple[str, ...]

    def sample(self, n: int) -> list[str]:
        """``n`` tasks, one per group, drawn with the sampler's own generator."""

    def update(self, task: str, successes: Sequence[float], cost: float) -> None:
        """What one group of ``task`` did: each episode's success (0 or 1) and their summed cost."""

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly: estimates, counts, position, generator state."""

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from a ``state_dict()`` of a sampler of the same kind over the same tasks."""


def learnability(p: float, group_size: int) -> float:
    """The chance that a group of ``group_size`` episodes, each a success with chance ``p``, holds
    both a success and a failure: ``1 - p^G - (1-p)^G``, the groups whose GRPO advantages are not
    all zero.

    A group of one never holds both, so for ``group_size == 1`` this returns ``p (1-p)``, the
    variance of the outcome: the signal a batch-wide baseline (ReBN, REINFORCE with a baseline)
    learns from.
    """
    _check_group_size(group_size)
    if not (isinstance(p, numbers.Real) and 0.0 <= p <= 1.0):
        raise ValueError(f"p must be a probability in [0, 1], got {p!r}.")
    if group_size == 1:
        return float(p * (1.0 - p))
    return float(max(0.0, 1.0 - p ** group_size - (1.0 - p) ** group_size))


def episode_cost(trajectory: Any, kind: str) -> float:
    """One episode's cost (a :class:`gem.rl.collect.Trajectory`).

    ``tokens``: every turn's prompt and response tokens, what the sampling and the loss passes
    process. ``seconds``: the episode's share of the collection's wall time (each turn's generate
    and env step time, split evenly between the episodes still running in that turn).
    """
    if kind not in TASK_COSTS:
        raise ValueError(f"Unknown task cost {kind!r}; choose one of: {', '.join(TASK_COSTS)}.")
    if kind == "tokens":
        return float(sum(len(t.prompt_ids) + len(t.response_ids) for t in trajectory.transitions))
    return float(sum(getattr(t, "seconds", 0.0) for t in trajectory.transitions))


def _check_group_size(group_size: Any) -> None:
    if isinstance(group_size, bool) or not isinstance(group_size, numbers.Integral) or group_size < 1:
        raise ValueError(f"group_size must be an integer of at least 1, got {group_size!r}.")


def _generator(seed: SeedLike) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or (isinstance(seed, numbers.Integral) and not isinstance(seed, bool)):
        return np.random.default_rng(seed)
    raise ValueError(f"seed must be an int, a numpy.random.Generator or None, got {seed!r}.")


class _TaskStats:
    """Per task: decayed success and cost counts (the estimates) and plain totals (the logs)."""

    __slots__ = ("cost_n", "cost_sum", "episodes", "groups", "losses", "successes", "wins")

    def __init__(self) -> None:
        self.wins = self.losses = self.cost_sum = self.cost_n = 0.0
        self.groups = self.episodes = 0
        self.successes = 0.0

    def as_dict(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in self.__slots__}

    def load(self, data: Mapping[str, Any]) -> None:
        for name in self.__slots__:
            value = float(data[name])
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} {value} is not a finite count")
            setattr(self, name, int(value) if name in ("groups", "episodes") else value)


class BaseTaskSampler:
    """The bookkeeping every sampler shares: tasks, per-task estimates, the generator, the state.

    Args:
        tasks: the task ids (distinct, at least one).
        seed: an int, a ``numpy.random.Generator`` (used as is), or ``None`` (fresh entropy).
        group_size: episodes per group (``G``); the learnability sampler weighs with it.
        prior: the Beta prior ``(successes, failures)`` added to each task's counts.
        decay: each update of a task first multiplies its counts by this (1: never forget).
    """

    name = "base"

    def __init__(self, tasks: Sequence[str], seed: SeedLike = 0, *, group_size: int = 1,
                 prior: tuple[float, float] = (1.0, 1.0), decay: float = 0.9) -> None:
        if isinstance(tasks, str) or not isinstance(tasks, Sequence):
            raise ValueError(f"tasks must be a list of env ids, got {tasks!r}.")
        tasks = tuple(tasks)
        if not tasks or not all(isinstance(t, str) and t for t in tasks):
            raise ValueError(f"tasks must be a non-empty list of env ids (non-empty strings), got {list(tasks)!r}.")
        dupes = sorted({t for t in tasks if tasks.count(t) > 1})
        if dupes:
            raise ValueError(f"Each task may appear once; repeated: {', '.join(dupes)}.")
        _check_group_size(group_size)
        if (len(prior) != 2 or not all(isinstance(x, numbers.Real) and math.isfinite(x) and x > 0 for x in prior)):
            raise ValueError(f"prior must be two positive numbers (successes, failures), got {prior!r}.")
        if not (isinstance(decay, numbers.Real) and 0.0 < decay <= 1.0):
            raise ValueError(f"decay must be in (0, 1], got {decay!r}.")
        self.tasks = tasks
        self.group_size = int(group_size)
        self.prior = (float(prior[0]), float(prior[1]))
        self.decay = float(decay)
        self.rng = _generator(seed)
        self._stats = {t: _TaskStats() for t in tasks}

    # ------------------------------------------------------------ sampling
    def sample(self, n: int) -> list[str]:
        """``n`` tasks, one per group."""
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise ValueError(f"sample(n) needs n of at least 1, got {n!r}.")
        return [self.tasks[i] for i in self._draw(int(n))]

    def _draw(self, n: int) -> list[int]:
        raise NotImplementedError

    def probabilities(self) -> dict[str, float]:
        """The chance of each task at the next draw (the share of a cycle, for the sequential one)."""
        return {t: 1.0 / len(self.tasks) for t in self.tasks}

    # ------------------------------------------------------------- updates
    def update(self, task: str, successes: Sequence[float], cost: float) -> None:
        """Record one group of ``task``: each episode's success in [0, 1] and the group's summed
        cost (tokens or seconds, of all its episodes)."""
        if task not in self._stats:
            raise KeyError(f"Unknown task {task!r}; this sampler's tasks are: {', '.join(self.tasks)}.")
        outcomes = [float(s) for s in successes]
        if not outcomes:
            raise ValueError("update() needs the outcome of at least one episode.")
        if not all(0.0 <= s <= 1.0 for s in outcomes):  # NaN fails this too
            raise ValueError(f"successes must be numbers in [0, 1], got {outcomes!r}.")
        cost = float(cost)
        if not (math.isfinite(cost) and cost >= 0.0):
            raise ValueError(f"cost must be a finite number of at least 0, got {cost!r}.")
        st = self._stats[task]
        won = sum(outcomes)
        st.wins = self.decay * st.wins + won
        st.losses = self.decay * st.losses + (len(outcomes) - won)
        st.cost_sum = self.decay * st.cost_sum + cost
        st.cost_n = self.decay * st.cost_n + len(outcomes)
        st.groups += 1
        st.episodes += len(outcomes)
        st.successes += won

    def success_rate(self, task: str) -> float:
        """The running estimate of ``task``'s success rate (the Beta prior's mean when unseen)."""
        st = self._stats[task]
        a, b = self.prior
        return (st.wins + a) / (st.wins + st.losses + a + b)

    def mean_cost(self, task: str) -> float:
        """The running mean cost per episode of ``task``; an unseen task gets the seen tasks' mean
        (1.0 when no task is seen yet)."""
        st = self._stats[task]
        if st.cost_n > 0:
            return st.cost_sum / st.cost_n
        seen = [s.cost_sum / s.cost_n for s in self._stats.values() if s.cost_n > 0]
        return float(np.mean(seen)) if seen else 1.0

    def report(self) -> list[dict[str, Any]]:
        """One row per task for the logs: groups and episodes so far, their success rate, the
        running estimate, the mean cost and the chance of the next draw."""
        probs = self.probabilities()
        rows = []
        for t in self.tasks:
            st = self._stats[t]
            rows.append({"task": t, "groups": st.groups, "episodes": st.episodes,
                         "success_rate": st.successes / st.episodes if st.episodes else float("nan"),
                         "estimate": self.success_rate(t), "mean_cost": self.mean_cost(t),
                         "probability": probs[t]})
        return rows

    # --------------------------------------------------------------- state
    def state_dict(self) -> dict[str, Any]:
        """A JSON-serialisable snapshot: kind, tasks, settings, per-task counts, generator state."""
        return {"version": STATE_VERSION, "kind": self.name, "tasks": list(self.tasks),
                "group_size": self.group_size, "prior": list(self.prior), "decay": self.decay,
                "stats": {t: st.as_dict() for t, st in self._stats.items()},
                "rng": self.rng.bit_generator.state, **self._extra_state()}

    def _extra_state(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from ``state``; it must come from the same kind of sampler over the same tasks."""
        if not isinstance(state, Mapping):
            raise ValueError(f"A task sampler state is a dict, got {type(state).__name__}.")
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"Task sampler state version {state.get('version')!r}; this GEM reads {STATE_VERSION}.")
        if state.get("kind") != self.name:
            raise ValueError(f"The state is a {state.get('kind')!r} sampler's; this one is {self.name!r}.")
        if list(state.get("tasks", ())) != list(self.tasks):
            raise ValueError(f"The state's tasks {state.get('tasks')!r} are not this sampler's {list(self.tasks)!r}.")
        if state.get("group_size") != self.group_size:
            raise ValueError(f"The state's group size {state.get('group_size')!r} is not this sampler's {self.group_size}.")
        try:
            stats = {t: _TaskStats() for t in self.tasks}
            for t in self.tasks:
                stats[t].load(state["stats"][t])
            probe = type(self.rng.bit_generator)()  # raises if the state is another generator's
            probe.state = state["rng"]
            prior = (float(state["prior"][0]), float(state["prior"][1]))
            decay = float(state["decay"])
            if not (min(prior) > 0 and math.isfinite(sum(prior)) and 0.0 < decay <= 1.0):
                raise ValueError(f"prior {prior} or decay {decay} out of range")
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise ValueError(f"Malformed task sampler state: {exc}") from None
        self.prior, self.decay = prior, decay
        self._stats = stats
        self.rng.bit_generator.state = state["rng"]
        self._load_extra(state)

    def _load_extra(self, state: Mapping[str, Any]) -> None:
        pass


class UniformSampler(BaseTaskSampler):
    """Each group's task drawn uniformly at random."""

    name = "uniform"

    def _draw(self, n: int) -> list[int]:
        return [int(i) for i in self.rng.integers(0, len(self.tasks), size=n)]


class SequentialSampler(BaseTaskSampler):
    """The tasks in order, one per group, continuing across calls (``A B C A B C ...``).

    Unlike a fixed assignment of groups to tasks, every task gets its turn even when a step has
    fewer groups than there are tasks.
    """

    name = "sequential"

    def __init__(self, tasks: Sequence[str], seed: SeedLike = 0, **kwargs: Any) -> None:
        super().__init__(tasks, seed, **kwargs)
        self.position = 0

    def _draw(self, n: int) -> list[int]:
        start, self.position = self.position, (self.position + n) % len(self.tasks)
        return [(start + i) % len(self.tasks) for i in range(n)]

    def _extra_state(self) -> dict[str, Any]:
        return {"position": self.position}

    def _load_extra(self, state: Mapping[str, Any]) -> None:
        position = state.get("position")
        if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position < len(self.tasks):
            raise ValueError(f"Malformed task sampler state: position {position!r}.")
        self.position = position


class LearnabilitySampler(BaseTaskSampler):
    """Tasks drawn with probability ``(1 - epsilon) * w / sum(w) + epsilon / K``, where
    ``w = learnability(p, G) / cost``: ``p`` the task's running success rate, ``G`` the group
    size, ``cost`` its running mean cost per episode, ``K`` the number of tasks. When every ``w``
    is zero the draw is uniform.

    Args (besides :class:`BaseTaskSampler`'s):
        epsilon: the share of the probability spread evenly, so that no task starves (0 to 1).
    """

    name = "learnability"

    def __init__(self, tasks: Sequence[str], seed: SeedLike = 0, *, epsilon: float = 0.05, **kwargs: Any) -> None:
        super().__init__(tasks, seed, **kwargs)
        if not (isinstance(epsilon, numbers.Real) and 0.0 <= epsilon <= 1.0):
            raise ValueError(f"epsilon must be in [0, 1], got {epsilon!r}.")
        self.epsilon = float(epsilon)

    def weight(self, task: str) -> float:
        """``learnability(p, G) / cost`` of ``task`` (before the ``epsilon`` mix)."""
        cost = max(self.mean_cost(task), 1e-12)
        return learnability(self.success_rate(task), self.group_size) / cost

    def probabilities(self) -> dict[str, float]:
        weights = np.array([self.weight(t) for t in self.tasks], dtype=np.float64)
        k = len(self.tasks)
        total = float(weights.sum())
        if not math.isfinite(total) or total <= 0.0:
            return {t: 1.0 / k for t in self.tasks}
        probs = (1.0 - self.epsilon) * weights / total + self.epsilon / k
        return {t: float(p) for t, p in zip(self.tasks, probs / probs.sum())}

    def _draw(self, n: int) -> list[int]:
        probs = self.probabilities()
        return [int(i) for i in self.rng.choice(len(self.tasks), size=n, p=[probs[t] for t in self.tasks])]

    def _extra_state(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon}

    def _load_extra(self, state: Mapping[str, Any]) -> None:
        epsilon = state.get("epsilon")
        if not (isinstance(epsilon, numbers.Real) and 0.0 <= epsilon <= 1.0):
            raise ValueError(f"Malformed task sampler state: epsilon {epsilon!r}.")
        self.epsilon = float(epsilon)


_KINDS: dict[str, type[BaseTaskSampler]] = {
    "uniform": UniformSampler, "sequential": SequentialSampler, "learnability": LearnabilitySampler,
}


def make_task_sampler(name: str, tasks: Sequence[str], seed: SeedLike = 0, **options: Any) -> BaseTaskSampler:
    """The sampler called ``name`` (one of :data:`TASK_SAMPLERS`) over ``tasks``.

    ``options`` go to its constructor (``group_size``, ``prior``, ``decay``; ``epsilon`` for the
    learnability sampler).
    """
    if name not in _KINDS:
        raise ValueError(f"Unknown task sampler {name!r}; choose one of: {', '.join(TASK_SAMPLERS)}.")
    return _KINDS[name](tasks, seed, **options)

