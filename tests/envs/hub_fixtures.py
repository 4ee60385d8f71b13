"""Tiny local stand-ins, in each hub dataset's schema, for checking the hub-backed ids offline.

``fixture_rows(source, split)`` returns rows shaped as the hub dataset ``source`` is (before the
env's renaming); ``serve_hub(monkeypatch)`` makes :func:`gem.data.load` read them instead of the
hub and returns the list of sources it served. A hub id without a stand-in here fails loudly.
"""

from __future__ import annotations

from typing import Any, Optional

import pytest

ROWS = 6  # enough distinct items that different seeds pick different ones

CODE_SOURCES = ("axon-rl/CodeContest", "axon-rl/TACO-8k", "axon-rl/PrimeIntellect-15k")
MATH_SOURCES = (
    "axon-rl/ASDIV-2k", "axon-rl/GSM-8k", "axon-rl/MATH-12k", "axon-rl/MATH-lvl3to5-8k", "axon-rl/ORZ-57k",
    "axon-rl/DeepScaleR-40K", "axon-rl/math-eval",
)
QA_PROBLEM_SOURCES = ("axon-rl/NaturalQuestions", "axon-rl/HotpotQA")  # question column "problem"
QA_QUESTION_SOURCES = ("google-research-datasets/nq_open", "axon-rl/search-eval")


def fixture_rows(source: str, split: Optional[str]) -> list[dict[str, Any]]:
    tag = f"{source} {split}"
    if source in CODE_SOURCES:
        return [
            {"problem": f"[{tag}] Read n and print n + {k}.", "tests": {"inputs": ["4\n"], "outputs": [f"{4 + k}\n"]}}
            for k in range(ROWS)
        ]
    if source in MATH_SOURCES:
        return [{"problem": f"[{tag}] What is {k} + {k + 2}?", "answer": str(2 * k + 2)} for k in range(ROWS)]
    if source == "axon-rl/geometry3k":
        return [
            {"problem": f"[{tag}] A square has side {k + 1}. What is its area?", "answer": str((k + 1) ** 2),
             "images": [f"square-{k}.png"]}
            for k in range(ROWS)
        ]
    if source.startswith("axon-rl/RuleTaker-d"):
        return [
            {"question": f"[{tag}] Bob is red. Anne is blue. Is {'Bob' if k % 2 else 'Anne'} red? ({k})",
             "answer": "True" if k % 2 else "False"}
            for k in range(ROWS)
        ]
    if source in QA_PROBLEM_SOURCES + QA_QUESTION_SOURCES:
        column = "problem" if source in QA_PROBLEM_SOURCES else "question"
        cities = ["Paris", "Rome", "Madrid", "Berlin", "Vienna", "Lisbon"]
        return [{column: f"[{tag}] Which city is number {k}?", "answer": [cities[k]]} for k in range(ROWS)]
    raise AssertionError(f"no offline stand-in for hub dataset {source!r}; add one to {__name__}")


def serve_hub(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Serve :func:`fixture_rows` in place of the hub (the loader's cache cleared around it)."""
    from gem.data import loading

    served: list[str] = []

    def load_hub(source: str, split: Optional[str], hub_kwargs: dict[str, Any]) -> list[dict[str, Any]]:
        served.append(source)
        return fixture_rows(source, split)

    loading.clear_cache()
    monkeypatch.setattr(loading, "_load_hub", load_hub)
    return served
