"""Rule reasoning: judge a statement against facts and rules; the answer goes in ``\\boxed{}``.

``LogicEnv`` serves RuleTaker-style datasets (``logic:RuleTaker-d<N>``, from the hub or a local
file) with QA scoring. ``RuleReasoningEnv`` generates its problems offline
(:mod:`gem.data.rule_reasoning`): item ``i`` from ``Random(seed + i)``, answers True/False/Unknown
computed by forward chaining, proofs of exactly ``depth`` steps. Rewards: right 1, wrong 0, no
``\\boxed{}`` answer -0.1.
"""

from __future__ import annotations

from typing import Any, Optional

from gem.data.rule_reasoning import LABELS, MAX_DEPTH, make_item
from gem.envs.single_turn import EVAL_PARAM, SingleTurnEnv
from gem.envs.qa_env import QaEnv
from gem.params import Param, check_params
from gem.utils.parsing import extract_last_boxed_answer
from gem.grading.qa import em_check
from gem.grading.result import GradeResult, graded

LOGIC_PROMPT = "{question}\n\nPut your final answer within \\boxed{{}}."


class LogicEnv(QaEnv):
    """A RuleTaker-style dataset: the question holds the theory; the boxed answer is matched exactly."""

    family = "logic"
    PARAMS = QaEnv.PARAMS[:2]  # extract_boxed, eval (a logic answer is matched exactly)

    def __init__(
        self,
        dataset_name: Optional[str] = "",
        split: Optional[str] = None,
        dataset: Any = None,
        question_key: str = "question",
        answer_key: str = "answer",
        seed: int = 0,
        extract_boxed: bool = True,
        eval: bool = False,  # noqa: A002
        prompt_template: Optional[str] = LOGIC_PROMPT,
        load_from_cache_file: bool = True,
    ) -> None:
        super().__init__(
            dataset_name=dataset_name, split=split, dataset=dataset, question_key=question_key,
            answer_key=answer_key, seed=seed, extract_boxed=extract_boxed, eval=eval,
            prompt_template=prompt_template, load_from_cache_file=load_from_cache_file,
        )

    def sample_random_action(self) -> str:
        word = self.action_rng.choice(("True", "False"))
        return f"\\boxed{{{word}}}" if self.extract_boxed else f"<answer>{word}</answer>"


class RuleReasoningEnv(SingleTurnEnv):
    """Generated rule-reasoning problems of proof depth ``depth`` (0 to 5), fully offline.

    Args:
        depth: rule applications needed to prove the statement or its negation.
        size: how many distinct items ``reset`` chooses among (items ``0..size-1``).
        seed: the item set's seed (item ``i`` comes from ``Random(seed + i)``).
        eval: ``reset()`` without a seed walks the items in order.
    """

    instruction = "Put your final answer (True, False or Unknown) within \\boxed{}."
    _shared = ()

    PARAMS = (
        Param("depth", int, "rule applications needed to prove the statement or its negation",
              min=0, max=MAX_DEPTH),
        Param("size", int, "distinct problems reset() chooses among", min=1, client={"max": 100_000}),
        EVAL_PARAM,
    )

    def __init__(self, depth: int = 2, size: int = 10000, seed: int = 0, eval: bool = False) -> None:  # noqa: A002
        check_params(self, locals())
        super().__init__(eval=eval)
        self.depth, self.size, self.seed = depth, size, int(seed)

    def _num_items(self) -> int:
        return self.size

    def _get_item(self, idx: int) -> dict[str, Any]:
        return make_item(idx, self.depth, self.seed)

    def _question(self, item: dict[str, Any]) -> str:
        return item["question"]

    def _reset_info(self, item: dict[str, Any]) -> dict[str, Any]:
        return {**super()._reset_info(item), "depth": item["depth"]}

    def _extract(self, action: str) -> Optional[str]:
        return extract_last_boxed_answer(action)

    def _score(self, answer: str) -> GradeResult:
        return graded(em_check(answer, self.answer))

    def sample_random_action(self) -> str:
        return f"\\boxed{{{self.action_rng.choice(LABELS)}}}"
