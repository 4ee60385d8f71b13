"""The graders' former modules are the same modules at their old paths, and the zygote still runs
under its former name."""

from __future__ import annotations

import importlib
import socket
import subprocess
import sys

import pytest

MOVED = [
    ("gem.utils.math_answers", "gem.grading.math_answers"),
    ("gem.utils.math_grading_pool", "gem.grading.math_pool"),
    ("gem.utils._math_grader_worker", "gem.grading._math_worker"),
    ("gem.utils.qa_em", "gem.grading.qa"),
    ("gem.utils.math_grader_compat", "gem.compat.math_grader"),
]


@pytest.mark.parametrize("old, new", MOVED)
def test_a_former_module_path_is_the_same_module(old, new):
    assert importlib.import_module(old) is importlib.import_module(new)


def test_the_math_grader_path_still_has_every_name_and_the_grading_modules_no_original_names():
    import gem.utils.math_grader as mg
    from gem.compat import math_grader as compat
    from gem.grading import math_answers, math_pool

    assert all(hasattr(mg, name) for name in mg.__all__)
    assert mg.grade is compat.grade and mg.MathGrader is math_pool.MathGrader and mg._value is math_answers._value
    for name in ("grade", "grade_answer_sympy", "grade_answer_mathd", "run_with_timeout_signal", "answer_tag_reward_fn"):
        assert not hasattr(math_pool, name) and not hasattr(math_answers, name)


@pytest.mark.parametrize("module", ["gem.grading._math_worker", "gem.utils._math_grader_worker"])
def test_the_zygote_starts_under_either_name(module):
    pytest.importorskip("math_verify", reason="the zygote imports math-verify")
    ours, theirs = socket.socketpair()
    proc = subprocess.Popen(
        [sys.executable, "-m", module, "--fd", str(theirs.fileno())], pass_fds=[theirs.fileno()],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    theirs.close()
    try:
        ours.settimeout(120)
        assert ours.recv(16) == b"ready\n"
    finally:
        ours.close()  # the zygote exits when its control socket closes
        assert proc.wait(timeout=30) == 0, proc.stderr.read().decode()[-2000:]
