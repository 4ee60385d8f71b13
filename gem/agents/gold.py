"""The ``gold`` agent: it reads the answer key. For pipeline smoke tests only, never a baseline.

A single-turn task env (math, code, logic, ReasoningGym, QA) keeps the reference answer of the
current problem after ``reset`` (``env.answer``; the bundled code set keeps a reference program,
``env.reference_solution()``). :class:`GoldAgent` replies with that answer in the env's own answer
format (``\\boxed{...}``, ``<answer>...</answer>``, a ```` ```python ``` ```` block), so an episode
runs the whole pipeline (reset, the reply, extraction, grading, recording, the summary) and ends
in a success without a model. Its score says nothing about any model: it cheats by construction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from gem.agents.base import Agent

if TYPE_CHECKING:
    from gem.core import Env

# The answer formats GoldAgent can fill: the env's ``answer_format`` -> the reply around the answer.
FORMATS = {"\\boxed{...}": ("\\boxed{", "}"), "<answer>...</answer>": ("<answer>", "</answer>")}


def cannot_play(env: Any) -> Optional[str]:
    """Why :class:`GoldAgent` cannot play ``env`` (``None`` when it can): it needs a single-turn
    task env, which keeps an answer key."""
    from gem.envs.single_turn import SingleTurnEnv

    inner = getattr(env, "unwrapped", env)
    if not isinstance(inner, SingleTurnEnv):
        return f"{getattr(env, 'env_id', None) or type(inner).__name__} keeps no answer key (not a single-turn task)"
    return None


def gold_reply(env: Any) -> str:
    """The reply that gives ``env``'s reference answer for the current episode, in its format.

    Raises ``ValueError`` when the env keeps no answer for this problem or asks for a format the
    agent cannot fill.
    """
    inner = getattr(env, "unwrapped", env)
    solution = getattr(inner, "reference_solution", None)
    if callable(solution):
        program = solution()
        if program is None:
            raise ValueError(
                f"{inner.env_id or type(inner).__name__} has no reference program for this problem "
                "(only the bundled code set keeps one)."
            )
        return str(program)
    answer = getattr(inner, "answer", None)
    if isinstance(answer, (list, tuple)):
        answer = answer[0] if answer else None
    if answer is None:
        raise ValueError(f"{inner.env_id or type(inner).__name__} keeps no answer for this problem.")
    fmt = FORMATS.get(getattr(inner, "answer_format", ""))
    if fmt is None:
        raise ValueError(
            f"the gold agent cannot write {inner.answer_format!r}; it writes {', '.join(FORMATS)}."
        )
    return f"{fmt[0]}{answer}{fmt[1]}"


class GoldAgent(Agent):
    """Answers with the env's reference answer (it reads the answer key).

    For pipeline smoke tests only, never a baseline: its successes show that the pipeline runs and
    grades, not that anything can solve the task.
    """

    def __init__(self, env: "Env") -> None:
        self.env = env

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        return gold_reply(self.env)
