"""Grade a math answer against the gold answer: fast exact paths, then math-verify under a hard deadline.

``grade_math(answer, gold)`` compares an extracted answer (the content of the last ``\\boxed{}``)
with one gold answer or a list of them and returns a :class:`~gem.grading.result.GradeResult`.
Cheap checks come first, in this process (:mod:`gem.grading.math_answers`: the same string after
light normalization, or the same number). Whatever they cannot decide goes to math-verify
(numbers, fractions, LaTeX, sets, intervals, equations, units), which runs in a small pool of
worker processes (:class:`MathGrader`). Without math-verify (the core install, without the ``math``
extra), an answer to a gold answer that is a plain number is graded exactly instead
(:func:`~gem.grading.math_answers.number_verdict`: the same value as a fraction, an expression
or a rounded decimal is wrong); any other answer the fast paths cannot decide raises
:class:`~gem.errors.DependencyNotInstalled` naming the extra, which an env checks when it is built
(:func:`require_math_verify`), never in ``step``.

Grading never calls a correct answer wrong because it could not finish: the result's ``status`` is
``"ok"`` (``correct`` is the verdict), ``"timeout"`` (math-verify used its whole time budget on
this answer) or ``"error"`` (the queue was full, the workers could not start, a worker died or
math-verify raised); ``component`` and ``reason`` say what failed. The time budget is the call's
own work: waiting for a free worker behind other answers does not count, and the worker measures
CPU time, so a busy machine does not eat into it either (the parent still kills a worker stuck in
C code at a wall-clock backstop). The boolean helpers (``grade_answer``, ``MathGrader.grade``)
answer ``True`` only for a graded correct answer. No signals are used in the caller. Answers
longer than :data:`MAX_VERIFY_CHARS` are never sent to math-verify (only the exact paths judge
them), so a 100 KB answer costs one linear pass.

The workers are forked from a zygote process (``python -m gem.grading._math_worker``) that imports
math-verify once, on first need; a killed worker is replaced by a fresh fork in milliseconds.
Nothing re-imports the user's main script, so this is safe in scripts without a ``__main__``
guard, in thread pools and in vector envs.
"""

from __future__ import annotations

import atexit
import functools
import importlib.util
import logging
import json
import os
import queue
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence, Union

from gem.errors import missing_extra
from gem.utils.parsing import extract_last_boxed_answer
from gem.grading.math_answers import braces_balanced, fast_verdict, is_huge_power, number_verdict, parse_number
from gem.grading.result import GRADING_STATUSES, GradeResult, graded, ungraded  # noqa: F401  (GRADING_STATUSES: its former home)

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 2.0  # CPU seconds math-verify may spend on one call, once a worker has it
WORKER_START_TIMEOUT_S = 60.0  # a cold worker imports sympy and math-verify
MAX_VERIFY_CHARS = 2000
HARD_LIMIT_FACTOR = 1.5  # the parent kills a worker after this many times the budget in wall time
HARD_LIMIT_SLACK_S = 0.5  # ... plus this (a busy machine may give the worker less than a core)
DEFAULT_MAX_PENDING = 10_000  # calls waiting for a worker; more are reported as ungraded at once
RESULT_CACHE_SIZE = 8192

Gold = Union[str, int, float, Sequence[Union[str, int, float]]]


