"""The original GEM's MathEnv names: ``verify_fn`` (its reward function: ``boxed_reward_fn`` with
1/0 rewards) and the static method ``MathEnv.check_correct``.

``gem.envs.math_env`` re-exports ``verify_fn``; :class:`MathEnvCompat` is a base of
:class:`gem.envs.math_env.MathEnv` (and so of ``MathVisualEnv``).
"""

from __future__ import annotations

import functools
from typing import Any

from gem.utils.math_grader import boxed_reward_fn, default_grader
from gem.utils.parsing import extract_last_boxed_answer

verify_fn = functools.partial(boxed_reward_fn, fast=False, correct_reward=1, incorrect_reward=0)


class MathEnvCompat:
    """``check_correct`` (see the module docstring)."""

    @staticmethod
    def check_correct(model_answer: str, gt_answer: Any) -> bool:
        """Whether the response ``model_answer`` (its last ``\\boxed{}``) matches ``gt_answer``, one
        answer or a list of them (``False`` when ungraded)."""
        if not isinstance(gt_answer, (str, int, float, list, tuple)):
            raise ValueError(f"Unexpected answer type: {type(gt_answer).__name__}")
        pred = extract_last_boxed_answer(model_answer)
        return pred is not None and default_grader().grade(pred, gt_answer)
