"""The vector env that overlaps its envs' waiting on a thread pool.

Threads help only while an env waits (a tool call in a subprocess, an HTTP server, a sandbox);
for CPU-bound Python the GIL serialises them and each hand-off costs more than a cheap step. So
this backend measures each env's recent step time: envs that have been fast run inline in the
calling thread, the others go to the pool, and both groups run at the same time. A CPU-bound batch
therefore costs about what the sync loop costs, and a waiting batch overlaps its waits.

With ``step_timeout`` every call goes to the pool, and an env call that takes longer raises
:class:`gem.errors.VectorEnvTimeout` naming the env, within the timeout. A thread cannot be
killed: the hung call goes on in its (daemon) thread, the env is abandoned (closed once the call
returns, if ever), the pool gets a thread in its place, and the env is rebuilt from its factory on
its next reset; its episode is reported truncated at its next step, with the reason under
``info["env_timeout"]`` (``info["final_info"]["env_timeout"]`` with ``SAME_STEP``).
"""

from __future__ import annotations

import logging
from concurrent.futures import FIRST_COMPLETED, Future, wait
from time import monotonic, perf_counter
from typing import Any, Callable, Optional, Sequence, Union

from gem.core import Env
from gem.errors import VectorEnvTimeout
from gem.vector.daemon_pool import DaemonThreadPool
from gem.vector.vector_env import TIMEOUT_INFO_KEY, AutoresetMode, LocalVectorEnv, VecStepResult, VectorEnv

logger = logging.getLogger(__name__)

def step_reset_env(
    action: str, env: Env, autoreset_mode: Union[str, AutoresetMode], autoreset_env: bool
) -> tuple[str, float, bool, bool, dict[str, Any]]:
    """Step (or auto-reset) one env: a thread worker's step.

    ``NEXT_STEP``: when ``autoreset_env`` (the env ended last step) reset it and return its first
    observation with reward 0, otherwise step it. ``SAME_STEP``: step it and, if that ended the
    episode, reset it and return the new first observation and info with the finishing step's
    reward and flags (the vector envs also keep ``final_obs``/``final_info``; this function
    does not).
    """
    mode = AutoresetMode.parse(autoreset_mode)
    if mode is AutoresetMode.NEXT_STEP:
        if autoreset_env:
            obs, info = env.reset()
            return obs, 0.0, False, False, info
        return env.step(action)
    obs, reward, terminated, truncated, info = env.step(action)
    if terminated or truncated:
        obs, info = env.reset()
    return obs, reward, terminated, truncated, info


# A step is "slow" (worth a thread) when it recently took at least this long.
SLOW_STEP_SECONDS = 0.0005
_UNKNOWN = float("inf")  # never measured: use the pool until we know


