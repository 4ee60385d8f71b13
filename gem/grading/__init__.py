"""Grading: what decides a task's reward, with one result type for every grader.

- :mod:`gem.grading.result`: :class:`GradeResult` (``status`` ``"ok"``/``"timeout"``/``"error"``,
  ``correct``, ``score``, ``component``, ``reason``, ``details``).
- :mod:`gem.grading.math_answers` and :mod:`gem.grading.math_pool`: math answers, graded by fast
  exact paths in the caller and math-verify in a pool of worker processes
  (:func:`grade_math`, :class:`MathGrader`); the workers are forked from
  :mod:`gem.grading._math_worker`.
- :mod:`gem.grading.qa`: exact match and token F1 for question answering (:func:`grade_qa`).
- :mod:`gem.grading.code_tests`: a program's tests run in the sandbox and judged outside it
  (:func:`run_code_tests`).
- :mod:`gem.grading.harness`: a task's hidden tests run by a trusted harness in a fresh sandbox
  run, its nonce-marked verdict lines read here (:func:`run_harness`); the terminal and SWE envs'
  :class:`Verdict` is a ``GradeResult`` with each test's result in ``details``.

The names below are imported on first use, so ``import gem.grading`` starts nothing.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "GradeResult": "result",
    "GRADING_STATUSES": "result",
    "grade_math": "math_pool",
    "MathGrader": "math_pool",
    "default_grader": "math_pool",
    "grade_qa": "qa",
    "em_check": "qa",
    "f1_score": "qa",
    "run_code_tests": "code_tests",
    "normalize_tests": "code_tests",
    "Verdict": "harness",
    "run_harness": "harness",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
