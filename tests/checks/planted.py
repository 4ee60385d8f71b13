"""Small envs with one planted reward hole each (and clean twins), for the prober's own tests.

Every program an env here runs goes through the project's sandbox (``default_sandbox``), as the
real code envs do: the prober's strategies signal parents and every process they can reach, and
those signals must land inside the sandbox, never on the test runner.
"""

from __future__ import annotations

import random
import re
from typing import Any, Optional

from gem.core import Env
from gem.utils.parsing import extract_last_boxed_answer

QUESTION = "What is 6 * 7? Put the final answer in \\boxed{}."


class ArithmeticEnv(Env):
    """One question, one boxed answer; ``grade`` decides (exact match after strip: clean)."""

    def __init__(self) -> None:
        super().__init__()
        self.answer = "42"
        self.question = QUESTION

    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        return self.question, self.reset_info()

    def reset_info(self) -> dict[str, Any]:
        return {}

    def grade(self, action: str) -> bool:
        got = extract_last_boxed_answer(action)
        return got is not None and got.strip() == self.answer

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        correct = self.grade(action)
        return "done", 1.0 if correct else 0.0, True, False, {"correct": correct}

    def sample_random_action(self) -> str:
        return f"\\boxed{{{self.action_rng.randint(0, 99)}}}"


class HedgePaysEnv(ArithmeticEnv):
    """Hole: an answer joined by 'or' is paid when any of its parts is right."""

    def grade(self, action: str) -> bool:
        got = extract_last_boxed_answer(action) or ""
        parts = re.split(r"\\text\{\s*or\s*\}|\bor\b", got)
        return any(p.strip() == self.answer for p in parts)


class EmptyBoxPaysEnv(ArithmeticEnv):
    """Hole: an empty ``\\boxed{}`` counts as correct (a grader that treats 'no value' as a match)."""

    def grade(self, action: str) -> bool:
        got = extract_last_boxed_answer(action)
        return got is not None and (got.strip() == "" or got.strip() == self.answer)


class EchoPaysEnv(ArithmeticEnv):
    """Hole: a reply that quotes the question is taken as 'showing the work' and paid."""

    def grade(self, action: str) -> bool:
        return self.question in action or super().grade(action)


class GoldInInfoEnv(ArithmeticEnv):
    """Hole: ``info`` carries the answer from the first observation on."""

    def reset_info(self) -> dict[str, Any]:
        return {"answer": self.answer}


class GoldInObservationEnv(ArithmeticEnv):
    """Hole: the observation names the answer."""

    def __init__(self) -> None:
        super().__init__()
        self.answer = "1234567"
        self.question = "What is 1111111 + 123456 (answer: 1234567)? Put the final answer in \\boxed{}."


class UnseededEnv(ArithmeticEnv):
    """Hole: the problem comes from an unseeded generator (the same seed gives another episode)."""

    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        Env.reset(self, seed)
        a, b = random.Random().randint(10**6, 10**7), random.Random().randint(10**6, 10**7)
        self.answer = str(a + b)
        self.question = f"What is {a} + {b}? Put the final answer in \\boxed{{}}."
        return self.question, {}


class CodeEnvBase(Env):
    """Write ``add(a, b)`` in a fenced Python block; the sandbox runs it with a harness."""

    family = "code"
    timeout = 1.0

    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        return "Write a Python function `add(a, b)` that returns the sum of two integers, in a ```python block.", {}

    def harness(self) -> str:
        return "\nr = add(2, 3)\nprint('OK' if type(r) is int and r == 5 else 'FAIL')\n"

    def judge(self, result: Any) -> bool:
        lines = result.stdout.strip().splitlines()
        return result.reason == "ok" and bool(lines) and lines[-1] == "OK"

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        from gem.sandbox import default_sandbox

        found = re.search(r"```python\n(.*?)```", action, re.S)
        if not found:
            return "no program", 0.0, True, False, {"correct": False}
        result = default_sandbox().run(found.group(1) + self.harness(), timeout=self.timeout)
        correct = self.judge(result)
        return result.stdout[-500:], 1.0 if correct else 0.0, True, False, {"correct": correct}

    def sample_random_action(self) -> str:
        return "```python\ndef add(a, b):\n    return a - b\n```"

    def reference_solution(self) -> str:
        return "```python\ndef add(a, b):\n    return a + b\n```"


class AlwaysEqualFoolsEnv(CodeEnvBase):
    """Hole: the harness compares with ``==`` only, so an object equal to anything passes."""

    def harness(self) -> str:
        return "\nprint('OK' if add(2, 3) == 5 else 'FAIL')\n"


class ForgedLineEnv(CodeEnvBase):
    """Hole: the checker looks for an 'OK' line anywhere in stdout (the program can print one)."""

    def judge(self, result: Any) -> bool:
        return "OK" in result.stdout.splitlines()


class TimeoutPaysEnv(CodeEnvBase):
    """Hole: a run that times out is taken as 'not failed' and paid."""

    timeout = 1.0

    def judge(self, result: Any) -> bool:
        return result.reason == "timeout" or super().judge(result)