class _Channel:
    """Line-oriented reads from a socket with a deadline (select, so it works from any thread)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""
        self.closed = False  # the other side is gone (end of file or a socket error)

    def read_line(self, deadline: float) -> Optional[bytes]:
        """The next line, or ``None`` at the deadline or when the other side is gone (``closed``)."""
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            try:
                readable, _, _ = select.select([self.sock], [], [], remaining)
                if not readable:
                    return None
                chunk = self.sock.recv(65536)
            except (OSError, ValueError):
                self.closed = True
                return None
            if not chunk:
                self.closed = True
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line


class _Worker(_Channel):
    """A forked math-verify worker: its pid (to kill it) and its socket (one JSON line each way)."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        super().__init__(sock)
        self.pid = pid
        self.answered = True  # it replied to its last request (else it is killed and replaced)

    def ask(self, pred: str, golds: list[str], budget: float) -> GradeResult:
        """math-verify's verdict within ``budget`` CPU seconds (wall-clock backstop: see the module)."""
        hard = budget * HARD_LIMIT_FACTOR + HARD_LIMIT_SLACK_S
        deadline = time.monotonic() + hard
        request = json.dumps([pred, golds, budget]).encode() + b"\n"
        self.answered = False
        try:
            self.sock.settimeout(hard)
            self.sock.sendall(request)
        except OSError as exc:
            return ungraded("error", "math-verify", f"the worker could not take the answer ({exc}).")
        line = self.read_line(deadline)
        if line is None:
            if self.closed:
                return ungraded("error", "math-verify", "the worker process died while grading.")
            return ungraded("timeout", "math-verify", f"still running after {hard:g} s of wall time.")
        self.answered = True
        line = line.strip()
        if line in (b"true", b"false"):
            return graded(line == b"true")
        if line == b"timeout":
            return ungraded("timeout", "math-verify", f"used its whole budget of {budget:g} s of CPU time.")
        return ungraded("error", "math-verify", line.decode("utf-8", "replace").removeprefix("error "))

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:  # already gone
            pass
        self.sock.close()


