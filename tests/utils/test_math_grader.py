"""The math grader: a table of equivalent and non-equivalent answers, deadlines, threads, hostile input."""

import re
import threading
import time

import pytest

from gem.utils.math_answers import not_a_final_answer

import gem.utils.math_grader as mg
from gem.utils.math_grader import (
    MathGrader,
    boxed_reward_fn,
    fast_verdict,
    grade_answer,
    grade_response,
    is_huge_power,
    parse_number,
)
from tests.conftest import needs_extra

needs_extra("math")  # math-verify grades

# (prediction, gold): each must be graded correct.
EQUIVALENT = [
    ("42", "42"),
    (" 42 ", "42"),
    ("42.0", "42"),
    ("+7", "7"),
    ("-3", "-3"),
    ("1,000", "1000"),
    ("1{,}000", "1000"),
    ("0.5", "\\frac{1}{2}"),
    ("\\frac{1}{2}", "0.5"),
    ("1/2", "\\frac12"),
    ("\\dfrac{3}{4}", "\\frac{3}{4}"),
    ("\\tfrac{3}{4}", "0.75"),
    ("-\\frac{2}{3}", "\\frac{-2}{3}"),
    ("\\frac{6}{8}", "\\frac{3}{4}"),
    ("\\left(1, 2\\right)", "(1,2)"),
    ("50\\%", "50"),
    ("90^\\circ", "90"),
    ("90^{\\circ}", "90"),
    ("5 \\text{ cm}", "5"),
    ("12\\text{ dollars}", "12"),
    ("$7$", "7"),
    ("\\sqrt{2}/2", "\\frac{\\sqrt{2}}{2}"),
    ("\\frac{\\sqrt{3}}{3}", "\\frac{1}{\\sqrt{3}}"),
    ("2\\sqrt{2}", "\\sqrt{8}"),
    ("\\pi", "\\pi"),
    ("2\\pi", "\\pi \\cdot 2"),
    ("\\{1,2,3\\}", "\\{3,2,1\\}"),
    ("\\{1, 2\\}", "\\{2, 1\\}"),
    ("(1,2]", "(1, 2]"),
    ("[0, \\infty)", "[0,\\infty)"),
    ("(-\\infty, 3) \\cup (5, \\infty)", "(-\\infty,3)\\cup(5,\\infty)"),
    ("x=5", "5"),
    ("x = 5", "x=5"),
    ("y = 2x + 1", "y = 1 + 2x"),
    ("x^2+2x+1", "(x+1)^2"),
    ("2x+3", "3+2x"),
    ("\\frac{x}{2}", "0.5x"),
    ("10^{3}", "1000"),
    ("2^{10}", "1024"),
    ("3.14159", "3.14159"),
    ("1.0 \\times 10^{3}", "1000"),
    ("\\boxed{5}", "5"),
    ("\\text{12}", "12"),
    ("0.333333", "\\frac{1}{3}"),
    ("1.5", "\\frac{3}{2}"),
    ("-0.25", "-\\frac{1}{4}"),
    ("\\$12", "12"),
    ("7", ["6", "7"]),
]

# (prediction, gold): each must be graded wrong.
NOT_EQUIVALENT = [
    ("41", "42"),
    ("-42", "42"),
    ("0", "42"),
    ("4.2", "42"),
    ("\\frac{1}{3}", "0.5"),
    ("1/3", "\\frac{1}{2}"),
    ("\\{1,2\\}", "\\{1,2,3\\}"),
    ("(1,2)", "[1,2]"),
    ("[1,2)", "(1,2]"),
    ("x=4", "5"),
    ("2x+1", "2x-1"),
    ("x^2", "x^3"),
    ("\\sqrt{2}", "\\sqrt{3}"),
    ("\\pi", "3"),
    ("7", ["6", "8"]),
    ("hello", "42"),
    ("", "42"),
    ("1000", "100"),
    ("1,001", "1000"),
    ("2^{11}", "1024"),
    ("\\infty", "42"),
    ("(1, 2)", "(2, 1)"),
]

# Inputs that must return within the deadline (and be wrong).
PATHOLOGICAL = [
    ("9^{9^{9^9}}", "1"),
    ("9^{9^{9^{9^{9}}}}", "7"),
    ("1+" * 50_000 + "1", "5"),
    ("\\frac{" * 5000 + "1", "1"),
    ("{{{{{{{{{{" + "x" * 1000, "3"),
    ("}}}}}} \\frac{1}{", "2"),
    ("\x00\x00\ud800", "1"),
    ("((((" * 2000, "4"),
    ("(10^{10^{7}})!", "5"),
    ("\\sum_{k=1}^{10^{12}} k^{k}", "6"),
    ("10^{10^{8}}", "8"),
]


@pytest.fixture(scope="module")
def grader():
    g = MathGrader(workers=2, timeout=2.0)
    assert g.warm_up()
    yield g
    g.close()


@pytest.mark.parametrize("pred, gold", EQUIVALENT, ids=[f"eq{i}" for i in range(len(EQUIVALENT))])
def test_equivalent(grader, pred, gold):
    assert grader.grade(pred, gold) is True


