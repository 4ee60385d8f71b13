"""run_code_tests: a program's tests as a GradeResult (passed, failed, cut by a limit, not runnable)
and CodeEnv reporting the same."""

from __future__ import annotations

import pytest

from gem.envs.code_env import CodeEnv
from gem.grading import run_code_tests
from gem.grading.code_tests import normalize_tests, report_info, sandbox_limits
from gem.utils.sandbox import Sandbox, SandboxError, SandboxResult

TESTS = {"inputs": ["1 2\n", "5 7\n", "10 -3\n"], "outputs": ["3\n", "12\n", "7\n"]}
SUM = "a, b = map(int, input().split())\nprint(a + b)"
FIRST_TWO = "a, b = map(int, input().split())\nprint(a + b if a < 10 else 0)"


@pytest.fixture(scope="module")
def sandbox():
    box = Sandbox(slots=8)
    try:
        yield box
    finally:
        box.close()


def test_a_program_that_passes_every_test_is_graded_one(sandbox):
    result = run_code_tests(SUM, TESTS, sandbox=sandbox)
    assert (result.status, result.correct, result.score) == ("ok", True, 1.0)
    assert result.details == {"passed": 3, "total": 3, "first_failure": None, "verdicts": ["passed"] * 3}


@pytest.mark.parametrize("max_workers", [1, 3])
def test_a_failing_test_makes_it_wrong_and_names_the_test(sandbox, max_workers):
    result = run_code_tests(FIRST_TWO, TESTS, sandbox=sandbox, max_workers=max_workers, reward_mode="fraction")
    assert (result.status, result.correct, result.score) == ("ok", False, pytest.approx(2 / 3))
    assert result.details["verdicts"] == ["passed", "passed", "wrong answer"]
    assert result.details["first_failure"] == {"verdict": "wrong answer", "detail": "", "index": 2}
    stop = run_code_tests("print(0)", TESTS, sandbox=sandbox, max_workers=1)  # "all": the first failure stops it
    assert (stop.correct, stop.score, stop.details["verdicts"]) == (False, 0.0, ["wrong answer", None, None])


def test_a_function_call_test_compares_the_returned_value(sandbox):
    tests = {"fn_name": "add", "inputs": [[1, 2], [2.5, 0.25]], "outputs": [3, 2.75]}
    assert run_code_tests("def add(a, b):\n    return a + b", tests, sandbox=sandbox).correct is True
    wrong = run_code_tests("def add(a, b):\n    return round(a + b)", tests, sandbox=sandbox, reward_mode="fraction")
    assert (wrong.correct, wrong.details["verdicts"]) == (False, ["passed", "wrong answer"])  # 3 is not 2.75


def test_a_program_that_burns_its_cpu_time_fails_but_one_that_sleeps_is_ungraded(sandbox):
    limits = sandbox_limits(0.3)
    spin = run_code_tests("while True: pass", TESTS, sandbox=sandbox, limits=limits, max_workers=1)
    assert (spin.status, spin.correct, spin.details["first_failure"]["verdict"]) == ("ok", False, "time limit exceeded")
    sleep = run_code_tests("import time\ntime.sleep(30)", TESTS, sandbox=sandbox, limits=limits, max_workers=1)
    assert (sleep.status, sleep.correct, sleep.score, sleep.component) == ("timeout", None, 0.0, "sandbox")
    assert "wall-clock limit of 2.6 s" in sleep.reason and sleep.details["verdicts"][0] == "ungraded"


class _BrokenSandbox:
    """A sandbox that cannot start a run for the stdin in ``broken`` and echoes the right sum otherwise."""

    def __init__(self, broken: str):
        self.broken = broken

    def run(self, code, stdin=None, *, limits=None, **overrides):
        if stdin == self.broken:
            raise SandboxError("the worker could not start")
        a, b = map(int, stdin.split())
        return SandboxResult(stdout=f"{a + b}\n", stderr="", exit_code=0, reason="ok", wall_time=0.1, cpu_time=0.01)


def test_a_sandbox_that_cannot_run_a_test_leaves_the_program_ungraded_unless_another_failed():
    result = run_code_tests(SUM, TESTS, sandbox=_BrokenSandbox("5 7\n"), max_workers=1)
    assert (result.status, result.correct, result.score, result.component) == ("error", None, 0.0, "sandbox")
    assert "could not start" in result.reason and result.details["verdicts"] == ["passed", "ungraded", None]
    failed_too = {"inputs": ["1 1\n", "5 7\n"], "outputs": ["3\n", "12\n"]}  # the first expects a wrong sum
    wrong = run_code_tests(SUM, failed_too, sandbox=_BrokenSandbox("5 7\n"), max_workers=1)
    assert (wrong.status, wrong.correct) == ("ok", False)
    fraction = run_code_tests(SUM, failed_too, sandbox=_BrokenSandbox("5 7\n"), max_workers=1, reward_mode="fraction")
    assert (fraction.status, fraction.correct) == ("error", None)  # with fraction any ungraded test counts


def test_the_code_env_reports_what_run_code_tests_grades(sandbox, monkeypatch):
    monkeypatch.delenv("GEM_STRICT_INFRA")  # an ungraded program is reported in info, not raised
    env = CodeEnv(dataset=[{"problem": "Add two numbers.", "tests": TESTS}], sandbox=sandbox, test_timeout=0.3)
    for program, reward, correct, status in [
        (SUM, 1.0, True, "ok"),
        (FIRST_TWO, 0.0, False, "ok"),
        ("import time\ntime.sleep(30)", 0.0, None, "timeout"),
    ]:
        env.reset(seed=0)
        _, paid, _, _, info = env.step(f"```python\n{program}\n```")
        assert (paid, info["correct"], info["grading"]) == (reward, correct, status)
        expected = report_info(env.grade_program(program))
        assert {k: info[k] for k in ("passed", "total", "verdicts", "grading")} == {k: expected[k] for k in ("passed", "total", "verdicts", "grading")}


def test_bad_arguments_raise_naming_the_valid_choices(sandbox):
    with pytest.raises(ValueError, match="'all', 'fraction'"):
        run_code_tests(SUM, TESTS, sandbox=sandbox, reward_mode="most")
    with pytest.raises(ValueError, match="max_workers"):
        run_code_tests(SUM, TESTS, sandbox=sandbox, max_workers=0)


def test_normalized_tests_are_taken_as_they_are():
    cases = normalize_tests([{"input": "1", "output": "1", "type": "stdin_stdout", "fn_name": "f"}])
    assert cases[0]["kind"] == "stdio"  # a stdin test, though the row names a function
    result = run_code_tests("print(input())", cases, sandbox=_EchoSandbox())
    assert result.correct is True


class _EchoSandbox:
    def run(self, code, stdin=None, *, limits=None, **overrides):
        assert code == "print(input())"  # run as a stdin program, not through a call harness
        return SandboxResult(stdout=stdin + "\n", stderr="", exit_code=0, reason="ok", wall_time=0.1, cpu_time=0.01)


def test_the_former_homes_of_the_runner_are_the_same_names():
    from gem.envs import code_env
    from gem.grading import code_tests

    assert code_env.normalize_tests is code_tests.normalize_tests and code_env._call_harness is code_tests._call_harness
    assert code_env.outputs_match is code_tests.outputs_match and code_env._test_pool is code_tests._test_pool
    code_tests._test_pool()
    assert code_env._pool is code_tests._pool is not None
