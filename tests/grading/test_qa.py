"""grade_qa: exact match and token F1 as a GradeResult, and the QA env paying from it."""

from __future__ import annotations

import pytest

from gem.envs.qa_env import QaEnv
from gem.grading import grade_qa


def test_an_exact_match_after_normalization_is_graded_correct():
    result = grade_qa("The Eiffel Tower.", ["eiffel tower", "tour eiffel"])
    assert (result.status, result.correct, result.score) == ("ok", True, 1.0)
    assert result.details == {"em": True, "f1": 1.0}


def test_a_partial_answer_is_wrong_and_scores_its_f1_only_with_the_f1_metric():
    em = grade_qa("the eiffel tower in paris", "Eiffel Tower")
    assert (em.status, em.correct, em.score) == ("ok", False, 0.0)
    f1 = grade_qa("the eiffel tower in paris", "Eiffel Tower", metric="f1")
    # tokens after normalization: eiffel tower in paris (4) vs eiffel tower (2): P 1/2, R 1
    assert f1.correct is False and f1.score == pytest.approx(2 / 3) and f1.details["f1"] == pytest.approx(2 / 3)
    assert grade_qa("paris", "Eiffel Tower", metric="f1").score == 0.0
    assert grade_qa("yes", "yes it is", metric="f1").score == 0.0  # yes/no only scores when exact


def test_an_unknown_metric_raises_naming_the_metrics():
    with pytest.raises(ValueError, match="'em', 'f1'"):
        grade_qa("a", "a", metric="bleu")


@pytest.mark.parametrize("reward, expected", [("em", 0.0), ("f1", 2 / 3)])
def test_the_qa_env_pays_what_grade_qa_scores(reward, expected):
    env = QaEnv(dataset=[{"question": "Which tower?", "answer": "Eiffel Tower"}], reward=reward)
    env.reset(seed=0)
    _, paid, _, _, info = env.step("<answer>the eiffel tower in paris</answer>")
    assert paid == pytest.approx(expected) and info["correct"] is False and info["grading"] == "ok"
    assert info["f1"] == pytest.approx(2 / 3)
    env.reset(seed=0)
    assert env.step("<answer>eiffel tower</answer>")[1] == 1.0
