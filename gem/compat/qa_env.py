"""The original GEM's static method ``QaEnv.check_correct``: :class:`QaEnvCompat`, a base of
:class:`gem.envs.qa_env.QaEnv`."""

from __future__ import annotations

from typing import Any

from gem.utils.qa_em import em_check


class QaEnvCompat:
    """``check_correct`` (see the module docstring)."""

    @staticmethod
    def check_correct(model_answer: str, gt_answer: Any) -> bool:
        """Exact match of an extracted answer against one gold answer or a list."""
        if not isinstance(gt_answer, (str, int, float, list, tuple)):
            raise ValueError(f"Unexpected answer type: {type(gt_answer).__name__}")
        golds = gt_answer if isinstance(gt_answer, (list, tuple)) else [gt_answer]
        return em_check(model_answer, [str(g) for g in golds])