class _Zygote(_Channel):
    """A warm process (math-verify imported) that forks workers on request, in milliseconds."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        package_root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = package_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gem.grading._math_worker", "--fd", str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        theirs.close()
        super().__init__(ours)
        self.ready = False
        self.lock = threading.Lock()

    def _wait_ready(self, timeout: float) -> bool:
        if not self.ready:
            self.ready = self.read_line(time.monotonic() + timeout) == b"ready"
        return self.ready

    def wait_ready(self, timeout: float) -> bool:
        with self.lock:
            return self._wait_ready(timeout)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def spawn(self, timeout: float) -> Optional[_Worker]:
        """A new worker, or ``None`` if the zygote is not ready in ``timeout`` seconds or is gone."""
        with self.lock:
            if not self._wait_ready(timeout):
                return None
            try:
                self.sock.sendall(b"spawn\n")
                readable, _, _ = select.select([self.sock], [], [], timeout)
                if not readable:
                    return None
                message, fds, _, _ = socket.recv_fds(self.sock, 64, 1)
            except (OSError, ValueError):
                return None
            if not fds:
                return None
            return _Worker(int(message.strip()), socket.socket(fileno=fds[0]))

    def close(self) -> None:
        self.sock.close()  # the zygote exits on end of file
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class MathGrader:
    """math-verify behind a pool of worker processes, with a time budget per call.

    The workers are forked from a warm zygote process (started on first need, about two seconds
    of imports), so a worker killed at its deadline is replaced in milliseconds.

    Args:
        workers: how many worker processes (default: 2, or 1 on a one-core machine).
        timeout: CPU seconds math-verify may spend on one call. Time spent waiting for a free
            worker does not count; a call that uses it all is reported as ``"timeout"``.
        start_timeout: seconds to wait for the zygote to import math-verify (once).
        max_pending: calls that may wait for a worker at once; one more is reported at once as
            ``"error"`` (queue full) instead of waiting.
        queue_timeout: the longest a call waits for a free worker (``None``: as long as it takes,
            so that load never turns a correct answer into an ungraded one).
    """

    def __init__(
        self,
        workers: Optional[int] = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        start_timeout: float = WORKER_START_TIMEOUT_S,
        max_pending: int = DEFAULT_MAX_PENDING,
        queue_timeout: Optional[float] = None,
    ) -> None:
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
            raise ValueError(f"workers must be a positive int, got {workers!r}.")
        if not timeout > 0:
            raise ValueError(f"timeout must be positive seconds, got {timeout!r}.")
        if isinstance(max_pending, bool) or not isinstance(max_pending, int) or max_pending < 1:
            raise ValueError(f"max_pending must be a positive int, got {max_pending!r}.")
        if queue_timeout is not None and not queue_timeout > 0:
            raise ValueError(f"queue_timeout must be positive seconds or None, got {queue_timeout!r}.")
        self.workers = workers or max(1, min(2, os.cpu_count() or 1))
        self.timeout = float(timeout)
        self.start_timeout = float(start_timeout)
        self.max_pending = max_pending
        self.queue_timeout = queue_timeout
        self.timeouts = 0  # calls that used their whole budget, for monitoring
        self.errors = 0  # calls that could not be graded for another reason
        self._pending = 0
        self._idle: "queue.Queue[_Worker]" = queue.Queue()
        self._all: list[_Worker] = []
        self._zygote: Optional[_Zygote] = None
        self._lock = threading.Lock()
        self._repair_lock = threading.Lock()
        self._pid = os.getpid()
        self._results: "OrderedDict[tuple[str, tuple[str, ...]], bool]" = OrderedDict()

    # ------------------------------------------------------------ lifecycle
    def _forget_if_forked(self) -> bool:
        """In a forked copy of the process, drop the parent's workers and lock (they are not ours)."""
        if self._pid == os.getpid():
            return False
        self._pid = os.getpid()
        self._lock, self._repair_lock = threading.Lock(), threading.Lock()
        self._all, self._idle, self._zygote, self._pending = [], queue.Queue(), None, 0
        return True

    def _start(self) -> None:
        """Start the zygote and fill the pool (on first need; again if the zygote died)."""
        self._forget_if_forked()
        with self._lock:
            if self._zygote is not None and self._zygote.alive():
                return
            try:
                import math_verify  # noqa: F401  (fail here, with the fix, not in a worker)
            except ImportError as exc:
                raise missing_extra("Math grading", "math", "math-verify") from exc
            self._stop_locked()
            self._zygote = _Zygote()
            missing = self.workers
        for _ in range(missing):
            self._add_worker()

    def _add_worker(self) -> bool:
        zygote = self._zygote
        worker = zygote.spawn(self.start_timeout) if zygote is not None else None
        if worker is None:
            logger.warning("The math-verify zygote could not fork a worker; it will be restarted.")
            with self._lock:
                if self._zygote is zygote and zygote is not None and not zygote.alive():
                    self._zygote = None  # the next call starts a new one
            return False
        with self._lock:
            self._all.append(worker)
        self._idle.put(worker)
        return True

    def _replace(self, worker: _Worker) -> None:
        worker.kill()
        with self._lock:
            if worker in self._all:
                self._all.remove(worker)
        try:
            self._repair()
        except Exception as exc:  # noqa: BLE001 -- the next call retries
            logger.warning("Could not replace a math-verify worker: %s", exc)

    def _repair(self) -> None:
        """While waiting for a worker: restart a dead zygote and refill a pool that shrank."""
        self._start()
        with self._repair_lock:
            with self._lock:
                missing = self.workers - len(self._all)
            for _ in range(missing):
                if not self._add_worker():
                    break

    def warm_up(self, timeout: Optional[float] = None) -> bool:
        """Start the zygote and workers now (not in the first timed call); ``True`` when ready."""
        self._start()
        zygote = self._zygote
        ready = zygote is not None and zygote.wait_ready(self.start_timeout if timeout is None else timeout)
        return ready and len(self._all) >= self.workers

    def _stop_locked(self) -> None:
        workers, self._all = self._all, []
        for worker in workers:
            worker.kill()
        self._idle = queue.Queue()
        if self._zygote is not None:
            self._zygote.close()
            self._zygote = None

    def close(self) -> None:
        """Stop the zygote and every worker (a later call starts new ones)."""
        if self._forget_if_forked():
            return  # a forked copy must not kill its parent's workers
        with self._lock:
            self._stop_locked()

    # -------------------------------------------------------------- grading
    def _take_worker(self) -> tuple[Optional[_Worker], str]:
        """A free worker, waiting as long as ``queue_timeout`` allows; ``(None, why)`` when it runs
        out, or when no worker has existed for ``start_timeout`` seconds (they cannot start)."""
        start = time.monotonic()
        give_up = None if self.queue_timeout is None else start + self.queue_timeout
        without_workers_since: Optional[float] = None
        while True:
            wait = 1.0 if give_up is None else min(1.0, give_up - time.monotonic())
            try:
                return self._idle.get(timeout=max(0.0, wait)), ""
            except queue.Empty:
                pass
            now = time.monotonic()
            if give_up is not None and now >= give_up:
                return None, f"no worker was free within {self.queue_timeout:g} s."
            if self._all:
                without_workers_since = None
            elif without_workers_since is None:
                without_workers_since = now
            elif now - without_workers_since > self.start_timeout:
                return None, f"no worker could be started in {self.start_timeout:g} s."
            try:
                self._repair()
            except Exception as exc:  # noqa: BLE001 -- keep waiting; the zygote may come back
                logger.warning("Could not restart the math-verify workers: %s", exc)

    def verify_result(self, pred: str, golds: Sequence[str], timeout: Optional[float] = None) -> GradeResult:
        """math-verify's verdict on ``pred`` against any of ``golds``, with ``timeout`` CPU seconds."""
        key = (pred, tuple(golds))
        with self._lock:
            cached = self._results.get(key)
            if cached is not None:
                self._results.move_to_end(key)
                return graded(cached)
            if self._pending >= self.max_pending:
                self.errors += 1
                return ungraded("error", "math-verify", f"{self._pending} answers were already waiting (max_pending).")
            self._pending += 1
        try:
            result = self._verify_once(pred, list(golds), self.timeout if timeout is None else float(timeout))
        finally:
            with self._lock:
                self._pending -= 1
        if result.graded:
            with self._lock:
                self._results[key] = bool(result.correct)
                if len(self._results) > RESULT_CACHE_SIZE:
                    self._results.popitem(last=False)
        elif result.status == "timeout":
            self.timeouts += 1
        else:
            self.errors += 1
        return result

    def _verify_once(self, pred: str, golds: list[str], budget: float) -> GradeResult:
        self._start()
        worker, why = self._take_worker()
        if worker is None:
            return ungraded("error", "math-verify", why)
        result = worker.ask(pred, golds, budget)
        if worker.answered:
            self._idle.put(worker)  # a verdict, its own soft limit or math-verify raising: keep it
        else:
            logger.debug("math-verify %s on %r (%s); worker replaced.", result.status, pred[:80], result.reason)
            self._replace(worker)
        return result

    def verify(self, pred: str, golds: Sequence[str], timeout: Optional[float] = None) -> bool:
        """``True`` when math-verify grades ``pred`` equal to any of ``golds`` (see :meth:`verify_result`)."""
        return self.verify_result(pred, golds, timeout).correct is True

    def judge(self, pred: Optional[str], gold: Gold, timeout: Optional[float] = None) -> GradeResult:
        """Grade the extracted answer ``pred`` against ``gold`` (one answer or a list of them).

        Never reports a correct answer as wrong: a call that cannot finish comes back with status
        ``"timeout"`` or ``"error"`` and ``correct=None``.
        """
        if pred is None or not isinstance(pred, str):
            return graded(False)
        golds = _golds(gold)
        if not golds or not pred.strip():
            return graded(False)
        undecided = []
        for g in golds:
            verdict = fast_verdict(pred, g)
            if verdict:
                return graded(True)
            if verdict is None:
                undecided.append(g)
        if not undecided or len(pred) > MAX_VERIFY_CHARS or not braces_balanced(pred) or is_huge_power(pred):
            return graded(False)
        if not math_verify_installed():
            if any(parse_number(g) is None for g in undecided):
                raise missing_extra("Math grading", "math", "math-verify")
            # no math-verify (the core install): a number is graded exactly, as a fraction
            return graded(any(number_verdict(pred, g) for g in undecided), details={"grader": "exact number"})
        undecided = [g for g in undecided if len(g) <= MAX_VERIFY_CHARS]
        if not undecided:
            return graded(False)
        return self.verify_result(pred, undecided, timeout)

    def grade(self, pred: Optional[str], gold: Gold, timeout: Optional[float] = None) -> bool:
        """Whether the extracted answer ``pred`` is graded equal to ``gold`` (``False`` if ungraded)."""
        return self.judge(pred, gold, timeout).correct is True

    def grade_many(
        self, preds: Sequence[Optional[str]], golds: Sequence[Gold], timeout: Optional[float] = None
    ) -> list[bool]:
        """``grade`` over pairs, using every worker at once; results in input order."""
        if len(preds) != len(golds):
            raise ValueError(f"{len(preds)} predictions for {len(golds)} gold answers.")
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return list(pool.map(lambda pg: self.grade(pg[0], pg[1], timeout), zip(preds, golds)))


