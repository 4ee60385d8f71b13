"""Programming problems: the agent writes a Python program, the env runs the problem's tests.

``CodeEnv`` serves one problem per episode from a dataset: a hub id (``axon-rl/CodeContest``), a
local file (``dataset_name="/path/to/file.jsonl"``) or the bundled offline set (``code_problems``,
40+ problems). The program is the last fenced code block of the action. Every test runs in
:mod:`gem.sandbox` with its own limits; by default the first failing test stops the run.

The tests are run and judged by :mod:`gem.grading.code_tests` (:func:`~gem.grading.code_tests.run_code_tests`):
the test layouts it reads, how output is compared, and why nothing inside the run can decide its
verdict are described there. Each test has a CPU-time limit (``test_timeout``) and a looser
wall-clock limit. A program that uses up its CPU time fails the test (time limit exceeded). A run
that hits the wall-clock limit without using its CPU time (a machine too busy to give it a core),
or a sandbox that cannot run it, leaves the test ungraded.

Rewards: all tests pass 1 (or the fraction passed with ``reward_mode="fraction"``), otherwise 0; no
code block 0 (-0.1, a format error, with ``use_format_error_reward=True``); not graded 0, with
``info["grading"]`` = ``"timeout"``/``"error"`` and ``info["grading_error"]`` saying which part
failed and why (an episode is ungraded when no test failed but one could not be graded).
``info["correct"]`` is whether all passed (``None`` when ungraded).
"""

from __future__ import annotations

import logging
from typing import Any

from gem.compat.attach import decorator
from gem.envs.single_turn import EVAL_PARAM, SingleTurnEnv, rows_from
from gem.grading import code_tests
from gem.grading.code_tests import (  # noqa: F401  (also importable from here, their former home)
    _INTEGER,
    _NUMBER,
    DEFAULT_TEST_MEMORY_MB,
    DEFAULT_TEST_TIMEOUT,
    FLOAT_TOLERANCE,
    REWARD_MODES,
    UNGRADED,
    WALL_FACTOR,
    WALL_SLACK,
    _as_text,
    _call_harness,
    _close,
    _expected_call_output,
    _json_normal,
    _pool_lock,
    _test_pool,
    normalize_tests,
    outputs_match,
    report_info,
    run_code_tests,
    sandbox_limits,
    tokens_match,
    values_match,
)
from gem.grading.result import GradeResult
from gem.params import Param, check_params
from gem.utils.parsing import extract_code_from_model
from gem.sandbox.sandbox import Sandbox, SandboxError, SandboxLimits, default_sandbox  # noqa: F401
from gem.utils.text import preview  # noqa: F401  (importable from here, as before)

logger = logging.getLogger(__name__)

DEFAULT_MAX_TESTS = 12
INSTRUCTION = (
    "Write a complete Python 3 program that solves the problem. Read from standard input and write "
    "to standard output (or define the requested function). Put the program in one ```python ... ``` block."
)


def __getattr__(name: str) -> Any:
    if name == "_pool":  # the test pool's current executor lives in gem.grading.code_tests
        return code_tests._pool
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ------------------------------------------------------------------ the env
@decorator(ignored_kwargs=("max_turns",))  # the original's CodeEnv took and ignored it; a single turn anyway
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
        eval: ``reset()`` walks the problems in order.
        sandbox: a :class:`~gem.sandbox.Sandbox` instead of the shared one.
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
        self.limits = sandbox_limits(test_timeout, test_memory_mb)
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

    def _score(self, answer: str) -> GradeResult:
        return self.grade_program(answer)  # details: passed, total, first_failure, verdicts

    def _reward(self, result: GradeResult) -> float:
        """``reward_mode="fraction"`` pays the share of tests passed (``success_reward * score``)."""
        if result.graded and self.reward_mode == "fraction":
            return self.success_reward * result.score
        return super()._reward(result)

    def _step(self, action: str):
        obs, reward, terminated, truncated, info = super()._step(action)
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
        return report_info(self.grade_program(code, tests))

    def grade_program(self, code: str, tests: list[dict[str, Any]] | None = None) -> GradeResult:
        """Run ``code`` on the tests (default: the current problem's) with this env's sandbox, limits,
        ``max_workers`` and ``reward_mode``: a :class:`~gem.grading.result.GradeResult`."""
        return run_code_tests(
            code, self.tests if tests is None else tests, sandbox=self.sandbox, limits=self.limits,
            max_workers=self.max_workers, reward_mode=self.reward_mode,
        )

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
