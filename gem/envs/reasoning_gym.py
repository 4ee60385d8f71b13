"""ReasoningGym tasks (``rg:<name>``): procedurally generated, scored by reasoning-gym's ``score_answer``.

Imported only when an ``rg:`` env is made (``import gem`` never imports reasoning-gym). Item ``i``
of a task is reasoning-gym's item ``i`` for the env's ``seed`` (it draws it from
``Random(seed + i)``), so every item is reproducible alone and nothing is built ahead: ``size`` may
be huge. The answer is the last ``\\boxed{}``.

Rewards: 1 when reasoning-gym scores the answer 1.0, else 0 (``partial_credit=True`` passes
reasoning-gym's score through); no ``\\boxed{}`` scores 0, or -0.1 with
``use_format_error_reward=True``. Some answers are wrong whatever the scorer says (``_refuse``):
alternatives joined by a connective the gold does not use, a number that is not finite (``nan``,
``inf``) where the gold is finite, and the task-specific checks. ``info["score"]`` is reasoning-gym's
score. A scorer that raises is an infrastructure failure, not a wrong answer: the answer is not
graded (``ungraded_reward``, ``info["correct"] = None``, ``info["grading"] = "error"``) and the
failure is reported through :func:`gem.errors.report_infra_failure` (``info["infra_error"]``;
``GEM_STRICT_INFRA=1`` raises it). The one step ends with ``terminated=True`` and
``truncated=True`` (GEM's single-step flags).

``reset()`` without a seed walks the items in order: items ``0..size-1``,
then (unless ``eval=True``, which repeats the same items) the next ``size`` items of the stream,
and so on. ``reset(seed=s)`` draws one of the ``size`` items from the env's generator.
"""

from __future__ import annotations

import copy
import math
import random
import re
import threading
from collections import OrderedDict
from typing import Any, Optional

import reasoning_gym

from gem.compat.reasoning_gym import reasoning_gym_compat
from gem.core import StepResult
from gem.envs.single_turn import EVAL_PARAM, SingleTurnEnv
from gem.errors import report_infra_failure
from gem.grading.result import GradeResult, graded, ungraded
from gem.params import Param, check_params
from gem.grading.math_answers import hedged
from gem.utils.parsing import extract_last_boxed_answer


# Tasks whose answer is an arithmetic expression over the item's numbers (metadata "numbers"):
# "all" uses each exactly once, "subset" each at most once. Their scorers check the value only.
_EXPRESSION_TASKS = {"puzzle24": "all", "countdown": "subset"}
# Tasks whose answers are checked before their scorer runs (gem.envs._rg_solvers: task -> check).
_CHECKS = {"rush_hour": "rush_hour_invalid", "boxnet": "boxnet_invalid"}
# Answers no task's gold can be: a scorer that pays one of them pays anything.
_PROBES = ("gem: not an answer", "0", "[]", "True", "False")


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


_NON_FINITE_WORD = re.compile(r"(?<![A-Za-z])(?:nan|inf(?:inity)?)(?:[ij])?(?![A-Za-z])", re.IGNORECASE)
_EXPONENT = re.compile(r"\d+(?:\.\d*)?[eE][+-]?\d+")


def _non_finite(text: str) -> bool:
    """Whether ``text`` holds a number a float parser reads as NaN or infinite: ``nan``, ``inf``,
    ``infinity`` (also as a complex part, ``nanj``), or a literal that overflows (``1e999``). Every
    comparison with NaN is false, so a scorer's ``min(1, exp(-|x - gold|))`` or ``not |x - gold| > tol``
    pays it."""
    if _NON_FINITE_WORD.search(text):
        return True
    return any(math.isinf(float(m)) for m in _EXPONENT.findall(text))


