"""The original GEM's math grader names (``grade``, ``grade_answer_sympy``, ``grade_answer_mathd``,
``extract_answer``, ``answer_tag_reward_fn``, ``run_with_timeout_signal``, ...).

They live in :mod:`gem.utils.math_grader_compat` and are importable from the original's path,
``gem.utils.math_grader``, as from here.
"""

from gem.utils.math_grader_compat import *  # noqa: F401,F403
