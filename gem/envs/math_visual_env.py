"""Math problems with a picture.

``MathVisualEnv`` is :class:`~gem.envs.math_env.MathEnv` over a dataset with an image column
(``axon-rl/geometry3k`` for ``math:Geometry3K``): the observation is the problem text and
``info["images"]`` holds the item's image(s) as the dataset stores them (``PIL`` images from the
hub, paths or encoded strings from a local file). Grading and rewards are MathEnv's. The hub data
needs network on first use; offline, construction raises
:class:`~gem.errors.ResourceUnavailable` saying how to point ``dataset_name`` at a local copy.
"""

from __future__ import annotations

from typing import Any, Optional

from gem.compat.math_env import math_env_compat
from gem.envs.single_turn import rows_from
from gem.envs.math_env import MathEnv
from gem.grading.math_pool import DEFAULT_TIMEOUT_S


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