def _refuse(name: str, answer: str, item: dict[str, Any]) -> Optional[str]:
    """Why ``answer`` is not paid whatever the scorer says, or ``None``.

    Hedges: alternatives joined by a connective the gold answer does not use (``a \\text{ or } b``,
    ``a and b``: several scorers read one side). Expression puzzles: numbers other than the item's.
    Rush Hour: anything but a list of whole legal moves ending when the red car leaves (the scorer
    reads moves anywhere in the text and skips blocked ones). Boxnet: a plan its scorer cannot read.
    """
    from collections import Counter

    gold = item.get("answer")
    if gold is not None and str(gold).strip() and hedged(answer, str(gold)):
        return "alternatives joined by a connective"
    if _non_finite(answer) and not _non_finite(str(gold or "")):
        return "a number that is not finite (nan, inf) where the gold answer is finite"
    if name in _CHECKS:
        from gem.envs import _rg_solvers

        invalid = getattr(_rg_solvers, _CHECKS[name])(answer, item)
        if invalid is not None:
            return invalid
    rule = _EXPRESSION_TASKS.get(name)
    numbers = (item.get("metadata") or {}).get("numbers")
    if rule and isinstance(numbers, list):
        used, given = Counter(int(x) for x in re.findall(r"\d+", answer)), Counter(int(x) for x in numbers)
        if (used != given) if rule == "all" else bool(used - given):
            return "an expression over numbers other than the puzzle's"
    return None


def _pays_anything(ds: Any, item: dict[str, Any]) -> bool:
    """Whether the scorer pays an answer no gold answer can be (asked only once an answer is paid)."""
    gold = str(item.get("answer", ""))
    for probe in _PROBES:
        if _same(probe, gold):
            continue
        try:
            if float(ds.score_answer(answer=probe, entry=item)) >= 1.0:
                return True
        except Exception:  # noqa: BLE001 -- a probe the scorer cannot read is not paid
            continue
    return False


# rg:composite needs a mix of datasets; without config=... it mixes these, equally weighted.
COMPOSITE_DEFAULT = ("basic_arithmetic", "chain_sum", "leg_counting", "word_sorting")

_datasets: dict[tuple, Any] = {}
_lock = threading.Lock()
_item_lock = threading.Lock()
_ITEM_CACHE_SIZE = 8  # items kept per env


def _dataset(name: str, size: int, seed: int, config: dict[str, Any]) -> Any:
    """reasoning-gym's dataset object, built once per (name, size, seed, config) in this process."""
    key = (name, size, seed, tuple(sorted((k, repr(v)) for k, v in config.items())))
    with _lock:
        found = _datasets.get(key)
        if found is None:
            found = _datasets[key] = _dataset_uncached(name, size, seed, config)
    return found


def _dataset_uncached(name: str, size: int, seed: int, config: dict[str, Any]) -> Any:
    """A dataset object for one later pass of an env's walk (not kept: each pass needs it once)."""
    if name == "composite":
        config = _composite_config(config)
    return reasoning_gym.create_dataset(name, size=size, seed=seed, **config)


def _composite_config(config: dict[str, Any]) -> dict[str, Any]:
    """``datasets`` as reasoning-gym's ``DatasetSpec`` list (dicts or names accepted), with a default mix."""
    from reasoning_gym.composite import DatasetSpec

    specs = []
    for entry in config.get("datasets") or COMPOSITE_DEFAULT:
        if isinstance(entry, str):
            entry = {"name": entry}
        if isinstance(entry, dict):
            entry = DatasetSpec(entry["name"], float(entry.get("weight", 1.0)), dict(entry.get("config", {})))
        specs.append(entry)
    return {**config, "datasets": specs}


def dataset_names() -> list[str]:
    """Every dataset name the installed reasoning-gym registers."""
    return sorted(reasoning_gym.factory.DATASETS)


