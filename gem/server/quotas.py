"""Per-client shares of what envs share inside one server process.

Envs made by ``gem serve`` share process-wide resources with every other session: the shell sandbox
(:func:`gem.tools.bash_tool.shell_sandbox`, whose worker runs a bounded number of processes at
once, one per open shell) and the code env's pool of threads that wait on test runs. Left shared,
one client takes them all: its terminal sessions hold every sandbox slot, or its sleeping programs
fill the test pool, and another client's reset or step waits until its call times out.

While a server runs (:func:`install`, done by :func:`gem.server.app.create_app`'s lifespan):

- every env call runs with its client's name in :func:`current_client` (set by the scheduler);
- a **shell quota**: a client holds at most ``shells_per_client`` sandbox sessions (shells,
  Python-tool kernels) at once in each of the shell sandbox and the default sandbox (by default
  a quarter, :func:`gem.http.protocol.client_share`, of what that sandbox may hold: its slots,
  the processes it runs at once, less an eighth kept for one-shot runs such as tests); one more,
  or one past the sandbox's total, raises :class:`ClientQuotaExceeded` at once (the server
  answers 429), instead of waiting for a slot;
- **test pools**: code-env tests of each client run on a pool of that client's own
  (``test_threads_per_client`` threads), so one client's tests never queue behind another's.

Calls made outside a server (no client) are not limited.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import logging
import os
import threading
import weakref
from typing import Any, Callable, Iterator, Optional

from gem.errors import GemError
from gem.http.protocol import client_share

logger = logging.getLogger(__name__)

DEFAULT_TEST_THREADS_PER_CLIENT = max(8, 4 * (os.cpu_count() or 1))  # the size of the shared pool

_local = threading.local()


class ClientQuotaExceeded(GemError, RuntimeError):
    """A client asked for more of a shared resource than its share."""


def current_client() -> Optional[str]:
    """The client whose env call this thread runs (``None`` outside a server's call)."""
    return getattr(_local, "client", None)


@contextlib.contextmanager
def acting_for(client: Optional[str]) -> Iterator[None]:
    """Run the body as ``client``'s work (see :func:`current_client`)."""
    before = current_client()
    _local.client = client
    try:
        yield
    finally:
        _local.client = before


def run_as(client: Optional[str], fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` as ``client``'s work (for a worker thread)."""
    with acting_for(client):
        return fn(*args)


class ShellQuota:
    """At most ``per_client`` sandbox sessions held at once per client, and ``total`` in all."""

    def __init__(self, per_client: int, total: Optional[int] = None) -> None:
        self.per_client = per_client
        self.total = total
        self._held: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        # releases of sessions dropped without close(), queued by their finalizers: a finalizer runs
        # when the garbage collector does, which can be inside take() on the thread that holds the
        # lock, so it must not take the lock itself (it would wait for itself forever)
        self._dropped: collections.deque[Callable[[], None]] = collections.deque()

    def _release_dropped(self) -> None:
        while True:
            try:
                release = self._dropped.popleft()
            except IndexError:
                return
            release()

    def held(self, client: Optional[str] = None) -> int:
        """Shells held by ``client`` (by every client if ``None``)."""
        self._release_dropped()
        with self._lock:
            return sum(self._held.values()) if client is None else self._held[client]

    def take(self, client: str) -> Callable[[], None]:
        """Take one of ``client``'s shells; returns its release (safe to call more than once)."""
        self._release_dropped()
        with self._lock:
            if self._held[client] >= self.per_client:
                raise ClientQuotaExceeded(
                    f"This client holds its maximum of {self.per_client} shell sandboxes (terminal or "
                    "code-tool sessions that were reset and not closed); close some sessions or retry later."
                )
            if self.total is not None and sum(self._held.values()) >= self.total:
                raise ClientQuotaExceeded(
                    f"All {self.total} shell sandboxes of this server are in use; retry later."
                )
            self._held[client] += 1
        released = threading.Event()

        def release() -> None:
            with self._lock:
                if released.is_set():
                    return
                released.set()
                self._held[client] -= 1
                if self._held[client] <= 0:
                    del self._held[client]

        return release

    def guard(self, sandbox: Any) -> Callable[[], None]:
        """Make ``sandbox.session`` take a shell of the calling client; returns the undo."""
        original = sandbox.session

        def session(*args: Any, **kwargs: Any) -> Any:
            client = current_client()
            if client is None:
                return original(*args, **kwargs)
            release = self.take(client)
            try:
                opened = original(*args, **kwargs)
            except BaseException:
                release()
                raise
            close = opened.close

            def close_and_release() -> None:
                try:
                    close()
                finally:
                    release()

            opened.close = close_and_release
            # an env dropped without close() frees its share too (queued: see ShellQuota._dropped)
            weakref.finalize(opened, self._dropped.append, release)
            return opened

        sandbox.session = session

        def undo() -> None:
            if sandbox.__dict__.get("session") is session:
                del sandbox.session

        return undo


class ClientPools:
    """An executor (``submit`` only) that runs each client's work on threads of its own.

    A client's pool (``per_client`` threads) is made on its first call and dropped once its work
    is done, so one client's queued tests never delay another's.
    """

    def __init__(self, per_client: int) -> None:
        self.per_client = per_client
        self._pools: dict[str, concurrent.futures.ThreadPoolExecutor] = {}
        self._pending: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()

    def pools(self) -> int:
        """Clients with a pool now."""
        return len(self._pools)

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        client = current_client() or "local"
        with self._lock:
            pool = self._pools.get(client)
            if pool is None:
                pool = self._pools[client] = concurrent.futures.ThreadPoolExecutor(
                    self.per_client, thread_name_prefix="gem-code-tests"
                )
            self._pending[client] += 1
        future = pool.submit(fn, *args, **kwargs)
        future.add_done_callback(lambda _: self._done(client))
        return future

    def _done(self, client: str) -> None:
        with self._lock:
            self._pending[client] -= 1
            if self._pending[client] > 0:
                return
            del self._pending[client]
            pool = self._pools.pop(client, None)
        if pool is not None:
            pool.shutdown(wait=False)

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.shutdown(wait=wait, cancel_futures=cancel_futures)


class _Installed:
    def __init__(self, shells: list[ShellQuota], pools: ClientPools, undo: list[Callable[[], None]]) -> None:
        self.shells, self.pools, self.undo, self.users = shells, pools, undo, 1


_installed: Optional[_Installed] = None
_install_lock = threading.Lock()


def check_numbers(shells_per_client: Optional[int], test_threads_per_client: int) -> None:
    """Raise ValueError unless both are positive ints (``shells_per_client`` may be None)."""
    numbers = {"shells_per_client": shells_per_client, "test_threads_per_client": test_threads_per_client}
    for name, value in numbers.items():
        if value is None and name == "shells_per_client":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}.")


def install(
    shells_per_client: Optional[int] = None,
    test_threads_per_client: int = DEFAULT_TEST_THREADS_PER_CLIENT,
) -> Callable[[], None]:
    """Share this process's sandboxes and code-test threads per client; returns the uninstall.

    Process-wide: servers in one process share one installation (the first one's numbers).
    ``shells_per_client=None``: a quarter of what each sandbox may hold (:func:`shell_capacity`).
    """
    global _installed
    check_numbers(shells_per_client, test_threads_per_client)
    with _install_lock:
        if _installed is not None:
            _installed.users += 1
        else:
            _installed = _do_install(shells_per_client, test_threads_per_client)
    done = threading.Event()

    def uninstall() -> None:
        global _installed
        with _install_lock:
            if done.is_set() or _installed is None:
                return
            done.set()
            _installed.users -= 1
            if _installed.users > 0:
                return
            for undo in reversed(_installed.undo):
                undo()
            _installed = None

    return uninstall


def installed() -> Optional[_Installed]:
    """The installation in force (its ``shells`` and ``pools``), or ``None``."""
    return _installed


def shell_capacity(slots: int) -> int:
    """Shells a sandbox of ``slots`` may hold in all: an eighth of its slots (at least one) stays
    free for one-shot runs (tests, a terminal task's grading), which never hold a slot for long."""
    return max(1, slots - max(1, slots // 8))


def sandbox_slots(sandbox: Any) -> int:
    """How many processes ``sandbox`` runs at once (its ``slots``; 256 if it does not say)."""
    slots = getattr(sandbox, "slots", None) or getattr(sandbox, "_config", {}).get("slots")
    return int(slots) if isinstance(slots, int) and slots > 0 else 256


def _do_install(shells_per_client: Optional[int], test_threads_per_client: int) -> _Installed:
    from gem.sandbox import default_sandbox

    shells: list[ShellQuota] = []
    pools = ClientPools(test_threads_per_client)
    undo: list[Callable[[], None]] = []
    boxes = [default_sandbox()]
    try:
        from gem.sandbox.shell_sandbox import shell_sandbox

        boxes.insert(0, shell_sandbox())
    except ImportError:  # pragma: no cover - part of the package; kept optional for trimmed installs
        logger.debug("no shell sandbox to share per client")
    for box in boxes:
        capacity = shell_capacity(sandbox_slots(box))
        quota = ShellQuota(min(shells_per_client or client_share(capacity), capacity), total=capacity)
        shells.append(quota)
        undo.append(quota.guard(box))
    try:
        from gem.grading import code_tests
    except ImportError:  # pragma: no cover - the test runner needs only the core
        logger.debug("no code-test pool to share per client")
    else:
        with code_tests._pool_lock:
            shared, code_tests._pool = code_tests._pool, pools

        def restore_pool() -> None:
            with code_tests._pool_lock:
                if code_tests._pool is pools:
                    code_tests._pool = shared
            pools.shutdown(wait=False)

        undo.append(restore_pool)
    return _Installed(shells, pools, undo)
