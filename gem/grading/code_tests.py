"""Run a program's tests in the sandbox and judge them outside it: the code envs' test runner.

``run_code_tests(code, tests)`` runs ``code`` on each test in :mod:`gem.sandbox` with its own
limits and returns a :class:`~gem.grading.result.GradeResult`: ``correct`` when every test passed,
``score`` the share that passed, and ``details`` with ``passed``, ``total``, ``first_failure``
(``{"index", "verdict", "detail"}`` of the first failed test) and ``verdicts`` (one per test:
``"passed"``, ``"wrong answer"``, ``"runtime error"``, ``"time limit exceeded"``, ``"memory limit
exceeded"``, ``"output limit exceeded"``, ``"ungraded"``, or ``None`` for a test not run). With
``reward_mode="all"`` the first failing test stops the run.

Test layouts (both as the code datasets have them, as a JSON string or already parsed;
:func:`normalize_tests` reads them):

* ``{"inputs": [...], "outputs": [...]}`` (CodeContests, TACO, APPS); with ``"fn_name"`` the tests
  call that function (or ``Solution().<fn_name>``) with ``inputs[i]`` as the argument list;
* ``[{"input": ..., "output": ..., "type"|"testtype": "stdin_stdout"|"function_call", "fn_name": ...}]``
  (PrimeIntellect, LiveCodeBench).

What runs in the sandbox is the program and its input, nothing else: the expected outputs and
return values never enter the run, and the verdict is decided here, outside it. A function-call
test runs the program followed by a short harness that calls the function with the test's
arguments and writes the JSON of the returned value after a random marker on stdout; that value is
compared here. So printing a fake verdict, exiting early (``sys.exit``, ``os._exit``), raising
``SystemExit``, patching the harness or inspecting frames, ``gc`` or ``linecache`` find nothing to
copy and earn nothing.

Output is compared as competitive judges do (:func:`outputs_match`): trailing blank space and blank
lines do not matter; an expected token that is an integer must be matched exactly (``...781598`` is
not ``...781504``, and ``42.0`` is not ``42``); an expected token with a decimal point or exponent
is matched by any number within 1e-6 absolute or relative error. Returned values follow the same
rule (:func:`values_match`: an expected ``int`` must be equal exactly; an expected ``float`` within
1e-6; ``bool`` only equals ``bool``).

Each test has a CPU-time limit and a looser wall-clock limit (:func:`sandbox_limits`). A program that
uses up its CPU time fails the test (time limit exceeded). A run that hits the wall-clock limit
without using its CPU time (a machine too busy to give it a core), or a sandbox that cannot run it,
leaves the test ungraded; the result is ungraded (``"timeout"``/``"error"``, component
``"sandbox"``) when no test failed but one could not be graded (with ``reward_mode="fraction"``,
when any test could not be graded).
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import math
import os
import re
import secrets
import signal
import threading
from typing import Any, Callable, Optional

from gem.grading.result import GradeResult, graded, ungraded
from gem.sandbox.sandbox import Sandbox, SandboxError, SandboxLimits, default_sandbox
from gem.utils.text import preview

logger = logging.getLogger(__name__)

DEFAULT_TEST_TIMEOUT = 6.0  # CPU seconds per test
WALL_FACTOR, WALL_SLACK = 2.0, 2.0  # wall-clock limit: test_timeout * WALL_FACTOR + WALL_SLACK
DEFAULT_TEST_MEMORY_MB = 1024
DEFAULT_MAX_WORKERS = 5
FLOAT_TOLERANCE = 1e-6
REWARD_MODES = ("all", "fraction")
UNGRADED = "ungraded"  # a test's verdict when it could not be run to a verdict

_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _test_pool() -> concurrent.futures.ThreadPoolExecutor:
    """Threads that wait on sandbox runs (the work itself happens in sandbox processes)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=max(8, 4 * (os.cpu_count() or 1)), thread_name_prefix="gem-code-tests"
            )
        return _pool


