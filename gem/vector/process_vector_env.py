"""The vector env whose envs live in worker processes (several envs per worker).

Threads cannot run CPU-bound Python side by side (the GIL); processes can. Each worker owns a
contiguous shard of the envs and runs them with the same code as the sync backend (one
:class:`~gem.vector.vector_env.EnvSlot` per env, so autoreset, ``final_obs``/``final_info`` and
errors are exactly the sync backend's). One ``step`` sends one message per worker (the actions of its
ready envs) over a pipe and receives one message back, so the IPC cost is per worker, not per
env. Results come back in index order.

Workers start with the ``forkserver`` context where the platform has it (a small server that
has already imported gem forks each worker: fast, and safe with threads in the parent), else
``spawn``. A worker that dies (killed, segfault, out of memory) is started again; the episodes of
its envs are reported as truncated, with the reason under ``info["final_info"]["worker_crash"]``
(``SAME_STEP``) or ``info["worker_crash"]`` (``NEXT_STEP``), and the other envs go on.

With ``step_timeout``, each worker writes which env it is running, and since when, into a few
bytes of shared memory; an env call that runs longer makes the parent kill that worker and raise
:class:`gem.errors.VectorEnvTimeout` naming the env (the other workers' answers are collected
first). The worker starts again on the next call and its envs' episodes are reported truncated,
as after a crash.

``call``/``get_attr``/``set_attr`` run in the workers; values travel by pickle. ``vec.envs``
raises :class:`gem.errors.EnvsNotInProcess` (the envs are not in this process).

:class:`~gem.vector.sharded_vector_env.ShardedVectorEnv` (in :mod:`gem.vector.sharded_vector_env`,
re-exported here with :class:`EnvGroup` and :class:`WorkerDied`) holds the parts shared with the
Ray backend (sharding, batching, crash and timeout handling); this module only says how to start
a worker process and how to talk to it.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import pickle
import signal
import weakref
from time import monotonic
from typing import Any, Callable, Optional, Sequence, Union

from gem.core import Env
from gem.envs.registration import EnvSpec
from gem.errors import VectorEnvError
from gem.vector.vector_env import CRASH_INFO_KEY, AutoresetMode
from gem.vector.sharded_vector_env import (
    EnvGroup,
    START_TIMEOUT_SECONDS,
    STOP_TIMEOUT_SECONDS,
    ShardedVectorEnv,
    WorkerDied,
    portable_exception,
)

logger = logging.getLogger(__name__)

__all__ = ["CRASH_INFO_KEY", "EnvGroup", "ProcessVectorEnv", "ShardedVectorEnv", "WorkerDied"]

# A worker that finds itself re-running the user's script (no main guard) exits with this status.
MAIN_NOT_GUARDED_EXIT = 87


def main_not_guarded_message(context: str) -> str:
    """The one explanation given when a script builds a process vector env without a main guard."""
    return (
        "This script creates a process vector env outside `if __name__ == '__main__':`. With the "
        f"{context!r} start method each worker process imports the main script again, so put the code "
        "that builds and uses vector envs under `if __name__ == '__main__':` (or pass context='fork' when "
        "the parent has no threads, or use backend='thread')."
    )


def _importing_main_in_a_worker() -> bool:
    """Whether this process is a new worker still importing its parent's main script (where
    ``multiprocessing`` forbids starting processes)."""
    return bool(getattr(mp.process.current_process(), "_inheriting", False))


def _worker_main(
    conn: Any, env_ids: list[str], env_fns: list[Any], specs: list[EnvSpec], mode: str, progress: Any
) -> None:
    """A worker process: build the shard, then answer ``(command, argument)`` messages."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    try:
        group = EnvGroup(env_ids, env_fns, specs, mode, progress)
    except BaseException as exc:  # noqa: BLE001 - sent to the parent, which raises it
        conn.send(("fail", portable_exception(exc)))
        conn.close()
        return
    conn.send(("ok", None))
    while True:
        try:
            command, argument = conn.recv()
        except (EOFError, OSError):  # the parent is gone
            break
        try:
            conn.send(("ok", getattr(group, command)(argument)))
        except Exception as exc:  # noqa: BLE001 - the parent re-raises it
            conn.send(("fail", portable_exception(exc)))
        if command == "close":
            break
    conn.close()


