"""How ``gem validate`` reads an env: kept answers in every shape, text tasks that show code, wrong
answers of the gold's shape, and leaks the agent would not otherwise see."""

from __future__ import annotations

import json
import random
from typing import Any, Optional

import pytest

from gem.checks import validate
from gem.checks.validate import wrong_values
from gem.core import Env

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


class Colouring(Env):
    """Colour a path graph; the env keeps one valid colouring (a dict) and pays exactly it (clean)."""

    def reset(self, seed: Optional[int] = None, **kwargs: Any):
        super().reset(seed)
        rng = random.Random(seed)
        n = rng.randint(4, 6)
        self._colouring = {str(i): 1 + (i + rng.randint(0, 1)) % 2 for i in range(n)}
        return (f"Vertices 0..{n - 1} form a path. Colour them with 1 and 2, using the colours given for "
                f"vertex 0: {self._colouring['0']}. Return a JSON map of vertices to colours."), {}

    def step(self, action: str):
        try:
            got = json.loads(action)
        except ValueError:
            got = None
        ok = got == self._colouring
        return "done", 1.0 if ok else 0.0, True, False, {}

    def sample_random_action(self) -> str:
        return json.dumps({"0": 1})


def test_a_kept_mapping_is_found_as_json():
    report = validate(Colouring())
    assert report.ok and report.complete, report.summary()
    assert report.gold_source == "a value the env keeps, env._colouring (as JSON), paid when played"


class Decode(Env):
    """A text task whose prompt shows a Python hint; the answer is a sentence in \\boxed{}."""

    HINT = "Here is a hint:\n```python\ndef decode(s):\n    return s[::-1]\n```\n"

    def reset(self, seed: Optional[int] = None, **kwargs: Any):
        super().reset(seed)
        self.answer = random.Random(seed).choice(["the cat sat down", "rain falls on the hill"])
        return f"Decode {self.answer[::-1]!r}. {self.HINT}Put the sentence in \\boxed{{}}.", {}

    def step(self, action: str):
        ok = action.strip() == f"\\boxed{{{self.answer}}}"
        return "done", 1.0 if ok else 0.0, True, False, {}

    def sample_random_action(self) -> str:
        return "\\boxed{" + self.action_rng.choice(["a b c", "one two"]) + "}"


def test_a_prompt_that_shows_python_is_no_code_task_when_its_actions_are_answers():
    report = validate(Decode())
    assert report.kind == "answer" and report.ok and report.complete, report.summary()
    assert {"reference", "wrong-answer", "gold-leak"} <= set(report.checked)


def test_a_wrong_answer_of_many_parts_keeps_the_golds_shape():
    assert wrong_values(["U R F' D"], "\\boxed{3}", ("\\boxed{", "}"))[:2] == ["U R F'", "3"]
    assert wrong_values(["Q . .\n. . Q"], None, None)[0] == "Q . .\n. ."
    assert wrong_values(["42"], None, None)[0] == "43"  # numbers: near numbers, as before


class InfoEcho(Env):
    """``info`` repeats a value the question shows; with ``named``, it also says which is the answer."""

    def __init__(self, named: bool) -> None:
        super().__init__()
        self.named = named

    def reset(self, seed: Optional[int] = None, **kwargs: Any):
        super().reset(seed)
        self.answer = str(random.Random(seed).choice([73, 79, 83]))
        info = {"metadata": {"number": int(self.answer)}}
        if self.named:
            info["metadata"]["solution"] = self.answer
        return f"Factor {self.answer} into primes. Put the answer in \\boxed{{}}.", info

    def step(self, action: str):
        ok = action.strip() == f"\\boxed{{{self.answer}}}"
        return "done", 1.0 if ok else 0.0, True, False, {}


def test_info_that_repeats_what_the_agent_sees_is_no_leak_but_a_named_answer_is():
    assert validate(InfoEcho(named=False)).ok
    leaked = validate(InfoEcho(named=True))
    assert [f.reason for f in leaked.findings] == ["info['metadata.solution'] holds the gold answer (seed 0)"]


def test_a_cut_that_would_break_brackets_is_no_wrong_answer():
    # '{"0": 1, "1": 2' would leave a \boxed{} open: a parser then reads the box before it
    wrong = wrong_values(['{"0": 1, "1": 2}'], "\\boxed{3}", ("\\boxed{", "}"))
    assert wrong[:2] == ['{"0": 1}', "3"]  # a JSON answer's wrong answer keeps its shape: its last part left out
    assert not any(w.startswith('{"0": 1') and not w.endswith("}") for w in wrong)
    assert wrong_values(["(P ∨ Q) → R"], None, None)[0] == "(P ∨ Q) →"


def test_bracket_tags_and_two_word_labels_are_formats():
    from gem.checks.probe import prompt_formats

    assert prompt_formats("Give the number inside [ANS]...[/ANS].") == [("[ANS]", "[/ANS]")]
    assert prompt_formats("What is 3 times 4?\nFinal answer: <number>")[0] == ("Final answer: ", "")
    assert prompt_formats("Reply with Answer: <n>") == [("Answer: ", "")]  # one word: as before
    assert prompt_formats("See [note] below.") == []  # a bracket with no closing pair is no format


class LaterFormat(Env):
    """The prompt names two formats; the env parses only the second (clean)."""

    def reset(self, seed: Optional[int] = None, **kwargs: Any):
        super().reset(seed)
        self._total = random.Random(seed).randint(100, 999)
        return f"Work in <scratch>...</scratch> if you like. Count to {self._total}; reply <final>N</final>.", {}

    def step(self, action: str):
        import re

        m = re.search(r"<final>(\d+)</final>", action)
        return "done", 1.0 if m and int(m.group(1)) == self._total else 0.0, True, False, {}


def test_a_kept_value_is_played_in_the_prompts_later_formats_when_the_first_is_not_paid():
    report = validate(LaterFormat())
    assert report.ok and report.complete, report.summary()
    assert report.gold_source == "a value the env keeps, env._total, paid when played"
