"""The single-turn env shared by math, QA, logic and ReasoningGym: one item, one answer, done.

``reset`` picks an item (``reset(seed)`` draws its index from the env's generator; ``reset()`` walks
a shuffled epoch, or the dataset in order with ``eval=True``; ``reset(idx=i)`` takes item ``i``).
``step`` extracts the answer from the action and scores it. The one step ends the episode with
``terminated=True, truncated=True`` (GEM's single-step flags), and the rewards are:

* right: 1 (``success_reward``); wrong: 0;
* no answer found (no ``\\boxed{}``, no ``<answer>`` tags, no code block): 0, or -0.1 (a format
  error) with ``use_format_error_reward=True``; ``info["formatted"]`` is ``False``;
* not graded (the grader could not finish: time limit, full queue, dead worker, sandbox failure):
  ``ungraded_reward`` (0.0, the same as wrong, so it cannot be farmed), with ``info["correct"] =
  None``, ``info["grading"] = "timeout"`` or ``"error"`` and ``info["grading_error"] =
  {"component": ..., "reason": ...}``; the failure is also reported through
  :func:`gem.errors.report_infra_failure` (``info["infra_error"]``, or an ``InfrastructureError``
  with ``GEM_STRICT_INFRA=1``), as is a grader or scorer that raised. Graded steps have
  ``info["grading"] = "ok"``. ``gem eval`` counts ungraded episodes in its summary, so they can be
  told apart from wrong answers.

Subclasses say how to extract (``_extract``) and how to grade (``_score``, which returns a
:class:`~gem.grading.result.GradeResult`); ``step`` pays from that result (``_reward``) and puts
its status and ``details`` in ``info``. Dataset-backed ones get their rows from
:func:`gem.data.load`, generated ones override ``_num_items``/``_get_item``.
"""

from __future__ import annotations

import copy
import logging
import math
import warnings
from typing import Any, Optional, Sequence

from gem.core import Env, StepResult
from gem.errors import DependencyNotInstalled, InfrastructureError, report_infra_failure
from gem.grading.result import GradeResult, graded, ungraded
from gem.params import Param
from gem.utils import constants
from gem.utils.text import preview

logger = logging.getLogger(__name__)

NO_ANSWER_FORMAT = "No answer found in your reply. {how} Your reply began: {reply!r}"
UNGRADED_FORMAT = "Your answer could not be graded ({component}: {reason}); it earns {reward:g}."
EVAL_PARAM = Param("eval", bool, "reset() without a seed walks the problems in order")
UNGRADED_REWARD = constants.FAIL_REWARD  # never more than a wrong answer: ungraded cannot be farmed


