"""The math-verify zygote and its workers, for :mod:`gem.grading.math_pool`.

``python -m gem.grading._math_worker --fd N`` imports math-verify (and warms it up) once,
says ``ready`` on the control socket ``N``, then forks a worker for every ``spawn`` line it reads,
sending the worker's pid and one end of a fresh socket pair back over the control socket. A
fork of this warm, single-threaded process is ready in milliseconds, so a worker killed at its
deadline is replaced at once. The zygote exits when the control socket closes.

A worker reads one JSON request per line (``[prediction, [gold, ...], soft limit in seconds]``)
and answers one line: ``true``, ``false``, ``timeout`` (the soft limit was reached) or
``error <why>`` (math-verify raised). math-verify runs without its own timeouts; the worker (whose
main thread is free for signals) interrupts itself when it has used the soft limit in CPU time
(``ITIMER_PROF``), so time spent waiting for a CPU on a busy machine does not count against the
answer. Work stuck in C (a huge integer power) does not see the signal: the parent kills the worker
at its hard deadline, from any thread.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import signal
import socket
import sys
from typing import Any, Callable

_WARM_UP = (
    ("1", "1"), ("x^2+2x+1", "(x+1)^2"), ("\\{1,2\\}", "\\{2,1\\}"), ("(1,2]", "(1,2]"),
    ("\\sqrt{2}/2", "\\frac{\\sqrt{2}}{2}"), ("y=2x+1", "y=1+2x"),
)


def _setup() -> Callable[[str, list[str]], bool]:
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    logging.getLogger("latex2sympy2_extended").setLevel(logging.ERROR)
    from latex2sympy2_extended.latex2sympy2 import NormalizationConfig
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    latex = LatexExtractionConfig(
        boxed_match_priority=0,
        normalization_config=NormalizationConfig(
            basic_latex=True, units=True, malformed_operators=True, nits=True, boxed="all", equations=False
        ),
    )
    configs = [latex, ExprExtractionConfig()]

    @functools.lru_cache(maxsize=4096)
    def parse_gold(gold: str) -> Any:
        text = gold if "\\boxed" in gold or "$" in gold else f"${gold}$"
        return parse(text, extraction_config=configs, parsing_timeout=None)

    def grade(pred: str, golds: list[str]) -> bool:
        parsed_pred = parse(f"\\boxed{{{pred}}}", extraction_config=configs, parsing_timeout=None)
        if not parsed_pred:
            return False
        for gold in golds:
            parsed_gold = parse_gold(gold)
            if parsed_gold and verify(parsed_gold, parsed_pred, timeout_seconds=None):
                return True
        return False

    # Load the grammars and sympy's simplifier now, not during the first timed call.
    for pred, gold in _WARM_UP:
        grade(pred, [gold])
    return grade


class _SoftLimit(BaseException):  # not an Exception, so library code cannot swallow it
    pass


def _interrupt(signum: int, frame: Any) -> None:
    raise _SoftLimit()


def serve(grade: Callable[[str, list[str]], bool], conn: socket.socket) -> None:
    """Answer requests on ``conn`` until it closes."""
    signal.signal(signal.SIGPROF, _interrupt)
    reader = conn.makefile("rb")
    for line in reader:
        try:
            pred, golds, limit = json.loads(line)
            signal.setitimer(signal.ITIMER_PROF, max(0.01, float(limit)))
            try:
                answer = b"true" if grade(pred, list(golds)) else b"false"
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
        except _SoftLimit:
            answer = b"timeout"
        except Exception as exc:  # math-verify itself failed: the answer is not graded
            answer = f"error {type(exc).__name__}: {exc}".replace("\n", " ")[:300].encode("utf-8", "replace")
        conn.sendall(answer + b"\n")


def zygote(control: socket.socket) -> None:
    """Fork a worker for each ``spawn`` request on ``control``; exit when it closes."""
    grade = _setup()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped automatically
    control.sendall(b"ready\n")
    reader = control.makefile("rb")
    for line in reader:
        if line.strip() != b"spawn":
            continue
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:  # the worker
            try:
                reader.close()
                control.close()
                theirs.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                serve(grade, ours)
            finally:
                os._exit(0)
        ours.close()
        socket.send_fds(control, [f"{pid}\n".encode()], [theirs.fileno()])
        theirs.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="math-verify zygote for gem.grading.math_pool")
    parser.add_argument("--fd", type=int, required=True, help="the control socket's file descriptor")
    args = parser.parse_args(argv)
    control = socket.socket(fileno=args.fd)
    try:
        zygote(control)
    except (BrokenPipeError, ConnectionResetError):
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