class ProcessVectorEnv(ShardedVectorEnv):
    """Envs in worker processes: CPU-bound envs run side by side (see the module docstring).

    Args:
        num_workers: worker processes (default: one per CPU, at most one per env).
        context: ``"forkserver"`` (default where available), ``"spawn"``, or ``"fork"`` (only
            safe when the parent has no threads).
        start_timeout: seconds a worker may take to build its envs.
        step_timeout: seconds one env may take for one call (reset, step, ``call``...); a worker
            whose env runs longer is killed (see the module docstring). ``None``: no limit.
    """

    def __init__(
        self,
        env_ids: Sequence[str],
        env_fns: Sequence[Callable[[], Env]],
        autoreset_mode: Union[str, AutoresetMode] = AutoresetMode.SAME_STEP,
        num_workers: Optional[int] = None,
        context: Optional[str] = None,
        start_timeout: float = START_TIMEOUT_SECONDS,
        step_timeout: Optional[float] = None,
    ) -> None:
        if _importing_main_in_a_worker():
            # A worker re-running a script that has no main guard: leave quietly (no traceback per
            # worker); the parent sees the status and explains, once.
            os._exit(MAIN_NOT_GUARDED_EXIT)
        methods = mp.get_all_start_methods()
        context = context or ("forkserver" if "forkserver" in methods else "spawn")
        if context not in methods:
            raise ValueError(f"Unknown start method {context!r}; choose one of: {', '.join(methods)}.")
        self._ctx = mp.get_context(context)
        if context == "forkserver":
            # The fork server imports gem once; every worker forked from it starts warm.
            self._ctx.set_forkserver_preload(["gem", __name__])
        self.context = context
        self._start_timeout = start_timeout
        self._procs: dict[int, Any] = {}
        self._conns: dict[int, Any] = {}
        self._progress_arrays: dict[int, Any] = {}  # per worker: [local index running or -1, start]
        super().__init__(env_ids, env_fns, autoreset_mode, num_workers, step_timeout)
        self._finalizer = weakref.finalize(self, _close_pipes, self._procs, self._conns)

    def _launch(self, worker: int) -> None:
        parent_conn, child_conn = self._ctx.Pipe()
        progress = self._progress_arrays[worker] = self._ctx.RawArray("d", [-1.0, 0.0])
        proc = self._ctx.Process(
            target=_worker_main,
            args=(child_conn, *self._shard_args(worker), progress),
            name=f"gem-vec-worker-{worker}",
            daemon=False,  # envs may start processes of their own (sandboxes)
        )
        try:
            proc.start()
        except (pickle.PicklingError, AttributeError, TypeError) as exc:
            raise ValueError(
                f"The process backend could not send worker {worker}'s env factories to it ({exc}). "
                "Entry points and wrappers must be importable by name (a 'module:Class' string or a "
                "module-level class/function, not a lambda); or use backend='thread'."
            ) from exc
        finally:
            child_conn.close()
        self._procs[worker], self._conns[worker] = proc, parent_conn

    def _wait_ready(self, worker: int) -> None:
        conn = self._conns[worker]
        if not conn.poll(self._start_timeout):
            raise VectorEnvError(
                f"Vector env worker {worker} did not build its envs within {self._start_timeout:.0f} s.",
                index=self.shards[worker].start,
                env_id=self.env_ids[self.shards[worker].start],
            )
        try:
            self._receive(worker)  # raises what building the envs raised
        except WorkerDied as died:
            first = self.shards[worker].start
            proc = self._procs.get(worker)
            if proc is not None and proc.exitcode == MAIN_NOT_GUARDED_EXIT:
                raise VectorEnvError(
                    f"{main_not_guarded_message(self.context)} (Worker {worker} exited while building envs {first}-{self.shards[worker].stop - 1}.)",
                    index=first,
                    env_id=self.env_ids[first],
                ) from None
            raise VectorEnvError(
                f"Vector env worker {worker} {died} while building envs {first}-{self.shards[worker].stop - 1}. "
                f"With the {self.context!r} start method a script must create vector envs under "
                "`if __name__ == '__main__':` (workers import the main module); or pass context='fork' "
                "when the parent has no threads.",
                index=first,
                env_id=self.env_ids[first],
            ) from died

    def _send(self, worker: int, command: str, argument: Any) -> None:
        try:
            self._conns[worker].send((command, argument))
        except (BrokenPipeError, ConnectionResetError, EOFError, OSError) as exc:
            raise WorkerDied(self._describe_death(worker, exc)) from exc

    def _poll(self, worker: int, seconds: float) -> bool:
        try:
            return self._conns[worker].poll(seconds)
        except (EOFError, OSError):  # a closed pipe: _receive reports the death
            return True

    def _progress(self, worker: int) -> Optional[tuple[int, float]]:
        progress = self._progress_arrays[worker]
        local = int(progress[0])
        return None if local < 0 else (local, monotonic() - progress[1])

    def _receive(self, worker: int) -> Any:
        try:
            status, value = self._conns[worker].recv()
        except (EOFError, ConnectionResetError, OSError) as exc:
            raise WorkerDied(self._describe_death(worker, exc)) from exc
        if status == "fail":
            raise value
        return value

    def _describe_death(self, worker: int, exc: BaseException) -> str:
        proc = self._procs.get(worker)
        if proc is None:
            return f"is not running ({exc})"
        proc.join(timeout=STOP_TIMEOUT_SECONDS)
        code = proc.exitcode
        if code is not None and code < 0:
            try:
                how = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        elif code is not None:
            how = f"exited with status {code}"
        else:
            how = f"stopped answering ({type(exc).__name__})"
        return f"(pid {proc.pid}) died: {how}"

    def _stop(self, worker: int, kill: bool = False) -> None:
        proc, conn = self._procs.pop(worker, None), self._conns.pop(worker, None)
        if proc is None:
            return
        if not kill and proc.is_alive() and conn is not None:
            try:
                conn.send(("close", None))
                if conn.poll(STOP_TIMEOUT_SECONDS):
                    conn.recv()
            except (EOFError, OSError):
                pass
        if conn is not None:
            conn.close()
        proc.join(timeout=0 if kill else STOP_TIMEOUT_SECONDS)
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=STOP_TIMEOUT_SECONDS)

    def worker_pids(self) -> list[int]:
        """The process id of each worker (for monitoring, or to test crash recovery)."""
        return [self._procs[w].pid for w in range(self.num_workers)]


def _close_pipes(procs: dict[int, Any], conns: dict[int, Any]) -> None:
    """At garbage collection or exit: close the pipes so idle workers see EOF and exit."""
    for conn in conns.values():
        conn.close()
    for proc in procs.values():
        proc.join(timeout=STOP_TIMEOUT_SECONDS)
        if proc.is_alive():
            proc.kill()
