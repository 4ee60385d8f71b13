"""The original GEM's QaEnv names: the static method ``QaEnv.check_correct``, and the kwargs its
constructor ignored. :func:`qa_env_compat` decorates :class:`gem.envs.qa_env.QaEnv` (see
:mod:`gem.compat.attach`)."""

from __future__ import annotations

from typing import Any

from gem.compat.attach import decorator
from gem.compat.math_env import IGNORED_KWARGS
from gem.grading.qa import em_check


class QaEnvNames:
    """The names :func:`qa_env_compat` adds to ``QaEnv``."""

    @staticmethod
    def check_correct(model_answer: str, gt_answer: Any) -> bool:
        """Exact match of an extracted answer against one gold answer or a list."""
        if not isinstance(gt_answer, (str, int, float, list, tuple)):
            raise ValueError(f"Unexpected answer type: {type(gt_answer).__name__}")
        golds = gt_answer if isinstance(gt_answer, (list, tuple)) else [gt_answer]
        return em_check(model_answer, [str(g) for g in golds])


qa_env_compat = decorator(QaEnvNames, ignored_kwargs=IGNORED_KWARGS)
