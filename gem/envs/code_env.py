"""Programming problems: the agent writes a Python program, the env runs the problem's tests.

``CodeEnv`` serves one problem per episode from a dataset: a hub id (``axon-rl/CodeContest``), a
local file (``dataset_name="/path/to/file.jsonl"``) or the bundled offline set (``code_problems``,
40+ problems). The program is the last fenced code block of the action. Every test runs in
:mod:`gem.utils.sandbox` with its own limits; by default the first failing test stops the run.

Test layouts (both as GEM's data has them, as a JSON string or already parsed):

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

Output is compared as competitive judges do: trailing blank space and blank lines do not matter;
an expected token that is an integer must be matched exactly (``...781598`` is not
``...781504``, and ``42.0`` is not ``42``); an expected token with a decimal point or exponent is
matched by any number within 1e-6 absolute or relative error. Returned values follow the same rule
(an expected ``int`` must be equal exactly; an expected ``float`` within 1e-6; ``bool`` only equals
``bool``).

Each test has a CPU-time limit (``test_timeout``) and a looser wall-clock limit. A program that
uses up its CPU time fails the test (time limit exceeded). A run that hits the wall-clock limit
without using its CPU time (a machine too busy to give it a core), or a sandbox that cannot run it,
leaves the test ungraded.

Rewards: all tests pass 1 (or the fraction passed with ``reward_mode="fraction"``), otherwise 0; no
code block 0 (-0.1, a format error, with ``use_format_error_reward=True``); not graded 0, with
``info["grading"]`` = ``"timeout"``/``"error"`` and ``info["grading_error"]`` saying which part
failed and why (an episode is ungraded when no test failed but one could not be graded).
``info["correct"]`` is whether all passed (``None`` when ungraded).
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
from typing import Any

from gem.envs.single_turn import EVAL_PARAM, SingleTurnEnv, rows_from
from gem.params import Param, check_params
from gem.utils.parsing import extract_code_from_model
from gem.utils.sandbox import Sandbox, SandboxError, SandboxLimits, default_sandbox
from gem.utils.text import preview

logger = logging.getLogger(__name__)

DEFAULT_TEST_TIMEOUT = 6.0  # CPU seconds per test
WALL_FACTOR, WALL_SLACK = 2.0, 2.0  # wall-clock limit: test_timeout * WALL_FACTOR + WALL_SLACK
DEFAULT_TEST_MEMORY_MB = 1024
DEFAULT_MAX_TESTS = 12
FLOAT_TOLERANCE = 1e-6
REWARD_MODES = ("all", "fraction")
UNGRADED = "ungraded"  # a test's verdict when it could not be run to a verdict
INSTRUCTION = (
    "Write a complete Python 3 program that solves the problem. Read from standard input and write "
    "to standard output (or define the requested function). Put the program in one ```python ... ``` block."
)

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
    """GEM's test layouts -> ``[{"kind": "stdio"|"call", "input", "output", "fn_name"}]``.

    With ``max_tests``, keep the tests with the longest inputs (GEM's choice: they are the most
    demanding), in their original order.
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