@reasoning_gym_compat
class ReasoningGymEnv(SingleTurnEnv):
    """One reasoning-gym task as a single-turn env.

    Args:
        name: the reasoning-gym dataset (``rg:<name>``); see ``dataset_names()``.
        size: how many items make one pass (items ``0..size-1``); items are generated on demand,
            so any size costs the same memory.
        seed: the item set's seed (GEM's default 42); ``gem.make(id, seed=s)`` passes its seed here
            (the constructor names ``seed``), and ``env.seed`` reports it.
        config: extra reasoning-gym config for the dataset (difficulty and so on). For
            ``composite``, ``{"datasets": [name or {"name", "weight", "config"}, ...]}``
            (default: an equal mix of :data:`COMPOSITE_DEFAULT`).
        partial_credit: pass reasoning-gym's score through as the reward instead of 1/0.
        use_format_error_reward: an answer with no ``\\boxed{}`` scores -0.1 instead of 0.
        eval: ``reset()`` without a seed repeats items ``0..size-1`` in order instead of moving on
            to fresh items after each pass.
    """

    _shared = ("_ds", "_pass_ds")

    PARAMS = (
        Param("name", str, "the reasoning-gym task (set by the id)", client=False),
        Param("size", int, "problems in the set", min=1, client={"max": 2000}),
        Param("partial_credit", bool, "pay reasoning-gym's partial scores instead of 1 or 0"),
        EVAL_PARAM,
    )

    def __init__(
        self,
        name: str,
        size: int = 500,
        seed: int = 42,
        config: Optional[dict[str, Any]] = None,
        partial_credit: bool = False,
        use_format_error_reward: bool = False,
        eval: bool = False,  # noqa: A002
    ) -> None:
        check_params(self, locals())
        super().__init__(eval=eval, use_format_error_reward=use_format_error_reward)
        if name not in reasoning_gym.factory.DATASETS:
            import difflib

            close = difflib.get_close_matches(str(name), dataset_names(), n=3)
            raise ValueError(
                f"Unknown reasoning-gym dataset {name!r}."
                + (f" Did you mean {', '.join(close)}?" if close else "")
                + " reasoning_gym.factory.DATASETS lists them."
            )
        self.name, self.size = name, size
        self.config = dict(config or {})
        self.partial_credit = bool(partial_credit)
        from gem.envs._rg_solvers import SOLVERS

        if name not in SOLVERS:
            # only the tasks that keep no gold answer have a solver; the others give theirs as
            # ``answer``, and ``reference_solution = None`` says there is no other reference
            self.reference_solution = None  # type: ignore[method-assign,assignment]
        self._use_seed(seed)

    def _use_seed(self, seed: int) -> None:
        self.seed = int(seed)
        self._ds = _dataset(self.name, self.size, self.seed, self.config)
        # (pass number, its dataset): one shared value, so a restored state can never pair a
        # pass number with another pass's dataset.
        self._pass_ds: tuple[int, Any] = (0, self._ds)
        self._position = 0
        self._from_pass = False

    def _num_items(self) -> int:
        return min(self.size, len(self._ds))

    def _next_in_epoch(self, n: int) -> int:
        # In order, with O(1) memory (the base class would shuffle a list of n indices). Each
        # pass after the first uses the next n items of the stream (the set seeded seed + pass * n);
        # eval repeats the first pass.
        pass_no, idx = divmod(self._position, n)
        self._position += 1
        if idx == 0 and self._position > 1:
            self.epoch += 1
        if self.eval:
            pass_no = 0
        if pass_no != self._pass_ds[0]:
            seed = self.seed + pass_no * n
            ds = self._ds if pass_no == 0 else _dataset_uncached(self.name, n, seed, self.config)
            self._pass_ds = (pass_no, ds)
        self._from_pass = True
        return idx

    def reset(
        self, seed: Optional[int] = None, idx: Optional[int] = None, **kwargs: Any
    ) -> tuple[str, dict[str, Any]]:
        self._from_pass = False
        return super().reset(seed=seed, idx=idx, **kwargs)

    def _get_item(self, idx: int) -> dict[str, Any]:
        # Some reasoning-gym tasks (pool_matrix, ...) draw from the global `random`/`numpy.random`
        # generators. Building items under one lock, with those states saved and restored, keeps
        # items reproducible across threads and leaves the caller's global state untouched.
        import numpy as np

        ds = self._pass_ds[1] if self._from_pass else self._ds
        # The last few items are kept (a copy is handed out): a group of episodes on one seed, as
        # RL groups and validators play, builds its item once (some tasks take a second per item).
        key = (id(ds), idx)
        cache = self.__dict__.setdefault("_item_cache", OrderedDict())
        if key in cache:
            cache.move_to_end(key)
            return copy.deepcopy(cache[key][1])
        with _item_lock:
            py_state, np_state = random.getstate(), np.random.get_state()
            try:
                item = ds[idx]
            finally:
                random.setstate(py_state)
                np.random.set_state(np_state)
        cache[key] = (ds, copy.deepcopy(item))  # the dataset is held so that its id stays its own
        while len(cache) > _ITEM_CACHE_SIZE:
            cache.popitem(last=False)
        return item

    def _question(self, item: dict[str, Any]) -> str:
        return str(item["question"])

    def _step(self, action: str) -> StepResult:
        result = super()._step(action)
        if result[2] or result[3]:
            # the task's metadata holds its solution: shown once the episode has ended, never at reset
            # (an agent, or a remote client of gem serve, is handed the reset info)
            item = getattr(self, "item", None) or {}
            result[4].setdefault("metadata", copy.deepcopy(item.get("metadata", {})))
        return result

    def _extract(self, action: str) -> Optional[str]:
        return extract_last_boxed_answer(action)

    def _score(self, answer: str) -> GradeResult:
        ds = self._pass_ds[1] if self._from_pass else self._ds
        refused = _refuse(self.name, answer, self.item)
        if refused is not None:
            return graded(False, score=0.0, details={"score": 0.0, "refused": refused})
        try:
            score = float(ds.score_answer(answer=answer, entry=self.item))
            if score >= 1.0 and _pays_anything(ds, self.item):
                # the task's scorer pays any answer: only the gold answer itself is paid
                gold = self.item.get("answer")
                score = 1.0 if gold is not None and _same(answer, str(gold)) else 0.0
        except Exception as exc:  # the scorer's failure, not a wrong answer: reported, not graded
            details: dict[str, Any] = {"score": None}
            report_infra_failure(details, "rg:scorer", exc)  # details["infra_error"]: reported here
            return ungraded("error", "rg:scorer", f"{type(exc).__name__}: {exc}", details)
        # the result's score is kept in [0, 1] (NaN: 0); info["score"] is the scorer's own
        return graded(score >= 1.0, score=score, details={"score": score})

    def _reward(self, result: GradeResult) -> float:
        """``partial_credit=True`` pays reasoning-gym's score (``success_reward * score``); a
        refused answer (a hedge, a spray of answers) pays ``fail_reward`` either way."""
        if result.graded and self.partial_credit and "refused" not in result.details:
            return self.success_reward * result.score
        return super()._reward(result)

    def reference_solution(self) -> Optional[str]:
        """A reply that solves the current item, for the tasks that keep no gold answer
        (``rush_hour``, ``boxnet``: many answers are valid): one computed by a solver from the item
        (:mod:`gem.envs._rg_solvers`), in ``\\boxed{}``. ``None`` when the solver gives up within
        its bound. The agent is never shown it; it is for validators and the ``gold`` smoke-test
        agent. Other tasks have ``reference_solution = None`` and give their gold as ``answer``."""
        item = getattr(self, "item", None)
        if not item:
            return None
        from gem.envs._rg_solvers import reference_answer

        answer = reference_answer(self.name, item)
        return None if answer is None else f"\\boxed{{{answer}}}"

    def sample_random_action(self) -> str:
        """The boxed answer of a random item of this task: in the task's own answer format (a
        scorer may fail on another, which is reported as its failure), and seldom this item's.
        Tasks without gold answers (scored by simulation) get the first of a digit, ``[]`` and
        ``{}`` that their scorer reads."""
        answer = self._get_item(self.action_rng.randrange(self._num_items())).get("answer")
        if answer is not None and str(answer).strip():
            return f"\\boxed{{{answer}}}"
        digit = str(self.action_rng.randint(0, 9))
        ds = self._pass_ds[1] if self._from_pass else self._ds
        for candidate in (digit, "[]", "{}"):
            try:
                ds.score_answer(answer=candidate, entry=self.item)
            except Exception:  # noqa: BLE001 - not this task's format; try the next
                continue
            return f"\\boxed{{{candidate}}}"
        return f"\\boxed{{{digit}}}"
