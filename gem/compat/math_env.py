"""The original GEM's MathEnv names: ``verify_fn`` (its reward function: ``boxed_reward_fn`` with
1/0 rewards), the static method ``MathEnv.check_correct``, and the kwargs its constructor ignored.

``gem.envs.math_env`` re-exports ``verify_fn``; :func:`math_env_compat` decorates
:class:`gem.envs.math_env.MathEnv` and ``MathVisualEnv`` (see :mod:`gem.compat.attach`).
"""

from __future__ import annotations

import functools
from typing import Any

from gem.compat.attach import decorator
from gem.grading.math_pool import boxed_reward_fn, default_grader
from gem.utils.parsing import extract_last_boxed_answer

verify_fn = functools.partial(boxed_reward_fn, fast=False, correct_reward=1, incorrect_reward=0)


class MathEnvNames:
    """The names :func:`math_env_compat` adds to ``MathEnv``."""

    @staticmethod
    def check_correct(model_answer: str, gt_answer: Any) -> bool:
        """Whether the response ``model_answer`` (its last ``\\boxed{}``) matches ``gt_answer``, one
        answer or a list of them (``False`` when ungraded)."""
        if not isinstance(gt_answer, (str, int, float, list, tuple)):
            raise ValueError(f"Unexpected answer type: {type(gt_answer).__name__}")
        pred = extract_last_boxed_answer(model_answer)
        return pred is not None and default_grader().grade(pred, gt_answer)


# The single-turn envs have no use for these; the original's took them (``**kwargs``) and ignored them.
IGNORED_KWARGS = ("verbose", "max_turns")

math_env_compat = decorator(MathEnvNames, ignored_kwargs=IGNORED_KWARGS)