# ------------------------------------------------------------------ the env
class CodeEnv(SingleTurnEnv):
    """A single-turn programming task judged by running its tests in the sandbox.

    Args:
        dataset_name: a hub id, a local file path or a bundled name (``code_problems``).
        split: the split to use.
        dataset: rows (list of dicts) or a ``datasets.Dataset`` instead of ``dataset_name``.
        question_key, test_key: the dataset's problem and tests columns.
        seed: kept for GEM compatibility (order comes from the env's generator).
        max_workers: tests run at once (each in its own sandbox process).
        max_tests: at most this many tests per problem (the longest inputs); ``None``: all.
        verbose, sandbox_type: kept for GEM compatibility.
        reward_mode: ``"all"`` (1 when every test passes) or ``"fraction"`` (share passed; all
            tests run).
        test_timeout, test_memory_mb: limits for each test run (``test_timeout`` is CPU seconds;
            the wall-clock limit is ``test_timeout * 2 + 2``).
        use_format_error_reward: pay -0.1 (a format error) instead of 0 for a reply without a
            code block.
        max_turns: accepted for compatibility with the original GEM and ignored (the task is
            single-turn: every step ends the episode).
        eval: ``reset()`` walks the problems in order.
        sandbox: a :class:`~gem.utils.sandbox.Sandbox` instead of the shared one.
    """

    family = "code"
    instruction = INSTRUCTION
    _shared = ("_rows", "_sandbox")  # shared by copies and snapshots, never copied
    answer_format = "a ```python ... ``` code block"
    PARAMS = (
        Param("max_tests", int, "tests run per problem (None: all of them)", min=1, nullable=True,
              client={"max": 50, "nullable": False}),
        Param("reward_mode", str, "all: 1 only if every test passes; fraction: the share that pass",
              choices=REWARD_MODES),
        Param("test_timeout", float, "CPU seconds per test", min=0, min_exclusive=True,
              client={"min": 0.1, "max": 20.0}),
        Param("test_memory_mb", int, "memory per test, in MiB", min=1, client={"min": 64, "max": 2048}),
        Param("max_workers", int, "tests run at once", min=1, client={"max": 8}),
        EVAL_PARAM,
    )

    def __init__(
        self,
        dataset_name: str | None = "",
        split: str | None = None,
        dataset: Any = None,
        question_key: str = "problem",
        test_key: str = "tests",
        seed: int = 0,
        max_workers: int = 5,
        max_tests: int | None = DEFAULT_MAX_TESTS,
        verbose: bool = False,
        sandbox_type: str = "none",
        reward_mode: str = "all",
        test_timeout: float = DEFAULT_TEST_TIMEOUT,
        test_memory_mb: int = DEFAULT_TEST_MEMORY_MB,
        eval: bool = False,
        sandbox: Sandbox | None = None,
        use_format_error_reward: bool = False,
        max_turns: int | None = None,
    ) -> None:
        check_params(self, locals())
        super().__init__(eval=eval, use_format_error_reward=use_format_error_reward)
        self.dataset_name = dataset_name
        self.split = split
        self.question_key, self.test_key = question_key, test_key
        self.seed = seed
        self.max_workers = int(max_workers)
        self.max_tests = max_tests
        self.verbose = verbose
        self.sandbox_type = sandbox_type
        self.reward_mode = reward_mode
        self.max_turns = max_turns
        self.limits = SandboxLimits(
            timeout=test_timeout * WALL_FACTOR + WALL_SLACK, cpu_time=test_timeout, memory_mb=test_memory_mb
        )
        self._sandbox = sandbox
        self.tests: list[dict[str, Any]] = []
        self._rows = rows_from(dataset, dataset_name, split, "code", question_key, test_key)

    @property
    def sandbox(self) -> Sandbox:
        return self._sandbox if self._sandbox is not None else default_sandbox()

    # ------------------------------------------------------------ SingleTurnEnv hooks
    def _question(self, item: dict[str, Any]) -> str:
        return str(item["problem"])

    def _gold(self, item: dict[str, Any]) -> Any:
        self.tests = normalize_tests(item["tests"], self.max_tests)
        return None

    def _extract(self, action: str) -> str | None:
        return extract_code_from_model(action)

    def _score(self, answer: str) -> tuple[float, bool | None, dict[str, Any]]:
        report = self.run_tests(answer)
        passed, total = report["passed"], report["total"]
        if report["grading"] != "ok":
            return self.ungraded_reward, None, report
        correct = total > 0 and passed == total
        if self.reward_mode == "fraction":
            reward = self.success_reward * passed / total if total else 0.0
        else:
            reward = self.success_reward if correct else self.fail_reward
        return reward, correct, report

    def step(self, action: str):
        if self._needs_reset and (ended := self._step_without_episode()) is not None:
            return ended
        obs, reward, terminated, truncated, info = super().step(action)
        if "total" in info and info["correct"] is not None:
            if info["correct"]:
                obs = f"Accepted: all {info['total']} tests passed."
            else:
                fail = info.get("first_failure") or {}
                obs = (
                    f"Rejected: {info['passed']} of {info['total']} tests passed; "
                    f"test {fail.get('index', '?')} "
                    f"failed ({fail.get('verdict', 'error')})."
                )
                if fail.get("detail"):
                    obs += f"\n{fail['detail']}"
        return obs, reward, terminated, truncated, info

    # ------------------------------------------------------------ judging
    def run_tests(self, code: str, tests: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Run ``code`` on the tests; returns ``passed``, ``total``, ``first_failure``, ``verdicts`` and
        ``grading`` (``"ok"``, or ``"timeout"``/``"error"`` with ``grading_error`` when no test failed
        but one could not be graded; with ``reward_mode="fraction"`` any ungraded test counts)."""
        tests = self.tests if tests is None else tests
        stop_early = self.reward_mode == "all"
        verdicts: list[dict[str, Any] | None] = [None] * len(tests)
        if self.max_workers == 1 or len(tests) <= 1:
            for i, test in enumerate(tests):
                verdicts[i] = self._run_one(code, test)
                if stop_early and verdicts[i]["verdict"] != "passed":  # type: ignore[index]  (or ungraded)
                    break
        else:
            verdicts = self._run_parallel(code, tests, stop_early)
        passed = sum(1 for v in verdicts if v is not None and v["verdict"] == "passed")
        failures = [
            dict(v, index=i) for i, v in enumerate(verdicts) if v is not None and v["verdict"] not in ("passed", UNGRADED)
        ]
        report: dict[str, Any] = {
            "passed": passed,
            "total": len(tests),
            "first_failure": failures[0] if failures else None,
            "verdicts": [None if v is None else v["verdict"] for v in verdicts],
            "grading": "ok",
        }
        ungraded = [v for v in verdicts if v is not None and v["verdict"] == UNGRADED]
        if ungraded and (not failures or self.reward_mode == "fraction"):
            report["grading"] = ungraded[0]["status"]
            report["grading_error"] = {"component": "sandbox", "reason": ungraded[0]["detail"]}
        return report

    def _run_parallel(
        self, code: str, tests: list[dict[str, Any]], stop_early: bool
    ) -> list[dict[str, Any] | None]:
        """Up to ``max_workers`` tests at a time; after a failure no new test starts."""
        verdicts: list[dict[str, Any] | None] = [None] * len(tests)
        failed = threading.Event()
        sem = threading.Semaphore(self.max_workers)

        def job(i: int) -> None:
            with sem:
                if stop_early and failed.is_set():
                    return
                verdicts[i] = v = self._run_one(code, tests[i])
                if v["verdict"] != "passed":
                    failed.set()

        futures = [_test_pool().submit(job, i) for i in range(len(tests))]
        for fut in futures:
            fut.result()
        return verdicts

    def _run_one(self, code: str, test: dict[str, Any]) -> dict[str, Any]:
        """One test: the program (and, for a call, the harness) runs with only the test's input;
        the verdict is decided here from what came back."""
        marker = f"@@gem-result-{secrets.token_hex(16)}@@" if test["kind"] == "call" else ""
        try:
            if test["kind"] == "call":
                result = self.sandbox.run(
                    _call_harness(code, test["fn_name"], test["input"], marker), "", limits=self.limits
                )
            else:
                result = self.sandbox.run(code, _as_text(test["input"]), limits=self.limits)
        except (SandboxError, OSError) as exc:
            logger.warning("The sandbox could not run a test: %s", exc)
            return {"verdict": UNGRADED, "status": "error", "detail": f"the sandbox could not run the test: {exc}"}
        if result.reason == "timeout":
            cpu_limit = float(self.limits.cpu_time or self.limits.timeout)
            if result.cpu_time < 0.8 * cpu_limit and result.exit_code != -signal.SIGXCPU:
                return {
                    "verdict": UNGRADED,
                    "status": "timeout",
                    "detail": (
                        f"the run reached its wall-clock limit of {self.limits.timeout:g} s after only "
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

    def check_correct(self, model_code: str) -> bool:
        """Whether ``model_code`` (a program, not a reply) passes every test (GEM's method name;
        ``False`` when a test could not be graded)."""
        report = self.run_tests(model_code)
        return report["grading"] == "ok" and report["passed"] == len(self.tests) > 0

    def sample_random_action(self) -> str:
        programs = [
            "print(input())",
            "import sys\nprint(sum(map(int, sys.stdin.read().split())))",
            "print(0)",
        ]
        return f"```python\n{self.action_rng.choice(programs)}\n```"

    def reference_solution(self) -> str | None:
        """The dataset's own solution for the current problem, as a reply (bundled set only)."""
        sol = self.item.get("solution")
        return None if not sol else f"```python\n{sol}\n```"
