"""Envs as outside authors ship them, registered for ``gem validate --import tests.checks.outside_ids``.

* ``planted:Unguessable``: a GEM env that keeps no answer anywhere (it works the sum out from its own
  question when grading) and has no solver: the answer attacks cannot run, so ``--strict`` fails.
* ``planted:NeedsExtra``: an env whose constructor raises ``DependencyNotInstalled`` for the ``games``
  extra, as GEM's envs do when a package is missing.
* Gymnasium ids (when gymnasium is installed), played as ``gymnasium:planted/Quiz-v0``: a quiz with
  ``Text`` spaces that keeps its answer in ``self._target``, with a clean grader, and its twin
  ``planted/QuizSubstring-v0`` that pays any reply containing the answer.
"""

from __future__ import annotations

import random
import re
from typing import Any, Optional

import gem
from gem.core import Env
from gem.errors import missing_extra


class UnguessableEnv(Env):
    """A sum whose answer is computed from the question text at grading time (clean grader)."""

    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        rng = random.Random(seed)
        self.question = f"Add {rng.randint(10, 99)} and {rng.randint(10, 99)}. Reply with the number only."
        return self.question, {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        a, b = (int(x) for x in re.findall(r"\d+", self.question))
        correct = action.strip() == str(a + b)
        return "done", 1.0 if correct else 0.0, True, False, {}

    def sample_random_action(self) -> str:
        return str(self.action_rng.randint(20, 198))


class NeedsExtraEnv(UnguessableEnv):
    """The same task behind a package that is not installed here."""

    def __init__(self) -> None:
        raise missing_extra("NeedsExtraEnv", "games", "wordfreq")


gem.register("planted:Unguessable", f"{__name__}:UnguessableEnv", family="planted", description="no answer")
gem.register("planted:NeedsExtra", f"{__name__}:NeedsExtraEnv", family="planted", description="needs games")

try:
    import gymnasium
    from gymnasium import spaces
except ImportError:  # the gymnasium extra is not installed: the GEM ids above only
    gymnasium = None

if gymnasium is not None:

    class QuizEnv(gymnasium.Env):
        """A capital-city quiz with Text spaces; the answer goes in <answer></answer>."""

        CITIES = {"France": "Paris", "Peru": "Lima", "Kenya": "Nairobi", "Japan": "Tokyo",
                  "Chile": "Santiago"}

        def __init__(self) -> None:
            self.observation_space = spaces.Text(max_length=400)
            self.action_space = spaces.Text(max_length=4000, min_length=1)
            self._target = ""

        def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> tuple[str, dict]:
            super().reset(seed=seed)
            country = sorted(self.CITIES)[int(self.np_random.integers(len(self.CITIES)))]
            self._target = self.CITIES[country]
            return f"What is the capital of {country}? Answer inside <answer></answer>.", {}

        def accepts(self, given: str) -> bool:
            return given == self._target

        def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
            found = re.findall(r"<answer>(.*?)</answer>", action, re.S)
            correct = bool(found) and self.accepts(found[-1].strip())
            return "done", 1.0 if correct else 0.0, True, False, {}

    class QuizSubstringEnv(QuizEnv):
        """The hole: any answer that contains the capital is right (a list of cities is paid)."""

        def accepts(self, given: str) -> bool:
            return self._target in given

    for _name, _cls in (("planted/Quiz-v0", QuizEnv), ("planted/QuizSubstring-v0", QuizSubstringEnv)):
        if _name not in gymnasium.registry:
            gymnasium.register(id=_name, entry_point=f"{__name__}:{_cls.__name__}")
