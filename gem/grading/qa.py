"""Exact match and token F1 for question answering, with SQuAD-style normalization.

``grade_qa(answer, golds)`` returns both as a :class:`~gem.grading.result.GradeResult` (``correct``:
the exact match; ``score``: the exact match as 1.0/0.0, or the F1 with ``metric="f1"``).

Normalization lowercases, drops punctuation and the articles a/an/the, and collapses whitespace, so
``"The Eiffel Tower."`` matches ``"eiffel tower"``. Both scores take the best over a list of gold
answers. ``extract_answer`` pulls the answer from ``<answer>...</answer>`` or the last ``\\boxed{}``.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Iterable, Optional, Union

from gem.grading.result import GradeResult, graded
from gem.utils.parsing import extract_last_boxed_answer, extract_last_tagged_answer

Golds = Union[str, int, float, Iterable[Union[str, int, float]]]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT_TABLE = str.maketrans("", "", string.punctuation)
QA_METRICS = ("em", "f1")


def normalize_answer(s: str) -> str:
    """Lowercase, strip punctuation and articles, collapse whitespace (SQuAD's normalization)."""
    text = str(s).lower().translate(_PUNCT_TABLE)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _gold_list(golds: Golds) -> list[str]:
    if isinstance(golds, (str, int, float)):
        return [str(golds)]
    return [str(g) for g in golds if g is not None]


def em_check(prediction: str, golden_answers: Golds) -> bool:
    """Whether ``prediction`` equals any gold answer after normalization."""
    pred = normalize_answer(prediction)
    return any(pred == normalize_answer(g) for g in _gold_list(golden_answers))


exact_match = em_check


def f1_score(prediction: str, golden_answers: Golds) -> float:
    """The best token-level F1 between ``prediction`` and any gold answer (0.0 to 1.0).

    As in SQuAD, yes/no/noanswer answers only score when they match exactly.
    """
    pred_tokens = normalize_answer(prediction).split()
    best = 0.0
    for gold in _gold_list(golden_answers):
        gold_norm = normalize_answer(gold)
        gold_tokens = gold_norm.split()
        special = {"yes", "no", "noanswer"}
        if (gold_norm in special or " ".join(pred_tokens) in special) and gold_tokens != pred_tokens:
            continue
        common = Counter(pred_tokens) & Counter(gold_tokens)
        overlap = sum(common.values())
        if overlap == 0:
            continue
        precision = overlap / len(pred_tokens)
        recall = overlap / len(gold_tokens)
        best = max(best, 2 * precision * recall / (precision + recall))
    return best


def grade_qa(answer: str, golden_answers: Golds, metric: str = "em") -> GradeResult:
    """Grade the extracted ``answer`` against one gold answer or a list of them.

    ``correct`` is the exact match after normalization; ``score`` is the exact match (1.0/0.0) with
    ``metric="em"`` or the best token F1 with ``metric="f1"``; ``details`` has both (``em``, ``f1``).
    Always graded: these metrics cannot time out.
    """
    if metric not in QA_METRICS:
        raise ValueError(f"metric must be one of {QA_METRICS}, got {metric!r}.")
    correct = em_check(answer, golden_answers)
    f1 = f1_score(answer, golden_answers)
    return graded(correct, score=f1 if metric == "f1" else None, details={"em": correct, "f1": f1})


def extract_answer(text: str, mode: str = "any") -> Optional[str]:
    """The model's answer: ``mode="tag"`` (``<answer>``), ``"boxed"`` (last ``\\boxed{}``) or ``"any"``.

    With ``"any"`` the last complete ``<answer>...</answer>`` wins, else the last ``\\boxed{}``.
    """
    if mode not in ("any", "tag", "boxed"):
        raise ValueError(f"mode must be 'any', 'tag' or 'boxed', got {mode!r}.")
    if mode in ("any", "tag"):
        found = extract_last_tagged_answer(text)
        if found is not None and "\\boxed" in found:  # <answer>\boxed{x}</answer>
            found = extract_last_boxed_answer(found) or found
        if found is not None or mode == "tag":
            return found
    return extract_last_boxed_answer(text)
