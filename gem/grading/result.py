"""The one result type of every grader: math answers, QA answers and code tests.

A :class:`GradeResult` says whether the answer was graded and, if so, how it scored:

* ``status == "ok"``: graded. ``correct`` is the verdict and ``score`` the grader's score in
  [0, 1] (1.0 or 0.0 for a verdict; the token F1 for QA with ``metric="f1"``; the share of tests
  passed for code).
* ``status == "timeout"``: the grader used its whole time budget on this answer (math-verify's CPU
  budget, a test run that hit its wall-clock limit without using its CPU time).
* ``status == "error"``: grading could not run (a full queue, no worker, a dead worker, a crash, a
  sandbox that could not start).

The last two are *ungraded*: ``correct`` is ``None`` (not known, never "wrong") and ``score`` is
0.0, so an answer that makes its grader fail earns nothing. ``component`` and ``reason`` then say
what failed and why. The statuses are the values an env puts in ``info["grading"]``
(:meth:`GradeResult.info`), and ``gem eval`` counts ungraded episodes by them.

A score is kept in [0, 1]: one above 1 counts as 1, one below 0 as 0, and one that is not a
number (NaN) as 0, so a grader that computes nonsense from an answer never pays for it.

Single-turn envs return a ``GradeResult`` from ``_score`` and ``step`` pays from it
(:mod:`gem.envs.single_turn`); the terminal and SWE envs' hidden tests give a
:class:`gem.grading.harness.Verdict`, a ``GradeResult`` with each test's result in ``details``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Optional

GradeStatus = Literal["ok", "timeout", "error"]
GRADING_STATUSES: tuple[str, ...] = ("ok", "timeout", "error")


@dataclass(frozen=True)
class GradeResult:
    """The outcome of grading one answer.

    Attributes:
        status: ``"ok"`` (graded), ``"timeout"`` (the grader used its whole time budget) or
            ``"error"`` (grading could not run: full queue, no worker, a dead worker, a crash).
        correct: the verdict when ``status == "ok"``, else ``None`` (not known, never "wrong").
        component: what could not finish (``"math-verify"``, ``"sandbox"``), when ungraded.
        reason: why, in words, when ungraded.
        score: the grader's score in [0, 1]; by default 1.0 for a correct answer, else 0.0
            (always 0.0 when ungraded; clamped into [0, 1], NaN counts as 0.0).
        details: what else the grader found (QA: ``em`` and ``f1``; code: ``passed``, ``total``,
            ``first_failure`` and the per-test ``verdicts``; hidden tests: ``results``). A
            single-turn env puts them in ``info``. Not part of equality.
    """

    status: GradeStatus
    correct: Optional[bool]
    component: Optional[str] = None
    reason: Optional[str] = None
    score: Optional[float] = None
    details: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.status not in GRADING_STATUSES:
            raise ValueError(f"status must be one of {GRADING_STATUSES}, got {self.status!r}.")
        if self.status != "ok":
            score = 0.0  # ungraded never scores: making the grader fail must not pay
        elif self.score is None:
            score = 1.0 if self.correct is True else 0.0
        else:
            score = float(self.score)
            score = 0.0 if math.isnan(score) else min(1.0, max(0.0, score))
        object.__setattr__(self, "score", score)

    @property
    def graded(self) -> bool:
        """Whether the grader reached a verdict (``status == "ok"``)."""
        return self.status == "ok"

    def __bool__(self) -> bool:
        return self.correct is True

    def info(self) -> dict[str, Any]:
        """The keys an env puts in ``info``: ``grading`` and, if ungraded, ``grading_error``."""
        out: dict[str, Any] = {"grading": self.status}
        if self.status != "ok":
            out["grading_error"] = {"component": self.component, "reason": self.reason}
        return out


def graded(correct: bool, score: Optional[float] = None, details: Optional[Mapping[str, Any]] = None) -> GradeResult:
    """A graded result: the verdict ``correct`` and, if not 1.0/0.0 by the verdict, its ``score``."""
    return GradeResult("ok", bool(correct), score=score, details=dict(details or {}))


def ungraded(
    status: str, component: str, reason: str, details: Optional[Mapping[str, Any]] = None
) -> GradeResult:
    """An ungraded result: ``status`` is ``"timeout"`` or ``"error"``; ``component`` failed because ``reason``."""
    if status not in GRADING_STATUSES[1:]:
        raise ValueError(f"status must be one of {GRADING_STATUSES[1:]}, got {status!r}.")
    return GradeResult(status, None, component, reason, details=dict(details or {}))  # type: ignore[arg-type]