class SingleTurnEnv(Env):
    """Base of the single-turn task envs. ``instruction`` is put in ``info["suffix"]``."""

    instruction: str = "Put your final answer within \\boxed{}."
    answer_format: str = "\\boxed{...}"
    # Attributes shared (not copied) by spawn(same_state=True) and get_state(): big and read-only.
    _shared: tuple[str, ...] = ("_rows",)
    use_format_error_reward: bool = False
    max_episode_steps = 1  # one answer ends the episode

    @property
    def ungraded_reward(self) -> float:
        """What an answer that could not be graded pays: the same as a wrong one (``fail_reward``,
        also when a spec sets it), so a policy gains nothing by making the grader fail."""
        return self.fail_reward

    def __init__(self, eval: bool = False, use_format_error_reward: Optional[bool] = None) -> None:  # noqa: A002
        self.eval = bool(eval)
        if use_format_error_reward is not None:
            self.use_format_error_reward = bool(use_format_error_reward)
        self._order: list[int] = []
        self._pos = 0
        self.epoch = 0
        self.idx: Optional[int] = None
        self.item: dict[str, Any] = {}
        self.first_obs = ""
        self.answer: Any = None

    # ------------------------------------------------------------ subclass hooks
    def _num_items(self) -> int:
        return len(self._rows)  # type: ignore[attr-defined]

    def _get_item(self, idx: int) -> dict[str, Any]:
        return self._rows[idx]  # type: ignore[attr-defined]

    def _question(self, item: dict[str, Any]) -> str:
        raise NotImplementedError

    def _gold(self, item: dict[str, Any]) -> Any:
        return item.get("answer")

    def _extract(self, action: str) -> Optional[str]:
        raise NotImplementedError

    def _score(self, answer: str) -> GradeResult:
        """Grade an extracted answer: a :class:`~gem.grading.result.GradeResult` (``graded(correct,
        score=..., details=...)``, or ``ungraded("timeout"|"error", component, reason)`` when the
        answer could not be graded). ``step`` pays it with :meth:`_reward` and puts ``details`` in
        ``info``. The former return value, a ``(reward, correct, extra info)`` tuple, still works:
        it is converted (with a ``DeprecationWarning``) and its reward paid as it is."""
        raise NotImplementedError

    def _reward(self, result: GradeResult) -> float:
        """What a graded answer earns: ``success_reward`` when correct, ``fail_reward`` when wrong,
        ``ungraded_reward`` when it could not be graded. Envs that pay partial credit (QA's F1,
        code's share of tests, ReasoningGym's scores) pay ``success_reward * result.score``."""
        if not result.graded:
            return self.ungraded_reward
        return self.success_reward if result.correct else self.fail_reward

    def _grade(self, answer: str) -> tuple[GradeResult, float]:
        """``_score``'s result and the reward it earns (a former tuple converted)."""
        scored = self._score(answer)
        if isinstance(scored, GradeResult):
            return scored, self._reward(scored)
        if isinstance(scored, tuple) and len(scored) == 3:
            return _from_tuple(type(self), scored)
        raise TypeError(f"{type(self).__name__}._score returned {type(scored).__name__}, not a GradeResult.")

    def _reset_info(self, item: dict[str, Any]) -> dict[str, Any]:
        return {"suffix": self.instruction, "index": self.idx}

    # --------------------------------------------------------------------- API
    def reset(
        self, seed: Optional[int] = None, idx: Optional[int] = None, **kwargs: Any
    ) -> tuple[str, dict[str, Any]]:
        """Start an episode on one item: ``idx`` if given, else one drawn from the env's generator."""
        super().reset(seed)
        n = self._num_items()
        if idx is not None:
            if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < n:
                raise ValueError(f"idx must be an int in [0, {n}), got {idx!r}.")
        elif seed is not None:
            idx = self.rng.randrange(n)
        else:
            idx = self._next_in_epoch(n)
        self.idx = idx
        self.item = self._get_item(idx)
        self.first_obs = self._question(self.item)
        self.answer = self._gold(self.item)
        return self.first_obs, self._reset_info(self.item)

    def _next_in_epoch(self, n: int) -> int:
        if self._pos >= len(self._order):
            if self._order:
                self.epoch += 1
            self._order = list(range(n))
            if not self.eval:
                self.rng.shuffle(self._order)
            self._pos = 0
        self._pos += 1
        return self._order[self._pos - 1]

    def _step(self, action: str) -> StepResult:
        text = action if isinstance(action, str) else str(action)
        answer = self._extract(text)
        if answer is None or not answer.strip():
            how = f"Put your final answer in {self.answer_format}."
            reward = self.format_error_reward
            info = {"correct": False, "formatted": False, "grading": "ok", "parsed_action": None,
                    "suffix": self.instruction}
            return self._result(NO_ANSWER_FORMAT.format(how=how, reply=preview(text, 80)), reward,
                                terminated=True, truncated=True, info=info)
        try:
            result, reward = self._grade(answer)
        except (InfrastructureError, DependencyNotInstalled):
            raise  # strict mode: a grader's failure raised where it was reported; or a setup to fix
        except Exception as exc:  # a grader that crashed: its failure, never the agent's wrong answer
            crash: dict[str, Any] = {}
            report_infra_failure(crash, "grader", exc)
            result = ungraded("error", "grader", f"{type(exc).__name__}: {exc}", crash)
            reward = self.ungraded_reward
        info = {"correct": result.correct, "formatted": True, "grading": "ok", "parsed_action": preview(answer, 1000)}
        details = {k: v for k, v in result.details.items() if k not in info}  # details never overwrite the verdict
        reported = details.pop("infra_error", None)  # a grader that reported its own failure
        info.update(details, **result.info())
        if reported is not None:
            info["infra_error"] = reported
        if not result.graded:
            if reported is None:  # a timeout, a full queue, a dead worker, a sandbox failure
                report_infra_failure(info, f"grader:{result.component}", f"{result.status}: {result.reason}")
            obs = UNGRADED_FORMAT.format(component=result.component, reason=result.reason, reward=reward)
        else:
            obs = "Correct." if result.correct else f"Incorrect: your answer was {preview(answer, 80)!r}."
        return self._result(obs, reward, terminated=True, truncated=True, info=info)

    @property  # type: ignore[override]
    def deterministic(self) -> bool:
        """A dataset of one item plays that item from every seed."""
        return self._num_items() <= 1

    @property  # type: ignore[override]
    def format_error_reward(self) -> float:
        """What a reply without an answer earns: ``fail_reward`` (0), or -0.1 with
        ``use_format_error_reward=True``; a value set on the instance (``gem.make(id,
        format_error_reward=...)``) wins over both."""
        if "_format_error_reward" in self.__dict__:
            return self.__dict__["_format_error_reward"]
        return constants.FORMAT_ERROR_REWARD if self.use_format_error_reward else self.fail_reward

    @format_error_reward.setter
    def format_error_reward(self, value: float) -> None:
        self.__dict__["_format_error_reward"] = float(value)

    # ------------------------------------------------------- copies and state
    def __deepcopy__(self, memo: dict[int, Any]) -> "SingleTurnEnv":
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for key, value in self.__dict__.items():
            new.__dict__[key] = value if key in self._shared else copy.deepcopy(value, memo)
        return new

    def get_state(self) -> dict[str, Any]:
        return {k: copy.deepcopy(v) for k, v in self.__dict__.items() if k not in self._shared}

    def set_state(self, state: dict[str, Any]) -> None:
        self.__dict__.update({k: copy.deepcopy(v) for k, v in state.items() if k not in self._shared})


