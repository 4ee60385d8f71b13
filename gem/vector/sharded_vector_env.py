"""What the process and Ray backends share: a shard of envs (:class:`EnvGroup`) and the parent's
side (:class:`ShardedVectorEnv`: sharding, batching, crash and step-timeout handling).

A backend subclasses :class:`ShardedVectorEnv` and says only how to start a worker and how to talk
to it (see :mod:`gem.vector.process_vector_env` and :mod:`gem.vector.ray_vector_env`).
"""

from __future__ import annotations

import logging
import os
import pickle
from time import monotonic
from typing import Any, Callable, Iterable, Optional, Sequence, Union

from gem.core import Env
from gem.envs.registration import EnvSpec, registry
from gem.envs.registration import spec as lookup_spec
from gem.errors import VectorEnvError, VectorEnvTimeout
from gem.vector.vector_env import (
    CRASH_INFO_KEY,
    Actions,
    AutoresetMode,
    EnvSlot,
    Seeds,
    VecStepResult,
    VectorEnv,
    call_env,
    no_local_envs,
    set_env_attr,
)

logger = logging.getLogger(__name__)

__all__ = ["EnvGroup", "ShardedVectorEnv", "WorkerDied"]
START_TIMEOUT_SECONDS = 120.0  # how long a worker may take to build its envs
STOP_TIMEOUT_SECONDS = 5.0  # how long close() waits for a worker before killing it


class WorkerDied(Exception):
    """A worker process or actor is gone; the message says how (exit code, signal)."""


# ============================================================== worker side
class EnvGroup:
    """The envs of one worker: one :class:`~gem.vector.vector_env.EnvSlot` per env of its shard.

    Methods take and return local indices (0 .. shard size - 1). Each per-env result is
    ``(True, value)`` or ``(False, exception)``, so one failing env does not hide the others'
    results; the parent raises the first failure with the env's global index and id.

    ``progress`` (two floats: the local index of the env running now, or -1, and when its call
    began on the ``time.monotonic`` clock) lets the parent see a hung env: the process backend
    passes shared memory, the Ray backend asks ``busy()``.
    """

    def __init__(
        self,
        env_ids: Sequence[str],
        env_fns: Sequence[Callable[[], Env]],
        specs: Sequence[EnvSpec],
        autoreset_mode: Union[str, AutoresetMode],
        progress: Optional[Any] = None,
    ) -> None:
        for env_spec in specs:  # ids registered at run time in the parent (tests, notebooks)
            registry.setdefault(env_spec.id, env_spec)
        same_step = AutoresetMode.parse(autoreset_mode) is AutoresetMode.SAME_STEP
        self.slots = [EnvSlot(fn, same_step, fn()) for fn in env_fns]
        self.progress = progress if progress is not None else [-1.0, 0.0]

    def _each(
        self, items: Iterable[tuple[int, Any]], fn: Callable[[EnvSlot, Any], Any]
    ) -> list[tuple[bool, Any]]:
        """``fn(slot, argument)`` for each ``(local, argument)``, recording which env is running."""
        progress, slots, out = self.progress, self.slots, []
        for local, argument in items:
            progress[1] = monotonic()
            progress[0] = local
            try:
                out.append((True, fn(slots[local], argument)))
            except Exception as exc:  # noqa: BLE001 - the parent raises it with the global index
                out.append((False, portable_exception(exc)))
        progress[0] = -1
        return out

    def _every(self) -> Iterable[tuple[int, None]]:
        return ((local, None) for local in range(len(self.slots)))

    def reset(self, seeds: dict[int, Optional[int]]) -> list[tuple[bool, Any]]:
        return self._each(seeds.items(), EnvSlot.reset)

    def step(self, actions: Sequence[tuple[int, str]]) -> list[tuple[bool, Any]]:
        return self._each(actions, EnvSlot.step)

    def call(self, request: tuple[str, tuple, dict]) -> list[tuple[bool, Any]]:
        name, args, kwargs = request
        return self._each(self._every(), lambda slot, _: call_env(slot.ensure_env(), name, args, kwargs))

    def get_attr(self, name: str) -> list[tuple[bool, Any]]:
        return self._each(self._every(), lambda slot, _: getattr(slot.ensure_env(), name))

    def set_attr(self, request: tuple[str, list[Any]]) -> list[tuple[bool, Any]]:
        name, values = request
        return self._each(enumerate(values), lambda slot, value: set_env_attr(slot.ensure_env(), name, value))

    def sample(self, _: Any = None) -> list[tuple[bool, Any]]:
        return self._each(self._every(), lambda slot, _: slot.ensure_env().sample_random_action())

    def lose(self, lost: dict[int, tuple[str, str, bool]]) -> None:
        """Mark episodes lost with a dead worker: ``{local: (last_obs, reason, awaiting_reset)}``."""
        for local, (last_obs, reason, awaiting_reset) in lost.items():
            self.slots[local].lose(CRASH_INFO_KEY, reason, last_obs, ended=awaiting_reset)

    def busy(self, _: Any = None) -> Optional[tuple[int, float]]:
        """``(local index, seconds)`` of the env call running now, or ``None``."""
        local = int(self.progress[0])
        return None if local < 0 else (local, monotonic() - self.progress[1])

    def ping(self, _: Any = None) -> bool:
        """Answers once the shard is built (the Ray backend waits on it)."""
        return True

    def close(self, _: Any = None) -> None:
        for slot in self.slots:
            if slot.env is not None:
                slot.env.close()


