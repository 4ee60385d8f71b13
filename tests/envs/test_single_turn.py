"""SingleTurnEnv pays from the GradeResult its ``_score`` returns; a ``_score`` written for the former
``(reward, correct, extra info)`` tuple keeps working, converted."""

from __future__ import annotations

from typing import Any, Callable, Optional

import pytest

from gem.envs.single_turn import SingleTurnEnv
from gem.errors import InfrastructureError
from gem.grading.result import GradeResult, graded, ungraded
from gem.utils.parsing import extract_last_boxed_answer


class WordEnv(SingleTurnEnv):
    """Say the word: a user's single-turn env whose grading is ``scorer(env, answer)``."""

    def __init__(self, scorer: Callable[["WordEnv", str], Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._rows = [{"question": "Say cat.", "answer": "cat"}]
        self.scorer = scorer

    def _question(self, item: dict[str, Any]) -> str:
        return item["question"]

    def _extract(self, action: str) -> Optional[str]:
        return extract_last_boxed_answer(action)

    def _score(self, answer: str) -> Any:
        return self.scorer(self, answer)


def play(env: SingleTurnEnv, action: str) -> tuple[str, float, dict[str, Any]]:
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert terminated and truncated
    return obs, reward, info


def exact(env: WordEnv, answer: str) -> GradeResult:
    return graded(answer == env.answer, details={"length": len(answer)})


def test_a_grade_result_is_paid_and_its_details_go_into_info():
    env = WordEnv(exact)
    env.success_reward, env.fail_reward = 2.0, -1.0
    obs, reward, info = play(env, "\\boxed{cat}")
    assert (obs, reward) == ("Correct.", 2.0)
    assert info == {"correct": True, "formatted": True, "grading": "ok", "parsed_action": "cat", "length": 3}
    obs, reward, info = play(env, "\\boxed{dog}")
    assert (obs, reward, info["correct"], info["length"]) == ("Incorrect: your answer was 'dog'.", -1.0, False, 3)
    obs, reward, info = play(env, "cat")  # no answer: the format level (fail_reward by default), never graded
    assert (reward, info["formatted"], info["correct"]) == (-1.0, False, False) and "length" not in info


def test_an_ungraded_result_pays_the_ungraded_level_and_is_reported(monkeypatch):
    env = WordEnv(lambda env, answer: ungraded("timeout", "oracle", "no reply in 2 s", {"tries": 3}))
    with pytest.raises(InfrastructureError, match="grader:oracle failed"):
        play(env, "\\boxed{cat}")  # strict mode (GEM's own tests): the failure raises
    monkeypatch.delenv("GEM_STRICT_INFRA")
    obs, reward, info = play(env, "\\boxed{cat}")
    assert reward == env.ungraded_reward == 0.0 and info["correct"] is None
    assert (info["grading"], info["grading_error"], info["tries"]) == ("timeout", {"component": "oracle", "reason": "no reply in 2 s"}, 3)
    assert info["infra_error"] == {"component": "grader:oracle", "type": "InfrastructureError", "message": "timeout: no reply in 2 s"}
    assert obs == "Your answer could not be graded (oracle: no reply in 2 s); it earns 0."


def test_a_subclass_pays_partial_credit_by_overriding_reward():
    class HalfWord(WordEnv):
        def _reward(self, result: GradeResult) -> float:
            return self.success_reward * result.score if result.graded else super()._reward(result)

    env = HalfWord(lambda env, answer: graded(answer == "cat", score=len(set(answer) & set("cat")) / 3))
    assert play(env, "\\boxed{cart}")[1] == 1.0 and play(env, "\\boxed{at}")[1] == pytest.approx(2 / 3)
    assert play(env, "\\boxed{zzz}")[1] == 0.0


@pytest.mark.parametrize("scored", [None, 1.0, (1.0, True), "correct"])
def test_anything_else_from_score_is_a_grader_error_never_a_reward(scored, monkeypatch):
    monkeypatch.delenv("GEM_STRICT_INFRA")
    obs, reward, info = play(WordEnv(lambda env, answer: scored), "\\boxed{cat}")
    assert (reward, info["correct"], info["grading"]) == (0.0, None, "error")
    assert info["grading_error"]["component"] == "grader" and "not a GradeResult" in info["grading_error"]["reason"]
    assert info["infra_error"]["type"] == "TypeError"


# ------------------------------------------------------------------ the former tuple
def former(env: WordEnv, answer: str) -> tuple[float, Optional[bool], dict[str, Any]]:
    """A ``_score`` as written for the former contract: ``(reward, correct, extra info)``."""
    if answer == "slow":
        return env.ungraded_reward, None, {"grading": "timeout", "grading_error": {"component": "oracle", "reason": "slow"}}
    correct = answer == env.answer
    return (0.75 if correct else 0.0), correct, {"length": len(answer)}


def test_a_former_tuple_still_pays_its_reward_with_a_deprecation_warning():
    env = WordEnv(former)
    with pytest.warns(DeprecationWarning, match=r"WordEnv\._score returned a \(reward, correct, info\) tuple; return a gem\.grading\.GradeResult"):
        obs, reward, info = play(env, "\\boxed{cat}")
    assert (obs, reward) == ("Correct.", 0.75)  # the tuple's own reward, not success_reward
    assert info == {"correct": True, "formatted": True, "grading": "ok", "parsed_action": "cat", "length": 3}
    with pytest.warns(DeprecationWarning):
        obs, reward, info = play(env, "\\boxed{dog}")
    assert (reward, info["correct"], info["length"]) == (0.0, False, 3)


def test_a_former_tuple_without_a_verdict_is_ungraded(monkeypatch):
    monkeypatch.delenv("GEM_STRICT_INFRA")
    with pytest.warns(DeprecationWarning):
        obs, reward, info = play(WordEnv(former), "\\boxed{slow}")
    assert (reward, info["correct"], info["grading"]) == (0.0, None, "timeout")
    assert info["grading_error"] == {"component": "oracle", "reason": "slow"}
    assert info["infra_error"]["component"] == "grader:oracle"
    with pytest.warns(DeprecationWarning):  # None with no status given: an error, never "ok"
        _, _, info = play(WordEnv(lambda env, answer: (0.0, None, {})), "\\boxed{cat}")
    assert (info["grading"], info["grading_error"]) == ("error", {"component": "grader", "reason": "the grader gave no verdict"})


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "lots"])
def test_a_former_tuple_with_a_reward_that_is_not_a_finite_number_pays_nothing(bad, monkeypatch):
    monkeypatch.delenv("GEM_STRICT_INFRA")
    with pytest.warns(DeprecationWarning):
        obs, reward, info = play(WordEnv(lambda env, answer: (bad, True, {})), "\\boxed{cat}")
    assert (reward, info["correct"], info["grading"]) == (0.0, None, "error")
    assert info["infra_error"]["type"] == "ValueError"


def test_details_never_overwrite_the_verdict():
    env = WordEnv(lambda env, answer: graded(False, details={"correct": True, "parsed_action": "cat", "note": 1}))
    obs, reward, info = play(env, "\\boxed{dog}")
    assert (reward, info["correct"], info["parsed_action"], info["note"]) == (0.0, False, "dog", 1)
