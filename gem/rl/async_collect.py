"""Asynchronous collection: episodes are stepped as their replies come, and none waits for the longest.

:func:`gem.rl.collect.collect_episodes` plays a batch in lock step: each turn generates for every
running episode, steps their envs one after the other, and the batch ends with its longest episode.
:class:`AsyncCollector` keeps up to ``slots`` episodes in flight instead:

* env steps (and resets) run concurrently on a thread pool, so an env whose step waits (a sandboxed
  tool call, a remote server) does not hold up the others;
* as soon as at least ``min_batch`` episodes await an action (or nothing else is in flight), the
  policy generates for them in one batch while the other episodes' steps go on (by default
  ``min_batch`` is ``slots``: a generation waits for every episode in flight, which is fastest
  when a generation costs about the same for any batch size and more than an env step, as on a
  CPU; lower it when env steps take much longer than a generation, so the two overlap);
* a finished episode leaves its slot at once and the next episode starts in it (continuous
  batching: the generation batch stays full);
* :meth:`AsyncCollector.collect` returns once ``batch_size`` episodes have finished, in whole groups
  (a GRPO group is returned only when all its episodes are done).

Identical episodes: each :class:`EpisodeRequest` carries its env seed and a sampling key; turn ``t``
is sampled with ``sampling_seed(key, t)`` on the episode's own random stream, so with a fixed policy
an episode's tokens and rewards do not depend on which others share its batch (the same as
:func:`collect_episodes` with the same ``sample_seeds``; tested).

Bounded staleness (``staleness=K``): the trainer calls :meth:`AsyncCollector.policy_updated` after
each update. With ``K = 0`` (on-policy) the collector starts exactly one batch of episodes per policy
version and finishes all of them before returning, so nothing carries over and no episode mixes
versions. With ``K > 0`` it keeps its slots full: episodes unfinished at an update carry over and
continue under the new policy, each turn recording the policy ``version`` that sampled it (and its
behaviour log-probs, the sampler's). New episodes start only while fewer than ``(version + K + 1) *
batch_size`` have been started (as AReaL bounds its rollouts), and at each update a group holding a
turn more than ``K`` versions old is dropped (counted in ``stats["dropped"]``). The trainer
corrects the stale turns with truncated importance weights (:func:`gem.rl.losses.importance_weights`).

This module imports neither torch nor transformers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Hashable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from gem.rl.collect import (
    RunningEpisode,
    Trajectory,
    accepts_seeds,
    generate,
    sampling_seed,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EpisodeRequest:
    """One episode to play: its env id, reset seed, group (task) id, and sampling key (``None``:
    the policy's shared stream)."""

    env_id: str
    seed: int | None
    group: Hashable
    sample_seed: int | None = None


class _Slot:
    """An episode in flight: its env, its group number and its :class:`RunningEpisode`."""

    __slots__ = ("dropped", "env", "episode", "group_no", "index", "member", "request")

    def __init__(self, request: EpisodeRequest, env: Any, group_no: int, member: int, index: int) -> None:
        self.request, self.env = request, env
        self.group_no, self.member, self.index = group_no, member, index
        self.episode: RunningEpisode | None = None
        self.dropped = False


class AsyncCollector:
    """Continuous-batching, bounded-staleness episode collection (see the module doc).

    Args:
        pool: lends envs by id (:class:`gem.rl.collect.EnvPool`: ``acquire``/``release``).
        policy: ``generate(prompts[, seeds=])`` -> one :class:`Generation` per prompt.
        groups: yields the episodes to play, one group (a list of :class:`EpisodeRequest`) at a
            time; when it is exhausted, :meth:`collect` returns what has finished.
        batch_size: episodes per :meth:`collect` (whole groups).
        slots: the most episodes in flight (at least the largest group).
        staleness: ``K``, the most policy versions a turn may lag the update that uses it.
        max_turns: the turn cap per episode (an episode still running after it is ``truncated``).
        min_batch: generate as soon as this many episodes await an action (default: ``slots``);
            fewer only when nothing else is in flight.
        threads: env steps in flight at once (default: ``slots``).
    """

    def __init__(
        self,
        pool: Any,
        policy: Any,
        groups: Iterable[Sequence[EpisodeRequest]],
        batch_size: int,
        slots: int,
        staleness: int = 0,
        max_turns: int = 100,
        min_batch: int | None = None,
        threads: int | None = None,
    ) -> None:
        for name, value, low in (("batch_size", batch_size, 1), ("slots", slots, 1), ("staleness", staleness, 0),
                                 ("max_turns", max_turns, 1)):
            if not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer of at least {low}, got {value!r}.")
        if min_batch is not None and not 1 <= min_batch <= slots:
            raise ValueError(f"min_batch must be between 1 and slots ({slots}), got {min_batch!r}.")
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads!r}.")
        self.pool, self.policy = pool, policy
        self._groups: Iterator[Sequence[EpisodeRequest]] = iter(groups)
        self.batch_size, self.slots, self.staleness, self.max_turns = batch_size, slots, staleness, max_turns
        self.min_batch = min_batch or slots
        self._seeds_ok = accepts_seeds(policy)
        self._executor = ThreadPoolExecutor(max_workers=threads or slots, thread_name_prefix="gem-collect")
        self.version = 0
        self._next_group: list[EpisodeRequest] | None = None
        self._exhausted = False
        self._started = 0  # episodes started (the admission count)
        self._group_no = 0
        self._ready: list[_Slot] = []  # episodes awaiting an action
        self._pending: dict[Future, _Slot] = {}  # resets and steps in flight
        self._groups_open: dict[int, list[Trajectory | None]] = {}  # finished members by group number
        self._group_dropped: set[int] = set()
        self._done: list[tuple[int, list[Trajectory]]] = []  # whole groups, in finishing order
        self.stats = {"started": 0, "finished": 0, "dropped": 0, "refills": 0, "generate_calls": 0,
                      "generated_rows": 0, "max_in_flight": 0, "generate_seconds": 0.0}

    # ------------------------------------------------------------------ public
    @property
    def in_flight(self) -> int:
        """Episodes started and not yet finished or dropped."""
        return len(self._ready) + len(self._pending)

    def collect(self) -> list[Trajectory]:
        """Play until ``batch_size`` episodes have finished (whole groups); return them grouped, in
        the order their groups finished. Fewer only when the groups run out. Between two calls the
        policy may change (then call :meth:`policy_updated`); more than ``staleness + 1`` calls
        without it raise ``RuntimeError``."""
        while self._done_count() < self.batch_size:
            self._fill()
            if not self._ready and not self._pending:
                if not self._exhausted:  # every episode this version admits has been handed out
                    raise RuntimeError(
                        f"collect() has handed out every episode that staleness {self.staleness} admits at "
                        f"policy version {self.version}; call policy_updated() after each update.")
                break  # nothing left to play
            if self._ready and (len(self._ready) >= self.min_batch or not self._pending):
                self._generate()
            else:
                self._wait()
        out: list[Trajectory] = []
        while self._done and len(out) < self.batch_size:
            out.extend(self._done.pop(0)[1])
        return out

    def policy_updated(self) -> int:
        """The policy changed: bump the version, drop groups whose oldest turn is now more than
        ``staleness`` versions old; returns the number of episodes dropped."""
        self.version += 1
        floor = self.version - self.staleness
        dropped = 0
        for group_no, episodes in list(self._done):
            if any(_oldest(ep) < floor for ep in episodes):
                self._done.remove((group_no, episodes))
                dropped += len(episodes)
        stale = {s.group_no for s in [*self._ready, *self._pending.values()]
                 if s.episode is not None and _oldest(s.episode.trajectory) < floor}
        stale |= {g for g, members in self._groups_open.items()
                  if any(ep is not None and _oldest(ep) < floor for ep in members)}
        for group_no in stale:
            dropped += self._drop_group(group_no)
        self.stats["dropped"] += dropped
        if dropped:
            logger.info("dropped %d episode(s) more than %d policy version(s) old", dropped, self.staleness)
        return dropped

    def close(self) -> None:
        """Wait for the steps in flight, stop the threads and give the envs back."""
        self._executor.shutdown(wait=True, cancel_futures=True)
        for slot in [*self._ready, *self._pending.values()]:
            self.pool.release(slot.request.env_id, slot.env)
        self._ready.clear()
        self._pending.clear()

    def __enter__(self) -> AsyncCollector:  # noqa: PYI034 -- typing.Self needs Python 3.11
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the loop
    def _done_count(self) -> int:
        return sum(len(episodes) for _, episodes in self._done)

    def _fill(self) -> None:
        """Start whole groups while slots are free and the staleness bound admits them."""
        limit = (self.version + self.staleness + 1) * self.batch_size
        while not self._exhausted:
            if self._next_group is None:
                try:
                    self._next_group = list(next(self._groups))
                except StopIteration:
                    self._exhausted = True
                    return
                if not 1 <= len(self._next_group) <= self.slots:
                    raise ValueError(f"A group of {len(self._next_group)} episodes does not fit {self.slots} slots.")
            group = self._next_group
            admitted = self._started - self.stats["dropped"]  # a dropped episode frees its admission
            if self.in_flight + len(group) > self.slots or admitted + len(group) > limit:
                return
            self._next_group = None
            group_no, self._group_no = self._group_no, self._group_no + 1
            self._groups_open[group_no] = [None] * len(group)
            for member, request in enumerate(group):
                if request.sample_seed is not None and not self._seeds_ok:
                    raise ValueError(f"Sampling seeds need a policy whose generate takes seeds=; "
                                     f"{type(self.policy).__name__}.generate does not.")
                if self.in_flight and self.stats["finished"] + self.stats["dropped"]:
                    self.stats["refills"] += 1  # a slot an earlier episode left, filled while others run
                slot = _Slot(request, self.pool.acquire(request.env_id), group_no, member, self._started)
                self._started += 1
                self.stats["started"] += 1
                self._pending[self._executor.submit(_timed, slot.env.reset, seed=request.seed)] = slot
            self.stats["max_in_flight"] = max(self.stats["max_in_flight"], self.in_flight)

    def _generate(self) -> None:
        """One generation batch for the episodes awaiting an action; their steps start at once."""
        batch, self._ready = self._ready, []
        episodes = [s.episode for s in batch]
        seeds = None
        if batch[0].request.sample_seed is not None:
            seeds = [sampling_seed(s.request.sample_seed, len(ep.trajectory)) for s, ep in zip(batch, episodes)]
        t0 = time.perf_counter()
        gens = generate(self.policy, [ep.prompt for ep in episodes], seeds)
        seconds = time.perf_counter() - t0
        share = seconds / len(batch)
        self.stats["generate_seconds"] += seconds
        self.stats["generate_calls"] += 1
        self.stats["generated_rows"] += len(batch)
        for slot, gen in zip(batch, gens):
            future = self._executor.submit(_timed, slot.env.step, gen.text)
            future.gen, future.share, future.version = gen, share, self.version  # type: ignore[attr-defined]
            self._pending[future] = slot

    def _wait(self) -> None:
        """Take every reset or step that has come back (waiting for at least one)."""
        done, _ = wait(list(self._pending), return_when=FIRST_COMPLETED)
        for future in sorted(done, key=lambda f: self._pending[f].index):
            slot = self._pending.pop(future)
            result, seconds = future.result()  # an env that raises stops the collection, as in sync collection
            if slot.dropped:
                self._release(slot)
                continue
            if slot.episode is None:  # a reset
                obs, info = result
                kwargs_of = getattr(self.pool, "kwargs_of", None)
                traj = Trajectory(slot.index, slot.request.env_id, slot.request.group,
                                  kwargs=kwargs_of(slot.env) if kwargs_of is not None else None)
                slot.episode = RunningEpisode(traj, obs, info, self.max_turns, seed=slot.request.seed,
                                              success_reward=_success_reward(slot.env),
                                              sample_seed=slot.request.sample_seed)
            else:
                obs, reward, terminated, truncated, info = result
                slot.episode.record(future.gen, obs, reward, terminated, truncated, info,  # type: ignore[attr-defined]
                                    future.share + seconds, version=future.version)  # type: ignore[attr-defined]
            if slot.episode.running:
                self._ready.append(slot)
            else:
                self._retire(slot)

    def _retire(self, slot: _Slot) -> None:
        trajectory = slot.episode.finish()
        self._release(slot)
        self.stats["finished"] += 1
        members = self._groups_open[slot.group_no]
        members[slot.member] = trajectory
        if all(m is not None for m in members):
            del self._groups_open[slot.group_no]
            self._done.append((slot.group_no, members))  # type: ignore[arg-type]

    def _release(self, slot: _Slot) -> None:
        self.pool.release(slot.request.env_id, slot.env)

    def _drop_group(self, group_no: int) -> int:
        """Drop a group: its finished members now, its running ones (and their envs) as they return."""
        members = self._groups_open.pop(group_no, [])
        count = sum(1 for m in members if m is not None)
        for slot in [s for s in self._ready if s.group_no == group_no]:
            self._ready.remove(slot)
            self._release(slot)
            count += 1
        for slot in self._pending.values():
            if slot.group_no == group_no and not slot.dropped:
                slot.dropped = True
                count += 1
        return count