class ThreadVectorEnv(LocalVectorEnv):
    """Vector env on a thread pool, with fast envs stepped inline (see the module docstring).

    Args:
        max_workers: pool threads (default: one per env, at most 256).
        slow_step_seconds: the latency above which an env's steps go to the pool.
        step_timeout: seconds one env may take for one call (see the module docstring).
    """

    supports_timeout = True

    def __init__(
        self,
        env_ids: Sequence[str],
        env_fns: Sequence[Callable[[], Env]],
        autoreset_mode: Union[str, AutoresetMode] = AutoresetMode.SAME_STEP,
        max_workers: Optional[int] = None,
        slow_step_seconds: float = SLOW_STEP_SECONDS,
        step_timeout: Optional[float] = None,
    ) -> None:
        workers = max_workers or min(max(len(env_fns), 1), 256)
        self._pool = DaemonThreadPool(max_workers=workers, thread_name_prefix="gem-env")
        self._slow_step_seconds = slow_step_seconds
        self._latency = [_UNKNOWN] * len(env_fns)
        self._started: list[Optional[float]] = [None] * len(env_fns)  # when each env's call began
        self._abandoned = 0  # calls given up on after step_timeout
        self._futures: Optional[dict[int, Future]] = None
        super().__init__(env_ids, env_fns, autoreset_mode, step_timeout)

    def _build_envs(self) -> list[Env]:
        # Env 0 first, alone: a wrapper given one shared object (a tool instance) hands it to
        # the first env it wraps, so that must always be env 0.
        if not self.env_fns:
            return []
        first = self.env_fns[0]()
        return [first, *self._pool.map(lambda fn: fn(), self.env_fns[1:])]

    def _timed_step(self, index: int, action: str) -> Any:
        start = perf_counter()
        result = self._step_one(index, action)
        elapsed = perf_counter() - start
        # Decay slowly: one slow step keeps an env on the pool for a few steps.
        previous = self._latency[index]
        decayed = previous * 0.5
        self._latency[index] = elapsed if elapsed > decayed or previous == _UNKNOWN else decayed
        return result

    def _submit(self, fn: Callable[..., Any], index: int, *args: Any) -> Future:
        """Run ``fn(index, *args)`` on the pool, noting when it starts (for ``step_timeout``)."""
        self._started[index] = None
        return self._pool.submit(self._started_call, fn, index, *args)

    def _started_call(self, fn: Callable[..., Any], index: int, *args: Any) -> Any:
        self._started[index] = monotonic()
        return fn(index, *args)

    def _run(self, fn: Callable[[int], Any], indices: Any, op: str = "call") -> list[Any]:
        return self._gather({i: self._submit(fn, i) for i in indices}, op=op)

    def step_async(self, actions: Any) -> None:
        """Submit every step to the pool and return at once (``step_wait`` collects)."""
        super().step_async(actions)
        pending = self._pending or {}
        self._futures = {i: self._submit(self._timed_step, i, a) for i, a in pending.items()}

    def step_wait(self) -> VecStepResult:
        if self._futures is not None:
            futures, self._futures, self._pending = self._futures, None, None
            return self._collate(self._gather(futures))
        return super().step_wait()

    def step(self, actions: Any) -> VecStepResult:  # type: ignore[override]
        VectorEnv.step_async(self, actions)  # validate and record only
        pending, self._pending = self._pending or {}, None
        latency, slow = self._latency, self._slow_step_seconds
        if self.step_timeout is None:
            pooled = {i: a for i, a in pending.items() if latency[i] >= slow}
        else:  # only the pool can give up on a hung env
            pooled = pending
        if not pooled:  # every env has been fast: step them here, as the sync loop does
            return self._collate(self._step_inline(pending.items()))
        futures = {i: self._submit(self._timed_step, i, a) for i, a in pooled.items()}
        inline: dict[int, Any] = {}
        error: Optional[BaseException] = None
        for i, action in pending.items():
            if i not in futures:
                try:
                    inline[i] = self._timed_step(i, action)
                except BaseException as exc:  # noqa: BLE001 - raised once the pool is done
                    error = error or exc
        done = self._gather(futures, first=inline)
        if error is not None:
            raise error
        return self._collate(done)

    def _step_inline(self, items: Any) -> list[Any]:
        """Step known-fast envs in this thread, updating their latency (a tight loop)."""
        step_one, latency = self._step_one, self._latency
        results = []
        for i, action in items:
            start = perf_counter()
            results.append(step_one(i, action))
            elapsed = perf_counter() - start
            decayed = latency[i] * 0.5
            latency[i] = elapsed if elapsed > decayed else decayed
        return results

    def _gather(
        self, futures: dict[int, Future], first: Optional[dict[int, Any]] = None, op: str = "step"
    ) -> list[Any]:
        """Results in index order; the first failure is raised after every call has finished.

        With ``step_timeout``, a call that runs longer is abandoned and raised as
        :class:`VectorEnvTimeout` once the others are in.
        """
        hung = self._wait_or_expire(futures) if self.step_timeout is not None else []
        merged: dict[int, Any] = dict(first or {})
        error: Optional[BaseException] = None
        for i, future in futures.items():
            if i in hung:
                continue
            try:
                merged[i] = future.result()
            except BaseException as exc:  # noqa: BLE001 - re-raised below
                error = error or exc
        if hung:
            raise self._abandon(hung, futures, merged, op)
        if error is not None:
            raise error
        return [merged[i] for i in sorted(merged)]

    def _wait_or_expire(self, futures: dict[int, Future]) -> list[int]:
        """Wait for every future; returns the indices whose call ran past ``step_timeout``."""
        timeout, started = self.step_timeout or 0.0, self._started
        pending, hung = dict(futures), []
        while pending:
            now, waits = monotonic(), []
            for i, future in list(pending.items()):
                start = started[i]
                if future.done():
                    del pending[i]
                elif start is None:  # still queued for a thread: its clock has not started
                    waits.append(timeout)
                elif now - start >= timeout:
                    hung.append(i)
                    del pending[i]
                    self._pool.grow(1)  # a thread in place of the stuck one: queued calls go on
                else:
                    waits.append(start + timeout - now)
            if pending:
                wait(list(pending.values()), timeout=min(waits), return_when=FIRST_COMPLETED)
        return sorted(hung)

    def _abandon(
        self, hung: list[int], futures: dict[int, Future], results: dict[int, Any], op: str
    ) -> VectorEnvTimeout:
        """Give up on the hung envs' calls (see the module docstring) and build the error."""
        timeout = self.step_timeout
        for i in hung:
            old = self._slots[i]
            reason = f"env {i} ({self.env_ids[i]}) did not finish {op} within step_timeout={timeout:g} s"
            self._slots[i] = old.abandoned(TIMEOUT_INFO_KEY, reason)
            futures[i].add_done_callback(lambda _, slot=old: _close_abandoned(slot.env))
        self._abandoned += len(hung)
        first = hung[0]
        others = f" (envs {', '.join(map(str, hung))} hung)" if len(hung) > 1 else ""
        return VectorEnvTimeout(
            f"Env {first} ({self.env_ids[first]}) did not finish {op} within step_timeout={timeout:g} s"
            f"{others}. Its thread cannot be killed: the env was abandoned and is rebuilt on its next "
            "reset; its episode is reported truncated at its next step.",
            index=first,
            env_id=self.env_ids[first],
            timeout=timeout or 0.0,
            indices=tuple(hung),
            results=dict(results),
        )

    def close(self) -> None:
        super().close()
        # Threads stuck in abandoned calls may never return: do not wait for those.
        self._pool.shutdown(wait=not self._abandoned, cancel_futures=True)


def _close_abandoned(env: Optional[Env]) -> None:
    """Close an abandoned env once its hung call returned (best effort)."""
    if env is None:
        return
    try:
        env.close()
    except Exception:  # noqa: BLE001 - nobody waits for this env any more
        logger.exception("Could not close an abandoned env")


AsyncVectorEnv = ThreadVectorEnv  # the original GEM's name (``async_mode=True``) for the same class
