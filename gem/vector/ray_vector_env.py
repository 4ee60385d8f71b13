"""The vector env whose envs live in Ray actors, placed across a Ray cluster.

Each actor owns a contiguous shard of the envs (an :class:`~gem.vector.sharded_vector_env.EnvGroup`,
the same code the process backend runs), so episodes, autoreset and errors are exactly the sync
backend's. One ``step`` is one actor call per shard with the actions of its ready envs.

Where the actors run: if the program already called ``ray.init(address=...)``, on that cluster;
otherwise ``address=`` (or ``RAY_ADDRESS``) is joined, and without either a local Ray instance is
started (and shut down again by ``close``). Actors are spread over the cluster's nodes
(``scheduling_strategy="SPREAD"``) with one CPU each unless ``actor_options`` say otherwise.

An actor that dies (its process killed, its node lost) is started again and its envs' episodes
are reported truncated, as in the process backend.

With ``step_timeout`` the actors run two threads (``max_concurrency=2``), so that while one runs
an env the parent can ask the other which env it is running and for how long; an env call that
runs longer gets its actor killed (and started again on the next call) and raises
:class:`gem.errors.VectorEnvTimeout`, as in the process backend.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Callable, Optional, Sequence, Union

from gem.core import Env
from gem.errors import VectorEnvError, missing_extra
from gem.vector.sharded_vector_env import START_TIMEOUT_SECONDS, EnvGroup, ShardedVectorEnv, WorkerDied
from gem.vector.vector_env import AutoresetMode

logger = logging.getLogger(__name__)


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise missing_extra("backend='ray'", "ray", "ray") from exc
    return ray


class RayVectorEnv(ShardedVectorEnv):
    """Envs in Ray actors, several per actor (see the module docstring).

    Args:
        num_workers: actors (default: the cluster's CPU count, at most one per env).
        address: the cluster to join when Ray is not initialised yet (``"auto"``, ``"ray://host:10001"``).
        actor_options: passed to ``.options()`` of each actor (``num_cpus``, ``resources``,
            ``scheduling_strategy``, ``runtime_env``...).
        init_kwargs: passed to ``ray.init`` when this env starts Ray itself.
        start_timeout: seconds an actor may take to build its envs.
        step_timeout: seconds one env may take for one call; see the module docstring.
    """

    where = "Ray actors"

    def __init__(
        self,
        env_ids: Sequence[str],
        env_fns: Sequence[Callable[[], Env]],
        autoreset_mode: Union[str, AutoresetMode] = AutoresetMode.SAME_STEP,
        num_workers: Optional[int] = None,
        address: Optional[str] = None,
        actor_options: Optional[dict[str, Any]] = None,
        init_kwargs: Optional[dict[str, Any]] = None,
        start_timeout: float = START_TIMEOUT_SECONDS,
        step_timeout: Optional[float] = None,
    ) -> None:
        self._check_timeout(step_timeout)  # before starting Ray for nothing
        ray = self._ray = _import_ray()
        self._owns_ray = False
        if not ray.is_initialized():
            address = address or os.environ.get("RAY_ADDRESS")
            ray.init(address=address, **{"log_to_driver": False, **(init_kwargs or {})})
            self._owns_ray = address is None
        if num_workers is None:
            num_workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._actor_cls = ray.remote(EnvGroup)
        self._actor_options = {"num_cpus": 1, "scheduling_strategy": "SPREAD", **(actor_options or {})}
        if step_timeout is not None:  # a second thread answers busy() while an env runs
            self._actor_options.setdefault("max_concurrency", 2)
        self._start_timeout = start_timeout
        self._actors: dict[int, Any] = {}
        self._refs: dict[int, Any] = {}
        super().__init__(env_ids, env_fns, autoreset_mode, num_workers, step_timeout)

    def _launch(self, worker: int) -> None:
        actor = self._actor_cls.options(**self._actor_options).remote(*self._shard_args(worker))
        self._actors[worker] = actor
        self._refs[worker] = actor.ping.remote()

    def _wait_ready(self, worker: int) -> None:
        ray = self._ray
        first = self.shards[worker].start
        try:
            ray.get(self._refs.pop(worker), timeout=self._start_timeout)
        except ray.exceptions.GetTimeoutError as exc:
            raise VectorEnvError(
                f"Ray actor {worker} did not build envs {first}-{self.shards[worker].stop - 1} within "
                f"{self._start_timeout:.0f} s; does the cluster have {self._actor_options.get('num_cpus')} "
                "free CPU(s) for it? (see `ray status`)",
                index=first,
                env_id=self.env_ids[first],
            ) from exc
        except ray.exceptions.RayActorError as exc:
            raise VectorEnvError(
                f"Ray actor {worker} failed to build envs {first}-{self.shards[worker].stop - 1}: {exc}",
                index=first,
                env_id=self.env_ids[first],
            ) from exc

    def _send(self, worker: int, command: str, argument: Any) -> None:
        self._refs[worker] = getattr(self._actors[worker], command).remote(argument)

    def _poll(self, worker: int, seconds: float) -> bool:
        ready, _ = self._ray.wait([self._refs[worker]], timeout=seconds)
        return bool(ready)

    def _progress(self, worker: int) -> Optional[tuple[int, float]]:
        ray = self._ray
        try:
            return ray.get(self._actors[worker].busy.remote(), timeout=max(1.0, self.step_timeout or 0.0))
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            return None  # a dead actor: the next _poll sees its answer (the error) is ready

    def _receive(self, worker: int) -> Any:
        ray = self._ray
        try:
            return ray.get(self._refs.pop(worker))
        except ray.exceptions.RayActorError as exc:
            raise WorkerDied(f"(Ray actor) died: {type(exc).__name__}: {str(exc).splitlines()[0]}") from exc

    def _stop(self, worker: int, kill: bool = False) -> None:
        actor = self._actors.pop(worker, None)
        self._refs.pop(worker, None)
        if actor is None:
            return
        if not kill:
            try:
                self._ray.get(actor.close.remote(), timeout=10)
            except Exception as exc:  # noqa: BLE001 - a dead actor has nothing left to close
                logger.debug("Ray actor %d did not close cleanly: %s", worker, exc)
        self._ray.kill(actor)

    def close(self) -> None:
        """Close the envs, kill the actors, and shut Ray down if this env started it."""
        if self._closed:
            return
        super().close()
        if self._owns_ray and self._ray.is_initialized():
            self._ray.shutdown()
