"""A bounded, fair scheduler for the server's expensive work (making envs, resets, steps).

Env calls block (a code env waits for its tests, a tool for its sandbox), so they run on worker
threads. One shared pool lets one client starve the rest: forty sessions whose steps sleep take
every thread. Here each client (a token, or a peer address without tokens) queues its own calls;
free workers are handed out round-robin over the clients that are waiting, and no client holds more
than ``per_client`` workers at once, so the others always have ``workers - per_client`` left.
Every call has a deadline covering its wait and its run.
"""

from __future__ import annotations

import asyncio
import collections
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional

from gem.server.quotas import run_as


class CallTimeout(Exception):
    """A call did not finish (or did not start) within its time limit."""

    def __init__(self, seconds: float, started: bool) -> None:
        where = "ran" if started else "waited for a worker"
        super().__init__(f"The call {where} longer than its limit of {seconds:g} s.")
        self.seconds, self.started = seconds, started


class FairScheduler:
    """Runs blocking calls on ``workers`` threads, fairly across clients.

    Use from one event loop: ``await scheduler.run(client, fn, timeout=s)``. A call that times
    out while running keeps its worker until the function returns (a thread cannot be stopped),
    and the caller gets :class:`CallTimeout` right away.
    """

    def __init__(self, workers: int = 64, per_client: Optional[int] = None) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"workers must be a positive int, got {workers!r}.")
        per_client = max(1, workers // 2) if per_client is None else per_client
        if isinstance(per_client, bool) or not isinstance(per_client, int) or not 1 <= per_client <= workers:
            raise ValueError(f"per_client must be an int from 1 to workers={workers}, got {per_client!r}.")
        self.workers, self.per_client = workers, per_client
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="gem-env")
        self._free = workers
        self._running: collections.Counter[str] = collections.Counter()
        self._waiting: dict[str, collections.deque[asyncio.Future]] = {}
        self._order: collections.deque[str] = collections.deque()  # clients with waiting calls
        self.completed = 0
        self.timeouts = 0

    @property
    def busy(self) -> int:
        """Workers running a call now."""
        return self.workers - self._free

    @property
    def queued(self) -> int:
        """Calls waiting for a worker."""
        return sum(len(q) for q in self._waiting.values())

    def running(self, client: str) -> int:
        return self._running[client]

    async def run(
        self, client: str, fn: Callable[..., Any], *args: Any, timeout: float,
        on_done: Optional[Callable[[], None]] = None,
    ) -> Any:
        """``fn(*args)`` on a worker once this client's turn comes; raises :class:`CallTimeout`.

        ``on_done`` is called (on the event loop) once ``fn`` has returned, or at once if the call
        never started: whatever the caller's fate (timed out, cancelled), ``fn`` is no longer running.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        grant: asyncio.Future = loop.create_future()
        if client not in self._waiting:
            self._waiting[client] = collections.deque()
            self._order.append(client)
        self._waiting[client].append(grant)
        self._dispatch()
        try:
            await asyncio.wait_for(asyncio.shield(grant), timeout)
        except BaseException as exc:
            if grant.done() and not grant.cancelled():
                self._release(client)  # granted at the last moment: give the worker back
            else:
                grant.cancel()
                self._dispatch()  # drops the cancelled entry
            if on_done is not None:
                on_done()
            if isinstance(exc, asyncio.TimeoutError):
                self.timeouts += 1
                raise CallTimeout(timeout, started=False) from None
            raise
        try:
            future = self._executor.submit(run_as, client, fn, *args)  # the env's work knows its client
        except BaseException:
            self._release(client)
            if on_done is not None:
                on_done()
            raise

        def finished(_: Any) -> None:
            self._release(client)
            if on_done is not None:
                on_done()

        def on_thread_done(f: Any) -> None:
            try:
                loop.call_soon_threadsafe(finished, f)
            except RuntimeError:  # the event loop is closed: the server has shut down
                pass

        future.add_done_callback(on_thread_done)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), max(deadline - loop.time(), 0.001))
        except asyncio.TimeoutError:
            self.timeouts += 1
            raise CallTimeout(timeout, started=True) from None

    def _release(self, client: str) -> None:
        self._free += 1
        self._running[client] -= 1
        if self._running[client] <= 0:
            del self._running[client]
        self.completed += 1
        self._dispatch()

    def _dispatch(self) -> None:
        """Hand free workers to waiting calls, one client at a time, round-robin."""
        passes_without_grant = 0
        while self._order and passes_without_grant < len(self._order):
            client = self._order.popleft()
            queue = self._waiting[client]
            while queue and queue[0].done():  # cancelled while waiting
                queue.popleft()
            if not queue:
                del self._waiting[client]
                passes_without_grant = 0
                continue
            if self._free == 0 or self._running[client] >= self.per_client:
                self._order.append(client)
                passes_without_grant += 1
                continue
            queue.popleft().set_result(None)
            self._free -= 1
            self._running[client] += 1
            passes_without_grant = 0
            if queue:
                self._order.append(client)
            else:
                del self._waiting[client]

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
