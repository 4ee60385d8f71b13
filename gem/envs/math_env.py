"""Math problems: the answer is the last ``\\boxed{}``, graded by :mod:`gem.grading.math_pool`.

``MathEnv`` serves one problem per episode from a dataset: a hub id (``axon-rl/GSM-8k``), a local
file (``dataset_name="/path/to/file.jsonl"``) or a bundled name (``arithmetic``). Rewards (see
:mod:`gem.envs.single_turn`): right 1, wrong 0, no complete ``\\boxed{}`` 0 (-0.1 with
``use_format_error_reward=True``), not graded (the grader ran out of time or could not run) 0 with
``info["grading"]`` saying why; ``info["correct"]`` says which. The grading runs in
:class:`~gem.grading.math_pool.MathGrader`'s worker processes, never in the caller's.

Without the ``math`` extra (math-verify), a dataset whose gold answers are all plain numbers (the
bundled ``arithmetic``) is graded exactly: an answer is right when it is a number of the gold's
value (``\\frac{1}{2}``, ``1/2``, ``0.5``); any other dataset raises
:class:`~gem.errors.DependencyNotInstalled` when the env is built, naming the extra.

:class:`~gem.envs.math_visual_env.MathVisualEnv` (problems with a picture; see
:mod:`gem.envs.math_visual_env`) is defined at the end of this module and importable from both.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from gem.compat.math_env import math_env_compat, verify_fn  # noqa: F401
from gem.envs.single_turn import EVAL_PARAM, SingleTurnEnv, rows_from
from gem.params import Param, check_params
from gem.grading.result import GradeResult
from gem.grading.math_pool import DEFAULT_TIMEOUT_S, default_grader, grade_math, require_math_verify
from gem.utils.parsing import extract_last_boxed_answer


@math_env_compat
class MathEnv(SingleTurnEnv):
    """A single-turn math task over a dataset.

    Args:
        dataset_name: a hub id, a local file path or a bundled name (see :func:`gem.data.load`).
        split: the split to use.
        dataset: rows (list of dicts) or a ``datasets.Dataset`` to use instead of ``dataset_name``.
        question_key, answer_key: the dataset's problem and answer columns. The answer may be one
            string/number or a list of acceptable answers.
        seed: kept for GEM compatibility (the episode order comes from the env's generator,
            seeded by ``reset(seed)`` or ``gem.make(id, seed=...)``).
        eval: ``reset()`` without a seed walks the dataset in order instead of shuffled epochs.
        grade_timeout: CPU seconds the grader may spend on one answer (waiting behind other
            answers does not count); past it the answer is reported ungraded, not wrong.
        use_mp: kept for GEM compatibility; grading always runs in the grader's worker processes.
        use_format_error_reward: pay -0.1 (a format error) instead of 0 for a reply without a
            complete ``\\boxed{}``.
    """

    family = "math"
    PARAMS = (
        Param("grade_timeout", float, "CPU seconds the grader may spend on one answer", min=0,
              min_exclusive=True, client={"min": 0.1, "max": 10.0}),
        EVAL_PARAM,
    )

    def __init__(
        self,
        dataset_name: Optional[str] = "",
        split: Optional[str] = None,
        dataset: Any = None,
        question_key: str = "problem",
        answer_key: str = "answer",
        seed: int = 0,
        eval: bool = False,  # noqa: A002
        grade_timeout: float = DEFAULT_TIMEOUT_S,
        use_mp: bool = True,
        use_format_error_reward: bool = False,
    ) -> None:
        check_params(self, locals())
        super().__init__(eval=eval, use_format_error_reward=use_format_error_reward)
        self.dataset_name = dataset_name
        self.split = split
        self.question_key, self.answer_key = question_key, answer_key
        self.seed = seed
        self.grade_timeout = float(grade_timeout)
        self.use_mp = use_mp
        self._rows = self._load_rows(dataset)
        # without math-verify only number answers can be graded: say so now, never in step
        require_math_verify(f"MathEnv over {self._source_name(dataset)}", map(self._gold, self._rows))

    def _source_name(self, dataset: Any) -> str:
        return repr(self.dataset_name) if dataset is None and self.dataset_name else "the given rows"

    def _load_rows(self, dataset: Any) -> list[dict[str, Any]]:
        return rows_from(dataset, self.dataset_name, self.split, "math", self.question_key, self.answer_key)

    def _question(self, item: dict[str, Any]) -> str:
        return str(item["problem"])

    def _extract(self, action: str) -> Optional[str]:
        return extract_last_boxed_answer(action)

    def _score(self, answer: str) -> GradeResult:
        result = grade_math(answer, self.answer, timeout=self.grade_timeout)
        return dataclasses.replace(result, details={})  # which path decided is not part of info

    def sample_random_action(self) -> str:
        return f"\\boxed{{{self.action_rng.randint(0, 100)}}}"


# Defined here, next to its base class, so that neither module imports the other;
# gem.envs.math_visual_env is its documented home and names the same class.
@math_env_compat
class MathVisualEnv(MathEnv):
    """A math task with a picture: ``info["images"]`` holds the item's image(s) on reset.

    Args:
        image_key: the dataset's image column.
        the others: as :class:`~gem.envs.math_env.MathEnv`.
    """

    def __init__(
        self,
        dataset_name: Optional[str] = "",
        split: Optional[str] = None,
        dataset: Any = None,
        image_key: str = "images",
        question_key: str = "problem",
        answer_key: str = "answer",
        seed: int = 0,
        use_mp: bool = True,
        eval: bool = False,  # noqa: A002
        grade_timeout: float = DEFAULT_TIMEOUT_S,
        use_format_error_reward: bool = False,
    ) -> None:
        self.image_key = image_key
        super().__init__(
            dataset_name, split, dataset, question_key, answer_key, seed, eval=eval, grade_timeout=grade_timeout,
            use_mp=use_mp, use_format_error_reward=use_format_error_reward,
        )

    def _load_rows(self, dataset: Any) -> list[dict[str, Any]]:
        # the image column travels with the problem and answer, as "images" (a missing one is
        # a ValueError listing the dataset's columns)
        return rows_from(dataset, self.dataset_name, self.split, "math", self.question_key, self.answer_key,
                         extra_keys={"images": self.image_key})

    def _reset_info(self, item: dict[str, Any]) -> dict[str, Any]:
        return {**super()._reset_info(item), "images": item.get("images")}