# ------------------------------------------------------------------ tests: parse and normalize
def _as_text(value: Any) -> str:
    """A test's stdin or expected stdout as text (lists are lines, as GEM joins them)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return "\n".join(map(str, value))
    return str(value)


def normalize_tests(tests: Any, max_tests: int | None = None) -> list[dict[str, Any]]:
    """The datasets' test layouts -> ``[{"kind": "stdio"|"call", "input", "output", "fn_name"}]``.

    With ``max_tests``, keep the tests with the longest inputs (they are the most demanding), in
    their given order.
    """
    if isinstance(tests, str):
        tests = json.loads(tests) if tests.strip() else []
    cases: list[dict[str, Any]] = []
    if isinstance(tests, dict):
        inputs, outputs = list(tests.get("inputs") or []), list(tests.get("outputs") or [])
        if len(inputs) != len(outputs):
            raise ValueError(f"tests have {len(inputs)} inputs but {len(outputs)} outputs.")
        fn_name = tests.get("fn_name")
        for inp, out in zip(inputs, outputs):
            cases.append(
                {"kind": "call" if fn_name else "stdio", "input": inp, "output": out, "fn_name": fn_name}
            )
    elif isinstance(tests, list):
        for test in tests:
            if not isinstance(test, dict):
                raise ValueError(f"a test must be a dict with input/output, got {type(test).__name__}.")
            kind = str(test.get("type") or test.get("testtype") or "").lower()
            fn_name = test.get("fn_name") or (test.get("metadata") or {}).get("func_name")
            is_call = kind in ("function_call", "functional", "call") or (not kind and fn_name)
            cases.append(
                {
                    "kind": "call" if is_call else "stdio",
                    "input": test.get("input", test.get("inputs", "")),
                    "output": test.get("output", test.get("outputs", "")),
                    "fn_name": fn_name,
                }
            )
    else:
        raise ValueError(
            f"tests must be a dict of inputs/outputs or a list of tests, got {type(tests).__name__}."
        )
    for case in cases:
        if case["kind"] == "call" and not case["fn_name"]:
            raise ValueError("a function-call test has no fn_name.")
    if max_tests is not None and len(cases) > max_tests:
        keep = sorted(range(len(cases)), key=lambda i: -len(_as_text(cases[i]["input"])))[:max_tests]
        cases = [cases[i] for i in sorted(keep)]
    return cases


_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")


def _close(x: float, y: float) -> bool:
    """``x`` within the tolerance of the expected float ``y`` (finite values only)."""
    if not (math.isfinite(x) and math.isfinite(y)):
        return False
    return abs(x - y) <= FLOAT_TOLERANCE * max(1.0, abs(y))


def tokens_match(got: str, expected: str) -> bool:
    """One output token against the expected one: integers exactly, floats within the tolerance."""
    if got == expected:
        return True
    if _INTEGER.fullmatch(expected) or not _NUMBER.fullmatch(expected) or not _NUMBER.fullmatch(got):
        return False  # an expected integer (or word) must be printed exactly
    try:
        return _close(float(got), float(expected))
    except (ValueError, OverflowError):
        return False


def outputs_match(got: str, expected: str) -> bool:
    """Judge-style comparison: lines without trailing blanks, then tokens (exact integers, floats
    within the tolerance)."""
    g = [line.rstrip() for line in got.replace("\r\n", "\n").rstrip().split("\n")]
    e = [line.rstrip() for line in expected.replace("\r\n", "\n").rstrip().split("\n")]
    if g == e:
        return True
    # Token by token (judges ignore how blank space splits tokens).
    gt, et = got.split(), expected.split()
    return len(gt) == len(et) and all(tokens_match(x, y) for x, y in zip(gt, et))


def _json_normal(value: Any) -> Any:
    """Tuples as lists, as JSON would have them."""
    return json.loads(json.dumps(value, default=repr))


def values_match(got: Any, expected: Any) -> bool:
    """A function's return value against the expected one: an expected ``int`` exactly, an
    expected ``float`` within the tolerance, ``bool`` only against ``bool``."""
    if isinstance(got, bool) or isinstance(expected, bool):
        return type(got) is type(expected) and got == expected
    if isinstance(expected, int):
        return isinstance(got, (int, float)) and got == expected  # Python compares int/float exactly
    if isinstance(got, (int, float)) and isinstance(expected, float):
        try:
            return got == expected or _close(float(got), expected)
        except OverflowError:
            return False
    if isinstance(got, list) and isinstance(expected, list):
        return len(got) == len(expected) and all(values_match(a, b) for a, b in zip(got, expected))
    if isinstance(got, dict) and isinstance(expected, dict):
        return got.keys() == expected.keys() and all(values_match(got[k], expected[k]) for k in got)
    return got == expected


def _call_harness(code: str, fn_name: str, args: Any, marker: str) -> str:
    """``code`` followed by a call of ``fn_name(*args)`` whose JSON result is printed after ``marker``."""
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            args = [args]
    if not isinstance(args, list):
        args = [args]
    return (
        f"{code}\n\n"
        "def __gem_run_test():\n"
        "    import json, sys\n"
        f"    name = {fn_name!r}\n"
        f"    args = json.loads({json.dumps(args)!r})\n"
        "    g = globals()\n"
        "    fn = g.get(name)\n"
        "    if fn is None and isinstance(g.get('Solution'), type):\n"
        "        fn = getattr(g['Solution'](), name, None)\n"
        "    if fn is None:\n"
        "        raise NameError(f'the program defines no function {name!r}')\n"
        "    result = fn(*args)\n"
        "    sys.stdout.flush()\n"
        f"    sys.stdout.write('\\n' + {marker!r} + json.dumps(result, default=repr) + '\\n')\n"
        "__gem_run_test()\n"
    )


def _expected_call_output(expected: Any) -> Any:
    if isinstance(expected, str):
        try:
            return json.loads(expected)
        except json.JSONDecodeError:
            return expected
    return expected


# ------------------------------------------------------------------ running the tests
def sandbox_limits(test_timeout: float = DEFAULT_TEST_TIMEOUT, memory_mb: int = DEFAULT_TEST_MEMORY_MB) -> SandboxLimits:
    """The sandbox limits of one test: ``test_timeout`` CPU seconds, a wall-clock limit of
    ``test_timeout * 2 + 2`` seconds, ``memory_mb`` MiB."""
    return SandboxLimits(timeout=test_timeout * WALL_FACTOR + WALL_SLACK, cpu_time=test_timeout, memory_mb=memory_mb)


def run_code_tests(
    code: str,
    tests: Any,
    *,
    sandbox: Optional[Sandbox] = None,
    limits: Optional[SandboxLimits] = None,
    max_workers: int = DEFAULT_MAX_WORKERS,
    reward_mode: str = "all",
) -> GradeResult:
    """Run the program ``code`` on ``tests`` (any layout :func:`normalize_tests` reads, or its output).

    Args:
        sandbox: where the tests run (default: the shared sandbox).
        limits: each test's limits (default: :func:`sandbox_limits`).
        max_workers: tests run at once (each in its own sandbox process).
        reward_mode: ``"all"`` (the first failing test stops the run) or ``"fraction"`` (all tests
            run; any ungraded test leaves the result ungraded).

    Returns: graded (``correct`` when every test passed, ``score`` the share passed) or ungraded
    (``"timeout"``/``"error"`` from ``"sandbox"``) when no test failed but one could not be graded;
    ``details`` holds ``passed``, ``total``, ``first_failure`` and ``verdicts`` either way.
    """
    if reward_mode not in REWARD_MODES:
        raise ValueError(f"reward_mode must be one of {REWARD_MODES}, got {reward_mode!r}.")
    if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
        raise ValueError(f"max_workers must be a positive int, got {max_workers!r}.")
    cases = _normalized(tests)
    box = sandbox if sandbox is not None else default_sandbox()
    limits = limits if limits is not None else sandbox_limits()
    stop_early = reward_mode == "all"

    def run_one(test: dict[str, Any]) -> dict[str, Any]:
        return run_one_test(code, test, box, limits)

    verdicts: list[dict[str, Any] | None] = [None] * len(cases)
    if max_workers == 1 or len(cases) <= 1:
        for i, test in enumerate(cases):
            verdicts[i] = run_one(test)
            if stop_early and verdicts[i]["verdict"] != "passed":  # type: ignore[index]  (or ungraded)
                break
    else:
        verdicts = _run_parallel(run_one, cases, max_workers, stop_early)
    passed = sum(1 for v in verdicts if v is not None and v["verdict"] == "passed")
    failures = [
        dict(v, index=i) for i, v in enumerate(verdicts) if v is not None and v["verdict"] not in ("passed", UNGRADED)
    ]
    details: dict[str, Any] = {
        "passed": passed,
        "total": len(cases),
        "first_failure": failures[0] if failures else None,
        "verdicts": [None if v is None else v["verdict"] for v in verdicts],
    }
    not_run = [v for v in verdicts if v is not None and v["verdict"] == UNGRADED]
    if not_run and (not failures or reward_mode == "fraction"):
        return ungraded(not_run[0]["status"], "sandbox", not_run[0]["detail"], details)
    correct = len(cases) > 0 and passed == len(cases)
    return graded(correct, score=passed / len(cases) if cases else 0.0, details=details)


_CASE_KEYS = {"kind", "input", "output", "fn_name"}


def _normalized(tests: Any) -> list[dict[str, Any]]:
    """``tests`` as :func:`normalize_tests` returns them (a list it returned is taken as it is)."""
    if isinstance(tests, list) and all(isinstance(t, dict) and t.keys() == _CASE_KEYS for t in tests):
        return tests
    return normalize_tests(tests)


def report_info(result: GradeResult) -> dict[str, Any]:
    """A test run's result as the code envs' ``info`` has it: ``passed``, ``total``,
    ``first_failure``, ``verdicts``, ``grading`` and, when ungraded, ``grading_error``."""
    return {**result.details, **result.info()}


def _run_parallel(
    run_one: Callable[[dict[str, Any]], dict[str, Any]], tests: list[dict[str, Any]], max_workers: int, stop_early: bool
) -> list[dict[str, Any] | None]:
    """Up to ``max_workers`` tests at a time; after a failure no new test starts."""
    verdicts: list[dict[str, Any] | None] = [None] * len(tests)
    failed = threading.Event()
    sem = threading.Semaphore(max_workers)

    def job(i: int) -> None:
        with sem:
            if stop_early and failed.is_set():
                return
            verdicts[i] = v = run_one(tests[i])
            if v["verdict"] != "passed":
                failed.set()

    futures = [_test_pool().submit(job, i) for i in range(len(tests))]
    for fut in futures:
        fut.result()
    return verdicts


def run_one_test(code: str, test: dict[str, Any], sandbox: Sandbox, limits: SandboxLimits) -> dict[str, Any]:
    """One normalized test: the program (and, for a call, the harness) runs with only the test's
    input; the verdict (``{"verdict", "detail"}``, plus ``status`` when ungraded) is decided here
    from what came back."""
    marker = f"@@gem-result-{secrets.token_hex(16)}@@" if test["kind"] == "call" else ""
    try:
        if test["kind"] == "call":
            result = sandbox.run(_call_harness(code, test["fn_name"], test["input"], marker), "", limits=limits)
        else:
            result = sandbox.run(code, _as_text(test["input"]), limits=limits)
    except (SandboxError, OSError) as exc:
        logger.warning("The sandbox could not run a test: %s", exc)
        return {"verdict": UNGRADED, "status": "error", "detail": f"the sandbox could not run the test: {exc}"}
    if result.reason == "timeout":
        cpu_limit = float(limits.cpu_time or limits.timeout)
        if result.cpu_time < 0.8 * cpu_limit and result.exit_code != -signal.SIGXCPU:
            return {
                "verdict": UNGRADED,
                "status": "timeout",
                "detail": (
                    f"the run reached its wall-clock limit of {limits.timeout:g} s after only "
                    f"{result.cpu_time:.2f} s of its {cpu_limit:g} s of CPU time (a busy machine, or a "
                    "program that sleeps)"
                ),
            }
        return {"verdict": "time limit exceeded", "detail": ""}
    if result.reason == "memory":
        return {"verdict": "memory limit exceeded", "detail": ""}
    if result.reason == "output_limit":
        return {"verdict": "output limit exceeded", "detail": ""}
    if result.reason != "ok":
        last = result.stderr.strip().rsplit("\n", 1)[-1] if result.stderr.strip() else ""
        return {"verdict": "runtime error", "detail": preview(last, 300)}
    if test["kind"] == "call":
        head, sep, tail = result.stdout.rpartition(marker)
        if not sep:
            return {"verdict": "wrong answer", "detail": "the function returned nothing."}
        try:
            got = json.loads(tail.strip())
        except json.JSONDecodeError:
            return {"verdict": "wrong answer", "detail": ""}
        expected = _json_normal(_expected_call_output(test["output"]))
        ok = values_match(got, expected) or (
            isinstance(expected, list) and len(expected) == 1 and values_match(got, expected[0])
        )
    else:
        ok = outputs_match(result.stdout, _as_text(test["output"]))
    return {"verdict": "passed" if ok else "wrong answer", "detail": ""}
