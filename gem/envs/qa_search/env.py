"""Search QA over a fictional world: the answer is only in the generated corpus.

A single-turn QA env built on :class:`gem.envs.qa_env.QaEnv` (same answer extraction, scoring,
rewards and episode order): ``reset`` asks a question about invented people, towns and companies
(:mod:`gem.envs.qa_search.world`). Wrapped with ``ToolEnvWrapper(env, tools=[SearchTool(...)])``
over a retrieval server that indexes ``env.write_corpus(path)``, the agent searches before it
answers; multi-hop questions need two or three documents. The env itself needs no server.

Rewards (QaEnv's): exact match 1 (or the token F1 with ``reward="f1"``); wrong 0; no answer found
-0.1 (format error). Every step ends the episode; ``info`` has ``correct`` and ``f1``.
"""

from __future__ import annotations

import random
import re
from typing import Any, Optional, Sequence, Union

from gem.core import Agent
from gem.envs.single_turn import EVAL_PARAM
from gem.envs.qa_env import QaEnv
from gem.envs.qa_search.world import World, get_world, parse_question, read_fact
from gem.params import Param, check_params

PROMPT = (
    "Answer the question below. It is about a fictional world: the facts are not common knowledge and "
    "can only be found by searching its documents. Some questions need several searches, one fact "
    "leading to the next.\n"
    "Reason inside <think> ... </think>, then give only the final answer as <answer> your answer </answer>.\n\n"
    "Question: {question}\n"
)
VALID_HOPS = (1, 2, 3)
QUESTION_SEED_OFFSET = 1_000_000  # question i comes from Random(world_seed + offset + i)


class FictionalSearchQAEnv(QaEnv):
    """Questions about a generated world, answered with ``<answer>...</answer>``.

    Args:
        world_seed: the seed of the world (and so of the corpus) and of its questions.
        num_people, num_towns, num_companies: the world's size (documents = their sum).
        hops: which question lengths to ask (1, 2 and/or 3 documents); an int or a list.
        num_questions: the size of the question set; question ``i`` is drawn from
            ``Random(world_seed + QUESTION_SEED_OFFSET + i)``, so any one is reproducible alone.
        reward, eval, prompt_template: as in :class:`~gem.envs.qa_env.QaEnv`.
    """

    _shared = ("_rows", "world")
    PARAMS = (
        Param("world_seed", int, "the seed the fictional world is generated from",
              client={"min": 0, "max": 2**63 - 1}),
        Param("num_people", int, "people in the world", min=2, client={"max": 1000}),
        Param("num_towns", int, "towns in the world", min=1, client={"max": 200}),
        Param("num_companies", int, "companies in the world", min=1, client={"max": 300}),
        Param("hops", tuple, "question lengths to ask: documents a question chains (an int or a list)",
              min=min(VALID_HOPS), max=max(VALID_HOPS), length=(1, len(VALID_HOPS))),
        Param("num_questions", int, "questions in the set", min=1, client={"max": 5000}),
        QaEnv.PARAMS[2],  # reward
        EVAL_PARAM,
    )

    def __init__(
        self,
        world_seed: int = 0,
        num_people: int = 200,
        num_towns: int = 40,
        num_companies: int = 60,
        hops: Union[int, Sequence[int]] = (1, 2, 3),
        num_questions: int = 1000,
        reward: str = "em",
        eval: bool = False,  # noqa: A002  (QaEnv's name)
        prompt_template: Optional[str] = PROMPT,
    ) -> None:
        hop_list = (hops,) if isinstance(hops, int) else tuple(hops) if isinstance(hops, (list, tuple)) else ()
        if not hop_list or any(h not in VALID_HOPS for h in hop_list):
            raise ValueError(f"hops must be chosen from {VALID_HOPS}, got {hops!r}.")
        check_params(self, locals())
        self.world: World = get_world(world_seed, num_people, num_towns, num_companies)
        self.world_seed, self.hops, self.num_questions = world_seed, hop_list, num_questions
        super().__init__(dataset_name="fictional-world", seed=world_seed, reward=reward, eval=eval,
                         prompt_template=prompt_template)

    def _load_rows(self, dataset: Any) -> list[dict[str, Any]]:
        base = self.world_seed + QUESTION_SEED_OFFSET
        return [self.world.question(random.Random(base + i), self.hops) for i in range(self.num_questions)]

    def _reset_info(self, item: dict[str, Any]) -> dict[str, Any]:
        return {**super()._reset_info(item), "hops": item["hops"], "kind": item["kind"]}

    def sample_random_action(self) -> str:
        name = self.action_rng.choice(self.world.people).name
        return f"<think>A guess.</think><answer>{name}</answer>"

    def write_corpus(self, path: Any) -> Any:
        """Write this env's corpus (JSONL of id/title/text) for the retrieval server."""
        return self.world.write_corpus(path)

    def documents(self) -> list[dict[str, str]]:
        return self.world.documents()


_DOC = re.compile(r"Doc \d+\(Title: (.*?)\) (.*)")


class FictionalSearchAgent(Agent):
    """A scripted agent that answers by searching: it reads the question's template, searches each
    entity on the chain with ``<search>``, reads the fact from the returned document, and answers.

    It solves every question when the search returns the entity's own document among its results
    (BM25 over the generated corpus does); otherwise it answers what it could not find as
    "unknown".
    """

    def __init__(self) -> None:
        self.plan: list[str] = []
        self.current = ""
        self.searched = False  # a search is out, so the next observation holds its results

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        question = observation.rsplit("Question:", 1)[-1]
        parsed = parse_question(question)
        if parsed is None:
            raise ValueError("FictionalSearchAgent: the observation holds no question it knows.")
        _, self.current, relations = parsed
        self.plan = list(relations)
        self.searched = False

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        if self.searched and self.plan:
            self.searched = False
            value = self._read(observation, self.current, self.plan[0])
            if value is None:
                return "<answer>unknown</answer>"
            self.plan.pop(0)
            self.current = value
        if not self.plan:
            return f"<think>I found it.</think> <answer>{self.current}</answer>"
        self.searched = True
        return f"<think>I need the {self.plan[0].replace('_', ' ')} of {self.current}.</think> <search>{self.current}</search>"

    @staticmethod
    def _read(observation: str, title: str, relation: str) -> Optional[str]:
        block = observation.rsplit("<information>", 1)[-1].split("</information>", 1)[0]
        for line in block.splitlines():
            match = _DOC.match(line.strip())
            if match and match.group(1) == title:
                return read_fact(match.group(2), relation)
        return None