def _timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - t0


def _oldest(trajectory: Trajectory) -> int:
    """The policy version of the trajectory's oldest turn (a trajectory with none is current)."""
    return min((t.version for t in trajectory.transitions), default=1 << 62)


def _success_reward(env: Any) -> float | None:
    level = getattr(env, "success_reward", None)
    try:
        return None if level is None else float(level)
    except (TypeError, ValueError):
        return None


def requests_for(env_ids: Sequence[str], seeds: Sequence[int | None], run_seed: int | None = None,
                 group_size: int = 1, first_index: int = 0) -> Iterator[list[EpisodeRequest]]:
    """Groups of :class:`EpisodeRequest` for episodes ``first_index, first_index + 1, ...``: env
    ``env_ids[i]``, reset seed ``seeds[i]``, group id the seed; with ``run_seed``, episode ``e``'s
    sampling key is ``sampling_seed(run_seed, e)`` (the same keys :func:`collect_episodes` takes as
    ``sample_seeds``)."""
    if len(env_ids) != len(seeds):
        raise ValueError(f"Got {len(env_ids)} env ids for {len(seeds)} seeds.")
    if group_size < 1 or len(seeds) % group_size:
        raise ValueError(f"{len(seeds)} episodes do not split into groups of {group_size}.")
    for start in range(0, len(seeds), group_size):
        yield [EpisodeRequest(env_ids[i], seeds[i], seeds[i] if seeds[i] is not None else first_index + i,
                              None if run_seed is None else sampling_seed(run_seed, first_index + i))
               for i in range(start, start + group_size)]
