"""Math grading without math-verify (the core install): a plain-number gold answer is graded exactly,
any other gold answer is refused when the env is built, and no step raises for the missing extra.

Runs in every install: math-verify is hidden from the grader, never uninstalled.
"""

from __future__ import annotations

import pytest

import gem
from gem.envs.math_env import MathEnv
from gem.errors import DependencyNotInstalled
from gem.grading import math_pool
from gem.grading.math_answers import number_verdict


@pytest.fixture
def no_math_verify(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(math_pool, "math_verify_installed", lambda: False)


@pytest.mark.parametrize(
    "answer, gold",
    [("\\frac{1}{2}", "\\frac{1}{2}"), ("0.5", "\\frac{1}{2}"), ("1/2", "\\frac{1}{2}"), ("\\dfrac{2}{4}", "0.5"),
     ("x = \\frac{11}{6}", "\\frac{11}{6}"), ("1,026", "1026"), ("-3", "-3"), ("42.0", "42"), ("42 \\text{ apples}", "42")],
)
def test_an_answer_of_the_golds_value_is_right(no_math_verify, answer, gold):
    result = math_pool.grade_math(answer, gold)
    assert (result.status, result.correct) == ("ok", True)
    assert number_verdict(answer, gold) is True


@pytest.mark.parametrize(
    "answer, gold",
    [("\\frac{1}{2}", "310"), ("1.8333", "\\frac{11}{6}"), ("1\\frac{5}{6}", "\\frac{11}{6}"), ("\\sqrt{4}", "2"),
     ("2^3", "8"), ("4 + 4", "8"), ("\\frac{1}{2} \\text{ or } 3", "3"), ("1/2 or 3", "3"), ("3 \\lor 4", "3"),
     ("\\pm 3", "3"), ("3, 4", "3"), ("\\{3, 4\\}", "3"), ("3 = 4", "3"), ("-\\frac{11}{6}", "\\frac{11}{6}"),
     ("The answer is 3 apples", "3"), ("9" * 60, "9" * 59 + "8"), ("\\infty", "3"), ("x", "3")],
)
def test_anything_else_is_wrong_never_ungraded(no_math_verify, answer, gold):
    """Expressions of the value, rounded decimals, hedges, lists and prose are wrong: the exact grader
    pays a number of the gold's value and nothing else."""
    result = math_pool.grade_math(answer, gold)
    assert (result.status, result.correct) == ("ok", False), answer


def test_a_gold_that_is_not_a_number_needs_math_verify(no_math_verify):
    with pytest.raises(DependencyNotInstalled, match=r"math-verify, from the 'math' extra: pip install -e \".\[math\]\""):
        math_pool.grade_math("\\sqrt{2}", "\\sqrt{2} + 0")
    # an env says so when it is built, never in step
    rows = [{"problem": "2 + 2?", "answer": "4"}, {"problem": "Solve x^2 = 2.", "answer": "\\pm\\sqrt{2}"}]
    with pytest.raises(DependencyNotInstalled, match=r"MathEnv over the given rows .* 'math' extra"):
        MathEnv(dataset=rows)
    env = MathEnv(dataset=rows[:1])  # numbers only: graded exactly
    env.reset(seed=0)
    assert env.step("\\boxed{4}")[1] == 1.0


ACTIONS = [
    "\\boxed{\\frac{1}{2}}", "\\boxed{1/2 or 3}", "\\boxed{\\sqrt{2}}", "\\boxed{x^2 + 1}", "\\boxed{\\{1, 2\\}}",
    "\\boxed{[0, 1)}", "\\boxed{" + "{" * 50 + "}", "\\boxed{9^{9^{9}}}", "\\boxed{\\text{no idea}}",
    "\\boxed{" + "1" * 5000 + "}", "no box at all", "",
]


def test_math_arithmetic_plays_and_grades_in_the_core(no_math_verify):
    """math:Arithmetic, the bundled math env, needs no extra: its reference answers pay and no action
    makes step raise."""
    env = gem.make("math:Arithmetic")
    for seed in range(20):
        env.reset(seed=seed)
        gold = env.answer
        assert env.step(f"The answer is \\boxed{{{gold}}}.")[1] == 1.0, gold
        for action in ACTIONS:
            if f"{{{gold}}}" in action:
                continue
            env.reset(seed=seed)
            _, reward, terminated, _, info = env.step(action)
            assert terminated and reward <= 0 and info["correct"] is False, (action, gold)
    env.close()