def portable_exception(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a RuntimeError carrying its type and message."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - whatever pickling raises, send a plain copy instead
        return RuntimeError(f"{type(exc).__name__}: {exc}")


# ============================================================== parent side
class _Hung(Exception):
    """A worker's env ran past ``step_timeout`` (internal: becomes a VectorEnvTimeout)."""

    def __init__(self, local: int, elapsed: float) -> None:
        super().__init__(local, elapsed)
        self.local, self.elapsed, self.index = local, elapsed, -1


class ShardedVectorEnv(VectorEnv):
    """A vector env whose envs live in workers, a contiguous shard each (see the module doc).

    Subclasses implement ``_launch``, ``_wait_ready``, ``_send``, ``_poll``, ``_receive``,
    ``_progress`` and ``_stop``; everything else (batching, index order, errors, crash and
    timeout recovery) is here. ``vec.envs`` raises :class:`gem.errors.EnvsNotInProcess`: the envs
    are in the workers; ``call``/``get_attr``/``set_attr`` reach them.
    """

    supports_timeout = True
    where = "worker processes"  # for the error of ``envs``

    def __init__(
        self,
        env_ids: Sequence[str],
        env_fns: Sequence[Callable[[], Env]],
        autoreset_mode: Union[str, AutoresetMode] = AutoresetMode.SAME_STEP,
        num_workers: Optional[int] = None,
        step_timeout: Optional[float] = None,
    ) -> None:
        count = len(env_fns)
        if num_workers is not None and (not isinstance(num_workers, int) or num_workers < 1):
            raise ValueError(f"num_workers must be a positive int or None (one per CPU), got {num_workers!r}.")
        workers = max(1, min(num_workers or os.cpu_count() or 1, count))
        bounds = [round(w * count / workers) for w in range(workers + 1)]
        self.shards = [range(bounds[w], bounds[w + 1]) for w in range(workers)]
        self.num_workers = workers
        self._owner = [w for w, shard in enumerate(self.shards) for _ in shard]
        self._last_obs = [""] * count
        self._awaiting_reset = [False] * count  # NEXT_STEP: the episode ended, reset on next step
        self._batches: Optional[dict[int, list[tuple[int, str]]]] = None
        self._early_answers: dict[int, Any] = {}
        self._dead: dict[int, str] = {}  # workers killed after a timeout -> why (restarted on next use)
        self._closed = False
        self.restarts = 0  # how many times a dead worker was started again
        super().__init__(env_ids, env_fns, autoreset_mode, step_timeout)
        self._start_workers()

    @property
    def envs(self) -> list[Env]:
        """Not available: the envs live in the workers (raises :class:`EnvsNotInProcess`)."""
        raise no_local_envs(self, self.where)

    # ------------------------------------------------ what a subclass provides
    def _launch(self, worker: int) -> None:
        """Start worker ``worker`` (building its shard may go on in the background)."""
        raise NotImplementedError

    def _wait_ready(self, worker: int) -> None:
        """Block until the worker has built its envs; raise what building raised."""
        raise NotImplementedError

    def _send(self, worker: int, command: str, argument: Any) -> None:
        """Ask the worker to run ``EnvGroup.<command>(argument)``; may raise :class:`WorkerDied`."""
        raise NotImplementedError

    def _poll(self, worker: int, seconds: float) -> bool:
        """Wait up to ``seconds`` for the answer; True once it (or the worker's death) is in."""
        raise NotImplementedError

    def _receive(self, worker: int) -> Any:
        """The answer to the last ``_send``; raises :class:`WorkerDied` if the worker is gone."""
        raise NotImplementedError

    def _progress(self, worker: int) -> Optional[tuple[int, float]]:
        """``(local index, seconds)`` of the env call the worker is in now, or ``None``."""
        raise NotImplementedError

    def _stop(self, worker: int, kill: bool = False) -> None:
        """Stop the worker (politely unless ``kill``) and release what it holds."""
        raise NotImplementedError

    # -------------------------------------------------------------- plumbing
    def _shard_args(self, worker: int) -> tuple[list[str], list[Any], list[EnvSpec], str]:
        shard = self.shards[worker]
        ids = [self.env_ids[i] for i in shard]
        specs = [lookup_spec(i) for i in dict.fromkeys(ids)]
        return ids, [self.env_fns[i] for i in shard], specs, self.autoreset_mode.value

    def _start_workers(self) -> None:
        try:
            for worker in range(self.num_workers):
                self._launch(worker)
            for worker in range(self.num_workers):
                self._wait_ready(worker)
        except BaseException:
            self._shutdown(kill=True)
            raise

    def _request(self, batches: dict[int, tuple[str, Any]]) -> dict[int, Any]:
        """Send each worker its command, then collect every answer (a WorkerDied if it died)."""
        return self._receive_all(batches, self._send_all(batches))

    def _send_all(self, batches: dict[int, tuple[str, Any]]) -> dict[int, Any]:
        """Send every command; returns ``{worker: WorkerDied}`` for the workers found dead."""
        dead: dict[int, Any] = {}
        for worker, (command, argument) in batches.items():
            try:
                self._send(worker, command, argument)
            except WorkerDied as died:
                dead[worker] = died
        return dead

    def _receive_all(self, workers: Iterable[int], answers: dict[int, Any]) -> dict[int, Any]:
        """Collect the answer of every worker not in ``answers``; a failure is raised once all are in.

        Every answer is read even when one fails, so no reply is left in a pipe for the next call.
        A worker whose env hangs past ``step_timeout`` is killed; its answer is a ``_Hung``.
        """
        error: Optional[BaseException] = None
        for worker in workers:
            if worker not in answers:
                try:
                    answers[worker] = self._await_answer(worker)
                except WorkerDied as died:
                    answers[worker] = died
                except _Hung as hung:
                    answers[worker] = self._kill_hung(worker, hung)
                except Exception as exc:  # noqa: BLE001 - raised below, after the other answers
                    error = error or exc
        if error is not None:
            raise error
        return answers

    def _await_answer(self, worker: int) -> Any:
        """``_receive``, watching the worker's current env call against ``step_timeout``."""
        timeout = self.step_timeout
        if timeout is not None:
            wait = 0.0
            while not self._poll(worker, wait):
                busy = self._progress(worker)
                if busy is not None and busy[1] >= timeout:
                    raise _Hung(*busy)
                wait = timeout - busy[1] if busy is not None else min(timeout, 0.02)
        return self._receive(worker)

    def _kill_hung(self, worker: int, hung: _Hung) -> _Hung:
        """Kill a worker whose env hung; it is started again on the next call."""
        shard = self.shards[worker]
        hung.index = index = shard.start + hung.local
        self._stop(worker, kill=True)
        self._dead[worker] = (
            f"worker {worker} (envs {shard.start}-{shard.stop - 1}) was killed: env {index} "
            f"({self.env_ids[index]}) ran past step_timeout={self.step_timeout:g} s"
        )
        return hung

    def _revive(self) -> None:
        """Start again the workers killed after a timeout (their episodes are reported lost)."""
        for worker, reason in list(self._dead.items()):
            del self._dead[worker]
            try:
                self._restart(worker, reason, lose=True)
            except BaseException:
                self._dead[worker] = reason
                raise

    def _restart(self, worker: int, reason: str, lose: bool) -> None:
        """Start a dead worker again; with ``lose``, its envs' episodes end as truncated."""
        logger.warning("Restarting vector env worker %d: %s", worker, reason)
        self._stop(worker, kill=True)
        self._launch(worker)
        self._wait_ready(worker)
        self.restarts += 1
        if lose:
            shard = self.shards[worker]
            lost = {i - shard.start: (self._last_obs[i], reason, self._awaiting_reset[i]) for i in shard}
            self._send(worker, "lose", lost)
            self._receive(worker)

    def _run_batches(self, command: str, batches: dict[int, Any], lose: bool) -> dict[int, Any]:
        """``_request`` with crash recovery: a dead worker is restarted and asked once more."""
        answers = self._request({w: (command, arg) for w, arg in batches.items()})
        for worker, answer in answers.items():
            if isinstance(answer, WorkerDied):
                shard = self.shards[worker]
                reason = self._reason(worker, answer)
                try:
                    self._restart(worker, reason, lose)
                    answers[worker] = self._request({worker: (command, batches[worker])})[worker]
                except WorkerDied as again:
                    answers[worker] = again
                if isinstance(answers[worker], WorkerDied):
                    first = shard.start
                    raise VectorEnvError(
                        f"Env {first} ({self.env_ids[first]}): its worker died twice in a row "
                        f"({reason}; then {answers[worker]}).",
                        index=first,
                        env_id=self.env_ids[first],
                    )
        return answers

    def _ask(self, command: str, batches: dict[int, Any], op: str, lose: bool = True) -> list[Any]:
        """Run ``command`` on every worker (``batches``: its argument); per-env results in index order."""
        self._check_open()
        self._revive()
        answers = self._run_batches(command, batches, lose)
        indices = {w: list(self.shards[w]) for w in batches}
        self._raise_if_hung(answers, indices, op)
        return self._merge(answers, indices)

    def _raise_if_hung(self, answers: dict[int, Any], indices: dict[int, list[int]], op: str) -> None:
        """Raise :class:`VectorEnvTimeout` if an env hung, with the other envs' results on it."""
        hung = sorted((a for a in answers.values() if isinstance(a, _Hung)), key=lambda h: h.index)
        if not hung:
            return
        results = {i: value for i, (ok, value) in self._answered(answers, indices) if ok}
        first, timeout = hung[0].index, self.step_timeout or 0.0
        worker = self._owner[first]
        shard = self.shards[worker]
        others = f" (envs {', '.join(str(h.index) for h in hung)} hung)" if len(hung) > 1 else ""
        raise VectorEnvTimeout(
            f"Env {first} ({self.env_ids[first]}) did not finish {op} within step_timeout={timeout:g} s"
            f"{others}. Its worker {worker} was killed and starts again on the next call; the episodes "
            f"of its envs ({shard.start}-{shard.stop - 1}) are reported truncated at their next step.",
            index=first,
            env_id=self.env_ids[first],
            timeout=timeout,
            indices=tuple(h.index for h in hung),
            results=results,
        )

    @staticmethod
    def _answered(answers: dict[int, Any], indices: dict[int, list[int]]) -> Iterable[tuple[int, Any]]:
        """``(global index, (ok, value))`` for every env of the workers that answered."""
        for worker, idx in indices.items():
            answer = answers.get(worker)
            if isinstance(answer, list):
                yield from zip(idx, answer)

    def _merge(self, answers: dict[int, Any], batches: dict[int, list[int]]) -> list[Any]:
        """Per-env results in index order; the first failing env is raised by its global index."""
        merged = dict(self._answered(answers, batches))
        results = []
        for index in sorted(merged):
            ok, value = merged[index]
            if not ok:
                raise self._error(index, value) from value
            results.append(value)
        return results

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{type(self).__name__} is closed; make a new one with gem.make_vec.")

    # -------------------------------------------------------------------- API
    def reset(self, seed: Seeds = None, **kwargs: Any) -> tuple[list[str], list[dict[str, Any]]]:
        """Reset every env; an int ``seed`` seeds env ``i`` with ``seed + i``."""
        if self._batches is not None:
            raise RuntimeError("reset() called between step_async() and step_wait().")
        seeds = self._seeds(seed)
        batches = {w: {i - s.start: seeds[i] for i in s} for w, s in enumerate(self.shards)}
        results = self._ask("reset", batches, "reset", lose=False)
        obs, infos = (list(x) for x in zip(*results))
        self._last_obs = list(obs)
        self._awaiting_reset = [False] * self.num_envs
        self._needs_reset = False
        return obs, infos

    def step_async(self, actions: Actions) -> None:
        """Send each worker the actions of its ready envs; ``step_wait`` collects."""
        self._check_open()
        self._revive()
        VectorEnv.step_async(self, actions)  # validates, records self._pending
        batches: dict[int, list[tuple[int, str]]] = {}
        for index, action in (self._pending or {}).items():
            worker = self._owner[index]
            batches.setdefault(worker, []).append((index - self.shards[worker].start, action))
        self._batches = batches
        self._early_answers = self._send_all({w: ("step", batch) for w, batch in batches.items()})

    def step_wait(self) -> VecStepResult:
        """Collect the workers' answers (restarting dead workers); results in index order."""
        if self._batches is None:
            raise RuntimeError("step_wait() called without step_async().")
        batches, answers = self._batches, self._early_answers
        self._batches, self._pending, self._early_answers = None, None, {}
        answers = self._receive_all(batches, answers)
        for worker, answer in list(answers.items()):
            if isinstance(answer, WorkerDied):
                answers.update(self._run_batches_after_death(worker, answer, batches[worker]))
        indices = {w: [self.shards[w].start + local for local, _ in b] for w, b in batches.items()}
        same_step = self.autoreset_mode is AutoresetMode.SAME_STEP
        for index, (ok, value) in self._answered(answers, indices):
            if ok:
                obs, _, terminated, truncated, _ = value
                self._last_obs[index] = obs
                self._awaiting_reset[index] = (terminated or truncated) and not same_step
        self._raise_if_hung(answers, indices, "step")
        return self._collate(self._merge(answers, indices))

    def _run_batches_after_death(self, worker: int, died: WorkerDied, batch: list[tuple[int, str]]) -> dict[int, Any]:
        """A worker died during a step: restart it (its episodes are lost) and send the batch again.

        The new worker answers each lost env with a truncated step.
        """
        self._restart(worker, self._reason(worker, died), lose=True)
        return self._run_batches("step", {worker: batch}, lose=True)

    def _reason(self, worker: int, died: WorkerDied) -> str:
        shard = self.shards[worker]
        return f"worker {worker} (envs {shard.start}-{shard.stop - 1}) {died}"

    def _for_every_worker(self, argument: Any) -> dict[int, Any]:
        return {w: argument for w in range(self.num_workers)}

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        self._values(name, None)  # checks the name
        return tuple(self._ask("call", self._for_every_worker((name, args, kwargs)), f"call({name!r})"))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        self._values(name, None)
        return tuple(self._ask("get_attr", self._for_every_worker(name), f"get_attr({name!r})"))

    def set_attr(self, name: str, values: Any) -> None:
        per_env = self._values(name, values)
        batches = {w: (name, per_env[s.start : s.stop]) for w, s in enumerate(self.shards)}
        self._ask("set_attr", batches, f"set_attr({name!r})")

    def sample_random_action(self) -> list[str]:
        """One random action per env (drawn in the workers)."""
        return self._ask("sample", self._for_every_worker(None), "sample_random_action")

    def close(self) -> None:
        """Close every env and stop the workers (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._shutdown(kill=False)

    def _shutdown(self, kill: bool) -> None:
        for worker in range(self.num_workers):
            try:
                self._stop(worker, kill=kill)
            except Exception:  # noqa: BLE001 - closing must reach every worker
                logger.exception("Could not stop vector env worker %d", worker)