@functools.lru_cache(maxsize=None)
def math_verify_installed() -> bool:
    """Whether math-verify (the ``math`` extra) is installed. Without it, answers to gold answers
    that are plain numbers are graded exactly (:func:`~gem.grading.math_answers.number_verdict`) and
    any other answer raises :class:`~gem.errors.DependencyNotInstalled` naming the extra."""
    return importlib.util.find_spec("math_verify") is not None


def golds_need_math_verify(golds: "Iterable[Gold]") -> bool:
    """Whether grading answers to ``golds`` (one gold answer, or a list of them, per item) needs
    math-verify: some gold answer is not a plain number."""
    return any(parse_number(g) is None for gold in golds for g in _golds(gold))


def require_math_verify(feature: str, golds: "Iterable[Gold]") -> None:
    """Raise :class:`~gem.errors.DependencyNotInstalled` (naming the ``math`` extra) if ``golds``
    need math-verify and it is not installed; an env calls it when it is built, so that no step
    raises for the missing extra."""
    if not math_verify_installed() and golds_need_math_verify(golds):
        raise missing_extra(f"{feature} (its answers are not all plain numbers)", "math", "math-verify")


def _golds(gold: Gold) -> list[str]:
    if isinstance(gold, (list, tuple)):
        return [str(g) for g in gold if g is not None]
    if gold is None:
        return []
    text = str(gold)
    if "\\boxed" in text:  # a full solution as gold: its last box is the answer
        text = extract_last_boxed_answer(text) or text
    return [text]


