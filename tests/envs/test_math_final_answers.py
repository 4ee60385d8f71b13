"""Math answers are paid only as final answers: no hedges by connective, no restated problem, no prose.

``gem validate`` found both on math:Arithmetic: ``\\boxed{-77 \\lor -78}`` (math-verify reads a
disjunction and matches either side) and the question's own expression boxed
(``\\boxed{17 - 14 - 9 \\times 9}``, which math-verify evaluates).
"""

import pytest

import gem
from gem.envs.math_env import MathEnv
from gem.utils.math_answers import fast_verdict, not_a_final_answer
from gem.utils.math_grader import grade_answer
from tests.conftest import needs_extra

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.mark.parametrize(
    "pred, gold",
    [
        ("-77 \\lor -78", "-78"),
        ("-78 \\vee 5", "-78"),
        ("\\pm 78", "-78"),
        ("78 \\text{ or } -78", "-78"),
        ("41 or 42", "42"),
        ("41; 42", "42"),
        ("41 = 42", "42"),
        ("x = 41 = 42", "42"),
        ("17 - 14 - 9 \\times 9", "-78"),
        ("Compute $17 - 14 - 9 \\times 9$.", "-78"),
        ("6 \\cdot 7", "42"),
        ("84 / 2 + 0", "42"),
        ("\\frac{1}{2} + \\frac{1}{2}", "1"),
        ("the value of six times seven", "42"),
    ],
)
def test_hedges_restated_problems_and_prose_earn_nothing(pred, gold):
    assert not_a_final_answer(pred, gold) is not None
    assert fast_verdict(pred, gold) is False
    assert grade_answer(pred, gold) is False
    assert MathEnv.check_correct(f"\\boxed{{{pred}}}", gold) is False


@pytest.mark.parametrize(
    "pred, gold",
    [
        ("-78", "-78"),
        ("\\frac{1}{2}", "0.5"),
        ("x = 42", "42"),
        ("42\\text{ cm}", "42"),
        ("3 \\pm \\sqrt{2}", "3 \\pm \\sqrt{2}"),  # the gold answer uses the connective itself
        ("x^2 + 1", "1 + x^2"),  # an expression where the gold answer is one
        ("(-\\infty, 1) \\cup (2, \\infty)", "(-\\infty,1)\\cup(2,\\infty)"),
        ("\\text{Monday}", "\\text{Monday}"),
    ],
)
def test_final_answers_in_every_usual_form_still_pass(pred, gold):
    assert not_a_final_answer(pred, gold) is None
    if fast_verdict(pred, gold) is None:  # only math-verify can decide this one
        needs_extra("math")
    assert grade_answer(pred, gold) is True


def test_echoing_an_arithmetic_question_earns_nothing():
    env = gem.make("math:Arithmetic")
    obs, _ = env.reset(seed=0)
    problem = obs.split("\n")[0]
    expression = problem[problem.index("$") + 1 : problem.rindex("$")]
    env.reset(seed=0)
    assert env.step(f"\\boxed{{{expression}}}")[1] == 0.0
    env.reset(seed=0)
    assert env.step(f"\\boxed{{{env.unwrapped.answer}}}")[1] == 1.0
