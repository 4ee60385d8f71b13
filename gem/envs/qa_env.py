"""Question answering: exact match (SQuAD normalization) of the answer in ``<answer>`` tags or ``\\boxed{}``.

``QaEnv`` serves one question per episode from a dataset (hub id, local file or bundled name). The
answer is the last ``<answer>...</answer>`` (``extract_boxed=True``: the last
``\\boxed{}`` instead); a reply with only a box and no tags has no answer. Rewards: exact match 1
(or the token F1 with ``reward="f1"``), otherwise 0; no answer found 0 (-0.1, a format error, with
``use_format_error_reward=True``). ``info`` carries ``correct`` (exact match) and ``f1``. The
search-QA env builds on this class and its scoring. ``apply_prompt`` wraps a row's question in
the prompt.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from gem.compat.qa_env import qa_env_compat
from gem.envs.single_turn import EVAL_PARAM, SingleTurnEnv, rows_from
from gem.params import Param, check_params
from gem.grading.qa import em_check, extract_answer, grade_qa
from gem.grading.result import GradeResult

QA_PROMPT = (
    "Answer the question. Think it through first if you like, then give only the final answer "
    "inside <answer> and </answer> tags, for example <answer>Paris</answer>.\n\nQuestion: {question}\n"
)
REWARDS = ("em", "f1")



def apply_prompt(example: dict[str, Any], question_key: str = "question") -> dict[str, Any]:
    """Wrap ``example[question_key]`` in :data:`QA_PROMPT` (in place; returns the example), for
    every row with ``dataset.map(apply_prompt)``."""
    example[question_key] = QA_PROMPT.format(question=example[question_key])
    return example


# Random answers for sample_random_action: well-formed, almost never right.
_RANDOM_WORDS = ("Paris", "1947", "blue whale", "Ada Lovelace", "yes", "no", "the Nile", "42")


@qa_env_compat
class QaEnv(SingleTurnEnv):
    """A single-turn QA task over a dataset.

    Args:
        dataset_name, split, dataset, question_key, answer_key, seed, eval: as in
            :class:`~gem.envs.math_env.MathEnv` (answers may be a string or a list of strings).
        extract_boxed: read the answer from the last ``\\boxed{}`` (GEM's switch); by default
            only ``<answer>`` tags are read (``<answer>\\boxed{x}</answer>`` counts as ``x``).
        reward: ``"em"`` (1 for an exact match, else 0) or ``"f1"`` (the token F1).
        prompt_template: wraps the question; ``{question}`` is replaced (``None``: the question alone).
        load_from_cache_file: accepted for GEM compatibility (datasets' cache is always used).
        use_format_error_reward: pay -0.1 (a format error) instead of 0 when no answer is found.
    """

    family = "qa"
    PARAMS = (
        Param("extract_boxed", bool, "read the answer from \\boxed{} instead of <answer> tags"),
        EVAL_PARAM,
        Param("reward", str, "em: exact match after normalising; f1: token overlap", choices=REWARDS),
    )

    def __init__(
        self,
        dataset_name: Optional[str] = "",
        split: Optional[str] = None,
        dataset: Any = None,
        question_key: str = "question",
        answer_key: str = "answer",
        seed: int = 0,
        extract_boxed: bool = False,
        eval: bool = False,  # noqa: A002
        reward: str = "em",
        prompt_template: Optional[str] = QA_PROMPT,
        load_from_cache_file: bool = True,
        use_format_error_reward: bool = False,
    ) -> None:
        check_params(self, locals())
        super().__init__(eval=eval, use_format_error_reward=use_format_error_reward)
        if prompt_template is not None and "{question}" not in prompt_template:
            raise ValueError("prompt_template must contain '{question}'.")
        self.dataset_name, self.split = dataset_name, split
        self.question_key, self.answer_key = question_key, answer_key
        self.seed = seed
        self.extract_boxed = bool(extract_boxed)
        self.reward = reward
        self.prompt_template = prompt_template
        self.load_from_cache_file = load_from_cache_file
        if self.extract_boxed:
            self.instruction = "Put your final answer within \\boxed{}."
            self.answer_format = "\\boxed{...}"
        else:
            self.instruction = "Give your final answer inside <answer> and </answer> tags."
            self.answer_format = "<answer>...</answer>"
        self._rows = self._load_rows(dataset)

    def _load_rows(self, dataset: Any) -> list[dict[str, Any]]:
        return rows_from(dataset, self.dataset_name, self.split, "qa", self.question_key, self.answer_key)

    def _question(self, item: dict[str, Any]) -> str:
        question = str(item["question"])
        return question if self.prompt_template is None else self.prompt_template.format(question=question)

    def _extract(self, action: str) -> Optional[str]:
        return extract_answer(action, "boxed" if self.extract_boxed else "tag")

    def _score(self, answer: str) -> GradeResult:
        golds = self.answer if isinstance(self.answer, (list, tuple)) else [self.answer]
        result = grade_qa(answer, golds, metric=self.reward)
        return dataclasses.replace(result, details={"f1": result.details["f1"]})  # info has the F1

    def _reward(self, result: GradeResult) -> float:
        """``reward="f1"`` pays the token F1 (``success_reward * score``); ``"em"`` pays 1 or 0."""
        if result.graded and self.reward == "f1":
            return self.success_reward * result.score
        return super()._reward(result)

    def sample_random_action(self) -> str:
        word = self.action_rng.choice(_RANDOM_WORDS)
        return f"\\boxed{{{word}}}" if self.extract_boxed else f"<answer>{word}</answer>"