def _from_tuple(cls: type, scored: tuple[Any, Any, Any]) -> tuple[GradeResult, float]:
    """A ``(reward, correct, extra info)`` tuple, ``_score``'s former return value, as a
    :class:`GradeResult` and the reward it claims (which must be a finite number). ``correct is
    None`` is ungraded, with the status and ``grading_error`` of ``extra``; the rest of ``extra``
    becomes ``details``."""
    warnings.warn(
        f"{cls.__name__}._score returned a (reward, correct, info) tuple; return a gem.grading.GradeResult "
        "(gem.grading.result.graded(correct, score=..., details=...) or ungraded(status, component, reason)) "
        "and override _reward to pay other than success_reward/fail_reward.",
        DeprecationWarning,
        stacklevel=4,
    )
    reward, correct, extra = scored
    reward = float(reward)
    if not math.isfinite(reward):
        raise ValueError(f"{cls.__name__}._score returned the reward {reward!r}, not a finite number.")
    details = dict(extra or {})
    status = details.pop("grading", "ok")
    failure = details.pop("grading_error", None) or {}
    if correct is None:
        result = ungraded(status if status in ("timeout", "error") else "error",
                          str(failure.get("component") or "grader"),
                          str(failure.get("reason") or "the grader gave no verdict"), details)
    else:
        result = graded(bool(correct), details=details)
    return result, reward


def rows_from(
    dataset: Any,
    dataset_name: Optional[str],
    split: Optional[str],
    family: str,
    question_key: str,
    answer_key: str,
    extra_keys: Optional[dict[str, str]] = None,
) -> list[dict[str, Any]]:
    """The rows of an env: from ``dataset`` (rows, a ``datasets.Dataset``/``DatasetDict``) or
    ``dataset_name`` (anything :func:`gem.data.load` takes), renamed to the family's fields."""
    from gem import data

    if dataset is None:
        if not dataset_name:
            raise ValueError("Give dataset_name= (a hub id, a local file or a bundled name) or dataset=.")
        rows = data.load(
            dataset_name, split=split, family=family, question_key=question_key,
            answer_key=answer_key, keys=extra_keys,
        )
    else:
        if hasattr(dataset, "keys") and hasattr(dataset, "values") and not isinstance(dataset, dict):
            splits = dict(dataset)  # a DatasetDict
            if split is None and len(splits) == 1:
                dataset = next(iter(splits.values()))
            elif split in splits:
                dataset = splits[split]
            else:
                raise ValueError(f"dataset has splits {', '.join(splits)}; choose one with split=.")
        raw: Sequence[dict[str, Any]] = dataset.to_list() if hasattr(dataset, "to_list") else list(dataset)
        q_field, a_field = data.FAMILY_FIELDS[family]
        renames = {q_field: question_key, a_field: answer_key, **(extra_keys or {})}
        rows = data.loading._rename(list(raw), renames, "dataset")
    if not rows:
        raise ValueError(f"The dataset {dataset_name or ''} is empty.")
    if family in ("math", "qa"):
        rows = _drop_missing_gold(rows, data.FAMILY_FIELDS[family][1], dataset_name or "the given rows")
    return rows


def _missing_gold(value: Any) -> bool:
    """A gold answer that is not there: ``None``, a float NaN (a blank cell read by pandas or
    ``datasets``), an empty string or the text ``nan`` (such a cell written out as text), or a list of
    only those. Such a gold would pay a fixed reply (``\\boxed{nan}``) on every row it stands in."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, str):
        return value.strip().lower() in ("", "nan")
    if isinstance(value, (list, tuple)):
        return all(_missing_gold(v) for v in value)
    return False


def _drop_missing_gold(rows: list[dict[str, Any]], field: str, source: str) -> list[dict[str, Any]]:
    """The rows whose gold answer is present; a warning names how many were dropped, and a dataset
    with no gold at all is an error."""
    kept = [row for row in rows if not _missing_gold(row.get(field))]
    dropped = len(rows) - len(kept)
    if not kept:
        raise ValueError(
            f"No row of {source} has a gold {field!r} (each is empty, None or NaN); check answer_key=."
        )
    if dropped:
        first = [i for i, row in enumerate(rows) if _missing_gold(row.get(field))][:5]
        logger.warning(
            "%d of %d rows of %s have no gold %r (empty, None or NaN) and are left out (first: rows %s).",
            dropped, len(rows), source, field, ", ".join(map(str, first)),
        )
    return kept
