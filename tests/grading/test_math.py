"""grade_math: a math answer's GradeResult (graded right, graded wrong, ungraded) and MathEnv paying from it."""

from __future__ import annotations

import time

import pytest

from gem.envs.math_env import MathEnv
from gem.grading import MathGrader, grade_math
from gem.grading.math_pool import MAX_VERIFY_CHARS

pytest.importorskip("math_verify", reason="math grading needs the math extra")


@pytest.fixture(scope="module")
def grader():
    g = MathGrader(workers=1)
    try:
        assert g.warm_up()
        yield g
    finally:
        g.close()


@pytest.mark.parametrize("answer, gold", [("0.5", "\\frac{1}{2}"), ("\\sqrt{1764}", "42"), ("(x+1)^2", ["7", "x^2+2x+1"])])
def test_a_correct_answer_is_graded_one(grader, answer, gold):
    result = grade_math(answer, gold, grader=grader)
    assert (result.status, result.correct, result.score) == ("ok", True, 1.0)
    assert result.info() == {"grading": "ok"}


@pytest.mark.parametrize("answer, gold", [("0.51", "\\frac{1}{2}"), ("\\sqrt{1765}", "42"), ("", "1"), (None, "1")])
def test_a_wrong_answer_is_graded_zero(grader, answer, gold):
    result = grade_math(answer, gold, grader=grader)
    assert (result.status, result.correct, result.score) == ("ok", False, 0.0)


def test_an_answer_that_uses_the_whole_budget_is_ungraded_not_wrong(grader):
    result = grade_math("(x+y+z)^{60}", "7x", timeout=0.3, grader=grader)
    assert (result.status, result.correct, result.score, result.component) == ("timeout", None, 0.0, "math-verify")
    assert result.info()["grading_error"]["reason"] == result.reason and result.reason
    assert grade_math("\\sqrt{1764}", "42", grader=grader).correct is True  # the pool recovered


def test_a_grader_that_cannot_start_leaves_the_answer_ungraded_as_an_error():
    g = MathGrader(workers=1, start_timeout=0.5, queue_timeout=0.5)
    g._start = lambda: None  # no zygote and no worker will ever exist
    try:
        result = grade_math("\\sqrt{1764}", "42", grader=g)
        assert (result.status, result.correct, result.score, result.component) == ("error", None, 0.0, "math-verify")
    finally:
        g.close()


@pytest.mark.parametrize("answer", ["1+" * 50_000 + "1", "9^{9^{9^9}}", "x" * (MAX_VERIFY_CHARS + 1)])
def test_input_built_to_exhaust_the_grader_is_graded_wrong_at_once(grader, answer):
    # Too long or too big to be anyone's final answer: the exact paths judge it in the caller,
    # so it never reaches math-verify and costs one linear pass.
    start = time.monotonic()
    result = grade_math(answer, "2", grader=grader)
    assert (result.status, result.correct, result.score) == ("ok", False, 0.0)
    assert time.monotonic() - start < 1.0


def test_math_env_pays_what_grade_math_grades(monkeypatch):
    env = MathEnv(dataset=[{"problem": "What is 6 * 7?", "answer": "42"}])
    env.reset(seed=0)
    _, reward, _, _, info = env.step("\\boxed{\\sqrt{1764}}")
    assert (reward, info["correct"], info["grading"]) == (1.0, True, "ok")
    env.reset(seed=0)
    assert env.step("\\boxed{41}")[1:2] == (0.0,)
    monkeypatch.delenv("GEM_STRICT_INFRA")  # reported in info, not raised
    env = MathEnv(dataset=[{"problem": "Expand.", "answer": "7x"}], grade_timeout=0.3)
    env.reset(seed=0)
    _, reward, _, _, info = env.step("\\boxed{(x+y+z)^{60}}")
    assert (reward, info["correct"], info["grading"]) == (0.0, None, "timeout")
    assert info["grading_error"]["component"] == "math-verify"