_default: Optional[MathGrader] = None
_default_lock = threading.Lock()


def default_grader() -> MathGrader:
    """The process-wide grader that envs share (its workers start on first use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = MathGrader()
            atexit.register(_default.close)
        return _default


def grade_math(
    answer: Optional[str], gold: Gold, timeout: Optional[float] = None, grader: Optional[MathGrader] = None
) -> GradeResult:
    """Grade the extracted ``answer`` (the content of the last ``\\boxed{}``) against ``gold``, one
    answer or a list of them, with ``grader`` (default: the shared one) and ``timeout`` CPU seconds.

    ``status == "ok"`` with ``correct``/``score`` 1.0 or 0.0, or ungraded (``"timeout"``/``"error"``).
    """
    return (grader or default_grader()).judge(answer, gold, timeout)


def grade_answer(pred: Optional[str], gold: Gold, timeout: Optional[float] = None) -> bool:
    """Whether the answer ``pred`` (already extracted) equals ``gold``, with the shared grader."""
    return default_grader().grade(pred, gold, timeout)


def grade_response(response: str, gold: Gold, timeout: Optional[float] = None) -> Optional[bool]:
    """Grade the last ``\\boxed{}`` of a model response; ``None`` if it has no complete box."""
    pred = extract_last_boxed_answer(response)
    if pred is None:
        return None
    return grade_answer(pred, gold, timeout)


def boxed_reward_fn(
    model_response: str,
    gt_answer: Gold,
    fast: bool = False,
    correct_reward: float = 1.0,
    incorrect_reward: float = 0.0,
) -> tuple[dict[str, Any], float]:
    """``({"formatted": bool}, reward)`` for a response: ``correct_reward`` when its last box is graded
    correct, else ``incorrect_reward``.

    ``fast=True`` uses only the in-process exact paths (no math-verify).
    """
    pred = extract_last_boxed_answer(model_response)
    if pred is None:
        return {"formatted": False}, incorrect_reward
    if fast:
        correct = any(fast_verdict(pred, g) for g in _golds(gt_answer))
    else:
        correct = grade_answer(pred, gt_answer)
    return {"formatted": True}, correct_reward if correct else incorrect_reward