@pytest.mark.parametrize("pred, gold", NOT_EQUIVALENT, ids=[f"ne{i}" for i in range(len(NOT_EQUIVALENT))])
def test_not_equivalent(grader, pred, gold):
    assert grader.grade(pred, gold) is False


@pytest.mark.parametrize("pred, gold", PATHOLOGICAL, ids=[f"bad{i}" for i in range(len(PATHOLOGICAL))])
def test_pathological_inputs_return_within_the_limit(grader, pred, gold):
    assert grader.warm_up()  # a worker killed by the previous case has been replaced
    start = time.monotonic()
    result = grader.judge(pred, gold, timeout=1.0)
    assert result.correct is not True and grader.grade(pred, gold, timeout=1.0) is False
    # the wall-clock backstop (1.5 x 1 s + 0.5 s) plus slack for this loaded machine
    assert time.monotonic() - start < 2 * (1.0 * mg.HARD_LIMIT_FACTOR + mg.HARD_LIMIT_SLACK_S) + 1.0


def test_the_table_is_large():
    assert len(EQUIVALENT) + len(NOT_EQUIVALENT) + len(PATHOLOGICAL) >= 60


def test_fast_paths_decide_without_workers():
    assert fast_verdict("1,000", "1000") is True
    assert fast_verdict("\\frac{1}{2}", "0.5") is True
    assert fast_verdict("3", "4") is False
    assert fast_verdict("0.333", "\\frac13") is None  # math-verify's call
    assert fast_verdict("x+1", "1+x") is None
    assert parse_number("9^{9^{9^9}}") is None
    assert is_huge_power("9^{9^{9^9}}") and is_huge_power("10^{10^{8}}")
    assert not is_huge_power("2^{2^{2}}") and not is_huge_power("10^{3}")
    assert parse_number("\\frac{3}{0}") is None
    assert parse_number("-\\frac{3}{4}") == parse_number("-0.75")


def test_a_stuck_worker_is_killed_replaced_and_the_pool_keeps_working(monkeypatch):
    # The worker interrupts itself at its CPU budget; put the parent's wall-clock backstop before
    # it so the parent must kill it (what happens to work stuck in C code, which signals cannot
    # interrupt).
    from gem.utils import math_grading_pool as pool  # where the pool reads its limits

    monkeypatch.setattr(pool, "HARD_LIMIT_FACTOR", 0.2)
    monkeypatch.setattr(pool, "HARD_LIMIT_SLACK_S", 0.0)
    g = MathGrader(workers=1)
    try:
        assert g.warm_up()
        start = time.monotonic()
        result = g.judge("(10^{10^{7}})!", "1", timeout=1.0)
        assert (result.status, result.correct, result.component) == ("timeout", None, "math-verify")
        assert "wall time" in result.reason
        assert time.monotonic() - start < 1.5
        assert g.timeouts == 1
        monkeypatch.setattr(pool, "HARD_LIMIT_FACTOR", 1.5)
        assert g.grade("x^2+2x+1", "(x+1)^2") is True  # the replacement worker answers
    finally:
        g.close()


def test_deadline_holds_in_threads(grader):
    """No signals: grading from many threads at once works and respects the limit."""
    results, errors = {}, []

    def run(k):
        try:
            start = time.monotonic()
            pred = "(10^{10^{7}})!" if k % 4 == 0 else f"\\frac{{{2 * k}}}{{{2}}}"
            results[k] = (grader.grade(pred, str(k), timeout=1.0), time.monotonic() - start)
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(results) == list(range(8))
    limit = 2 * (1.0 * mg.HARD_LIMIT_FACTOR + mg.HARD_LIMIT_SLACK_S) + 1.0  # as the single-thread test
    for k, (ok, seconds) in results.items():
        assert ok is (k % 4 != 0)
        assert seconds < limit, f"grading {k} took {seconds:.2f} s, past the deadline's bound {limit:.2f} s"


def test_grade_many_keeps_order(grader):
    preds = ["1", "x+1", "\\frac{1}{2}", "3"]
    golds = ["1", "1+x", "0.5", "4"]
    assert grader.grade_many(preds, golds) == [True, True, True, False]


def test_response_helpers():
    assert grade_response("so the answer is \\boxed{\\frac{1}{2}}.", "0.5") is True
    assert grade_response("no box here", "0.5") is None
    assert grade_answer(None, "1") is False
    assert boxed_reward_fn("\\boxed{3}", "3") == ({"formatted": True}, 1.0)
    assert boxed_reward_fn("3", "3") == ({"formatted": False}, 0.0)
    assert boxed_reward_fn("\\boxed{4}", 3, fast=True) == ({"formatted": True}, 0.0)


def test_bad_arguments():
    with pytest.raises(ValueError, match="workers"):
        MathGrader(workers=0)
    with pytest.raises(ValueError, match="timeout"):
        MathGrader(timeout=0)


# ------------------------------------------------------------ grading that cannot finish
# Gold answers of the slow cases are symbolic (7x): an unevaluated expression is refused at once
# when the gold answer is a plain number, before math-verify.
SLOW = ["(x+y+z)^{60}", "\\sum_{k=1}^{10^{6}} k^{k}", "\\int_0^1 e^{-x^{2}} \\sin(x^{3}) dx"]


