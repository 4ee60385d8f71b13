"""Grade a math answer against the gold answer: fast exact paths, then math-verify under a hard deadline.

``grade_answer(pred, gold)`` compares an extracted answer (the content of the last ``\\boxed{}``)
with one gold answer or a list of them. Cheap checks come first, in this process: the same string
after light normalization, or the same number (integers, decimals, ``a/b``, ``\\frac{a}{b}``,
thousands separators). Whatever they cannot decide goes to math-verify (numbers, fractions, LaTeX,
sets, intervals, equations, units), which runs in a small pool of worker processes.

Grading never calls a correct answer wrong because it could not finish. :meth:`MathGrader.judge`
returns a :class:`GradeResult` whose ``status`` is ``"ok"`` (``correct`` is the verdict),
``"timeout"`` (math-verify used its whole time budget on this answer) or ``"error"`` (the queue was
full, the workers could not start, a worker died or math-verify raised); ``component`` and
``reason`` say what failed. The time budget is the call's own work: waiting for a free worker
behind other answers does not count, and the worker measures CPU time, so a busy machine does not
eat into it either (the parent still kills a worker stuck in C code at a wall-clock backstop).
The boolean helpers (``grade``, ``grade_answer``, ``MathGrader.grade``) answer ``True`` only for a
graded correct answer. No signals are used in the caller (math-verify's own timeout relies on
``SIGALRM``, which only works in the main thread). Answers longer than :data:`MAX_VERIFY_CHARS`
are never sent to math-verify (only the exact paths judge them), so a 100 KB answer costs one
linear pass.

The code lives in :mod:`gem.grading` and :mod:`gem.compat`, all re-exported here (the import
path of every name stays ``gem.utils.math_grader``): :mod:`gem.grading.math_answers` (the fast
exact paths), :mod:`gem.grading.math_pool` (the worker pool, :class:`MathGrader`, ``grade_math``,
``grade_answer``, ``boxed_reward_fn``), :class:`~gem.grading.result.GradeResult` (the result type
every grader returns) and :mod:`gem.compat.math_grader` (the original GEM's names: ``grade``,
``grade_answer_sympy``, ``grade_answer_mathd``, ``extract_answer``, ``answer_tag_reward_fn``,
``run_with_timeout_signal``, ..., with the same signatures and return types).
"""

from __future__ import annotations

from typing import Iterable

from gem.compat import math_grader as math_grader_compat
from gem.grading import math_answers
from gem.grading import math_pool as math_grading_pool
from gem.grading.math_answers import *  # noqa: F401,F403
from gem.compat.math_grader import *  # noqa: F401,F403
from gem.grading.math_pool import *  # noqa: F401,F403

# Every name of the three modules, private helpers included, as before the split.
for _module in (math_answers, math_grading_pool, math_grader_compat):
    globals().update({k: v for k, v in vars(_module).items() if not k.startswith("__")})
del _module

__all__: Iterable[str] = [
    "BAD_REGEXES",
    "BAD_SUBSTRINGS",
    "DEFAULT_TIMEOUT_S",
    "GradeResult",
    "MathGrader",
    "REMOVED_EXPRESSIONS",
    "SUBSTITUTIONS",
    "TUPLE_CHARS",
    "TimeoutException",
    "answer_tag_reward_fn",
    "answer_tag_reward_fn_for_orz",
    "are_equal_under_sympy",
    "boxed_reward_fn",
    "count_unknown_letters_in_expr",
    "default_grader",
    "extract_answer",
    "extract_boxed_answer",
    "fast_verdict",
    "grade",
    "grade_answer",
    "grade_answer_mathd",
    "grade_answer_sympy",
    "grade_response",
    "is_latex_equal",
    "is_value_equal",
    "last_boxed_only_string",
    "latex_eval",
    "mathd_normalize_answer",
    "normalize_final_answer",
    "normalize_string",
    "numeric_equal",
    "parse_number",
    "r1_distill_qwen_math_reward_fn",
    "remove_boxed",
    "repeatness",
    "run_with_timeout_signal",
    "should_allow_eval",
    "split_tuple",
    "symbolic_equal",
    "timeout",
    "unit_texts",
]

