"""GradeResult, the one result type of every grader: its scores, statuses and the info it gives."""

from __future__ import annotations

import pickle

import pytest

from gem.grading import GRADING_STATUSES, GradeResult
from gem.grading.result import graded, ungraded


def test_a_verdict_scores_one_or_zero_unless_the_grader_gives_a_score():
    assert GradeResult("ok", True).score == 1.0 and GradeResult("ok", False).score == 0.0
    assert graded(False, score=0.8).score == 0.8 and graded(True).correct is True
    assert GradeResult("ok", True) == graded(True) and bool(graded(True)) and not graded(False)
    assert graded(True).graded and graded(True).info() == {"grading": "ok"}


@pytest.mark.parametrize("status", ["timeout", "error"])
def test_an_ungraded_result_never_scores_and_says_why(status):
    result = ungraded(status, "sandbox", "the worker could not start", details={"passed": 1})
    assert (result.status, result.correct, result.score, result.graded, bool(result)) == (status, None, 0.0, False, False)
    assert result.info() == {"grading": status, "grading_error": {"component": "sandbox", "reason": "the worker could not start"}}
    assert result.details == {"passed": 1}
    # a score claimed for an answer that could not be graded is dropped: ungraded never pays
    assert GradeResult(status, None, "x", "y", score=1.0).score == 0.0


def test_bad_statuses_raise_naming_the_valid_ones():
    assert GRADING_STATUSES == ("ok", "timeout", "error")
    with pytest.raises(ValueError, match="'ok', 'timeout', 'error'"):
        GradeResult("graded", True)
    with pytest.raises(ValueError, match="'timeout', 'error'"):
        ungraded("ok", "math-verify", "no")


def test_results_are_frozen_hashable_and_pickle():
    result = graded(True, details={"em": True})
    with pytest.raises(AttributeError):
        result.score = 0.0  # type: ignore[misc]
    assert hash(result) == hash(graded(True))  # details are not part of equality
    assert pickle.loads(pickle.dumps(result)) == result


def test_the_former_result_type_is_this_one():
    from gem.utils import math_grader, math_grading_pool

    assert math_grader.GradeResult is GradeResult and math_grading_pool.GradeResult is GradeResult
    assert math_grader.ungraded is ungraded and math_grading_pool.graded is graded


@pytest.mark.parametrize("given, kept", [(1.5, 1.0), (-0.2, 0.0), (float("nan"), 0.0), (float("inf"), 1.0), (0.25, 0.25)])
def test_a_score_is_kept_in_zero_to_one_and_nan_never_pays(given, kept):
    assert graded(False, score=given).score == kept