def test_a_slow_answer_is_reported_ungraded_not_wrong(grader):
    result = grader.judge("(x+y+z)^{60}", "7x", timeout=0.3)
    assert (result.status, result.correct, result.component) == ("timeout", None, "math-verify")
    # the worker's CPU budget, or (on a loaded machine) the parent's wall-clock backstop, cut it
    assert re.search(r"0\.3 s of CPU time|s of wall time", result.reason), result.reason
    assert result.info() == {
        "grading": "timeout", "grading_error": {"component": "math-verify", "reason": result.reason},
    }
    assert not result and grader.grade("(x+y+z)^{60}", "7x", timeout=0.3) is False
    assert grader.judge("\\sqrt{1764}", "42").info() == {"grading": "ok"}


def test_a_correct_answer_is_graded_correct_under_load():
    """Many slow answers in flight at once do not turn a correct answer behind them into a wrong one:
    waiting for a worker does not count against its time budget."""
    g = MathGrader(workers=2, timeout=0.1)
    try:
        assert g.warm_up()
        results: dict[int, object] = {}

        slow = [a for a in SLOW if not_a_final_answer(a, "7x") is None]  # those that reach a worker

        def run(k: int) -> None:
            results[k] = g.judge(slow[k % len(slow)] + " " * k, "7x")  # distinct answers: no cache

        threads = [threading.Thread(target=run, args=(k,)) for k in range(24)]
        for t in threads:
            t.start()
        time.sleep(0.2)  # the slow ones are queued first
        start = time.monotonic()
        correct = g.judge("\\sqrt{1764}", "42", timeout=0.3)
        waited = time.monotonic() - start
        for t in threads:
            t.join()
        assert (correct.status, correct.correct) == ("ok", True)
        assert waited > 0.3  # it waited longer than its own budget, and that did not count
        assert all(r.correct is not True for r in results.values())
        assert all(r.status in ("ok", "timeout") for r in results.values())
        assert g.timeouts >= 8
    finally:
        g.close()


def _judge_behind_a_slow_answer(**grader_kwargs):
    """Judge a correct answer while one slow answer holds the only worker; then a second time."""
    g = MathGrader(workers=1, **grader_kwargs)
    try:
        assert g.warm_up()
        slow = threading.Thread(target=g.judge, args=("(x+y+z)^{60}", "7x"))
        slow.start()
        time.sleep(0.1)
        result = g.judge("\\sqrt{1764}", "42")
        slow.join()
        return result, g.errors, g.judge("\\sqrt{1764}", "42")
    finally:
        g.close()


def test_a_full_queue_is_reported_as_an_error_not_wrong():
    result, errors, later = _judge_behind_a_slow_answer(timeout=0.5, max_pending=1)
    assert (result.status, result.correct, result.component) == ("error", None, "math-verify")
    assert "max_pending" in result.reason and errors == 1
    assert later.correct is True  # once the queue has room


def test_a_dead_worker_is_reported_and_replaced():
    import os
    import signal

    g = MathGrader(workers=1, timeout=5.0)
    try:
        assert g.warm_up()
        pid = g._all[0].pid
        killer = threading.Timer(0.3, os.kill, args=(pid, signal.SIGKILL))
        killer.start()
        result = g.judge("\\int_0^1 e^{-x^{2}} \\sin(x^{3}) dx", "7")
        killer.join()
        assert (result.status, result.correct) == ("error", None)
        assert "died" in result.reason
        assert g.judge("\\sqrt{1764}", "42").correct is True
    finally:
        g.close()


def test_queue_timeout_reports_an_error():
    result, errors, later = _judge_behind_a_slow_answer(timeout=1.0, queue_timeout=0.5)
    assert (result.status, result.correct) == ("error", None) and "no worker was free" in result.reason
    assert errors == 1 and later.correct is True


def test_more_bad_arguments():
    with pytest.raises(ValueError, match="max_pending"):
        MathGrader(max_pending=0)
    with pytest.raises(ValueError, match="queue_timeout"):
        MathGrader(queue_timeout=0)
    with pytest.raises(ValueError, match="status"):
        mg.ungraded("ok", "x", "y")


def test_workers_that_cannot_start_are_reported_not_waited_for_forever(monkeypatch):
    g = MathGrader(workers=1, start_timeout=0.5)
    try:
        monkeypatch.setattr(mg._Zygote, "spawn", lambda self, timeout: None)  # every fork fails
        result = g.judge("\\sqrt{1764}", "42")
        assert (result.status, result.correct) == ("error", None)
        assert "could be started" in result.reason
    finally:
        g.close()


def test_the_split_modules_and_the_old_path_are_one_implementation():
    from gem.utils import math_answers, math_grader_compat, math_grading_pool

    assert mg.MathGrader is math_grading_pool.MathGrader and mg.default_grader is math_grading_pool.default_grader
    assert mg.fast_verdict is math_answers.fast_verdict and mg.grade is math_grader_compat.grade
    assert all(hasattr(mg, name) for name in mg.__all__)
