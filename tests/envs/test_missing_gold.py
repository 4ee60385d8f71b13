"""Rows without a gold answer (a blank cell read as NaN, None, an empty string, the text ``nan``) are
left out of math and QA envs: such a row would pay a fixed reply that never reads the problem."""

import logging

import pytest

from gem.envs.math_env import MathEnv
from gem.envs.qa_env import QaEnv
from tests.conftest import needs_extra

MISSING = [float("nan"), "nan", "NaN", "", "  ", None, ["nan", ""]]


@pytest.mark.parametrize("gold", MISSING, ids=repr)
def test_math_row_without_gold_pays_no_fixed_reply(gold, caplog):
    rows = [{"problem": "What is 2+2?", "answer": "4"}, {"problem": "Blank row", "answer": gold}]
    with caplog.at_level(logging.WARNING, logger="gem.envs.single_turn"):
        env = MathEnv(dataset=rows)
    assert "1 of 2 rows" in caplog.text
    for seed in range(6):  # every reset lands on the one row that has a gold
        obs, _ = env.reset(seed=seed)
        assert "2+2" in obs
        for fixed in (r"\boxed{nan}", r"\boxed{}", r"\boxed{None}"):
            env.reset(seed=seed)
            assert env.step(fixed)[1] <= 0
        env.reset(seed=seed)
        assert env.step(r"\boxed{4}")[1] == 1.0


def test_qa_row_without_gold_is_left_out():
    env = QaEnv(dataset=[{"question": "Capital of France?", "answer": "Paris"}, {"question": "?", "answer": float("nan")}])
    for seed in range(4):
        obs, _ = env.reset(seed=seed)
        assert "France" in obs
        assert env.step("<answer>nan</answer>")[1] <= 0


def test_dataset_without_any_gold_is_an_error():
    with pytest.raises(ValueError, match="has a gold 'answer'.*answer_key"):
        MathEnv(dataset=[{"problem": "x", "answer": float("nan")}, {"problem": "y", "answer": ""}])


def test_infinity_is_a_real_answer():
    needs_extra("math")  # \\infty is not a plain number: math-verify grades it
    env = MathEnv(dataset=[{"problem": "lim 1/x as x->0+", "answer": "\\infty"}])
    env.reset(seed=0)
    assert env.step(r"\boxed{\infty}")[1] == 1.0
