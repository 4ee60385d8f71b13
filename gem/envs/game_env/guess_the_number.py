"""Guess The Number: find a hidden whole number from "higher"/"lower" hints.

A guess is the last ``\\boxed{N}`` in the action; ``0`` and negative numbers are numbers (a guess
outside the range is an invalid move, not a format error). Rewards: success 1; a hint 0; a guess
out of range or repeated 0 (invalid move); no parsable guess -0.1 and the episode ends. When the
turn limit cuts the episode (``truncated``), the last guess earns GEM's closeness reward
``1 - |guess - target| / (max - min)`` (0 if it was invalid); ``closeness_reward=False`` makes it 0.
"""

from __future__ import annotations

import math
import re
from typing import Any, Optional

from gem.envs.game_env._prompts import GAME_OVER_SUFFIX, first_request
from gem.core import Agent, Env, StepResult
from gem.params import Param, check_params, max_turns_param
from gem.utils.parsing import extract_last_boxed_answer, parse_int


class GuessTheNumberEnv(Env):
    """Guess a number in ``[min_number, max_number]`` within ``max_turns`` guesses.

    Pass ``min_number=None``/``max_number=None``/``max_turns=None`` to draw them per episode
    (the ``-random`` preset): a range of 6 to 51 numbers and just enough turns for binary search
    plus one.
    """

    reset_before_first_step = True  # a step before reset plays in a fresh episode
    _NUMBER = {"min": -(10**9), "max": 10**9}  # what a client of a server may ask for
    PARAMS = (
        Param("min_number", int, "the smallest number it may be (None: drawn per episode)", nullable=True,
              client=_NUMBER),
        Param("max_number", int, "the largest number it may be, above min_number (None: drawn per episode)",
              nullable=True, client=_NUMBER),
        max_turns_param("guesses allowed (None: enough for binary search, plus one)"),
        Param("closeness_reward", bool, "a wrong guess earns a share of success by how close it is"),
    )

    def __init__(
        self,
        min_number: Optional[int] = 1,
        max_number: Optional[int] = 20,
        max_turns: Optional[int] = 20,
        closeness_reward: bool = True,
    ) -> None:
        check_params(self, locals())
        self._random_params = min_number is None or max_number is None
        if not self._random_params and min_number >= max_number:  # type: ignore[operator]
            raise ValueError(f"min_number ({min_number}) must be below max_number ({max_number}).")
        self._fixed_turns = max_turns
        self.min_number = min_number if min_number is not None else 1
        self.max_number = max_number if max_number is not None else 20
        self.max_turns = max_turns if max_turns is not None else self._turns_for_range()
        self.closeness_reward = closeness_reward
        self.target = 0
        self.turn_count = 0
        self.previous_guesses: set[int] = set()

    def _turns_for_range(self) -> int:
        """Enough guesses for binary search over the range, plus one to spare."""
        return int(math.log2(self.max_number - self.min_number + 1)) + 2

    # ------------------------------------------------------------------ API
    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        rng = self.rng
        if self._random_params:
            self.min_number = rng.randint(1, 10)
            self.max_number = rng.randint(self.min_number + 5, self.min_number + 50)
            self.max_turns = self._fixed_turns or self._turns_for_range()
        self.target = rng.randint(self.min_number, self.max_number)
        self.turn_count = 0
        self.previous_guesses = set()
        return self._instructions(), {"suffix": first_request(self.get_task_suffix())}

    def _step(self, action: str) -> StepResult:
        self.turn_count += 1
        turn = self.turn_count
        guess = parse_int(extract_last_boxed_answer(action))
        if guess is None:
            return self._result(
                f"At turn {turn}, you did not provide a valid guess; a guess is one whole number in "
                f"\\boxed{{}}, for example \\boxed{{{self.min_number}}}. The game is over.",
                self.format_error_reward,
                terminated=True,
                info=self._info(success=False),
            )
        if guess == self.target:
            return self._result(
                f"Congratulations! You guessed the correct number {self.target} in {turn} turns.",
                self.success_reward,
                terminated=True,
                info=self._info(success=True),
            )
        previous = self.previous_guesses
        if not self.min_number <= guess <= self.max_number:
            valid = False
            feedback = (
                f"At turn {turn}, you guessed {guess}, which is outside the range "
                f"{self.min_number} to {self.max_number}."
            )
        elif guess in previous:
            valid = False
            feedback = f"At turn {turn}, you guessed {guess}, which you had already guessed."
        else:
            valid = True
            previous.add(guess)
            hint = "lower" if guess > self.target else "higher"
            feedback = f"At turn {turn}, you guessed {guess}, and the target number is {hint} than {guess}."
        if turn >= self.max_turns:
            # an invalid last guess never pays more than a wrong one, whatever levels a spec sets
            reward = self.fail_reward if valid else min(self.fail_reward, self.invalid_action_reward)
            if valid and self.closeness_reward:
                closeness = 1.0 - abs(guess - self.target) / (self.max_number - self.min_number)
                reward = self.fail_reward + (self.success_reward - self.fail_reward) * closeness
            return self._result(
                f"{feedback} You have reached the maximum number of turns; the number was {self.target}.",
                reward,
                truncated=True,
                info=self._info(success=False),
            )
        left = self.max_turns - turn
        reward = self.internal_step_reward if valid else self.invalid_action_reward
        # The common path, built inline: it runs hundreds of thousands of times a second.
        return (
            f"{feedback} {left} turn{'s' if left != 1 else ''} left.",
            reward,
            False,
            False,
            {"suffix": "Enter your next guess."},
        )

    def sample_random_action(self) -> str:
        return f"\\boxed{{{self.action_rng.randint(self.min_number, self.max_number)}}}"

    def make_solver(self) -> Agent:
        return GuessTheNumberSolver()

    # -------------------------------------------------------------- helpers
    def get_task_suffix(self) -> str:
        return "Enter your next guess."

    def _info(self, success: Optional[bool] = None) -> dict[str, Any]:
        """The info of a step that ended the game: its suffix asks for nothing more."""
        info: dict[str, Any] = {"suffix": GAME_OVER_SUFFIX}
        if success is not None:
            info["success"] = success
        return info

    def _instructions(self) -> str:
        return (
            "You are playing Guess The Number.\n"
            f"I have picked a whole number between {self.min_number} and {self.max_number} (inclusive). "
            f"You have {self.max_turns} turns to find it.\n"
            "After each guess I tell you whether the target number is higher or lower than your guess.\n"
            "Put your guess inside \\boxed{}, for example \\boxed{"
            f"{(self.min_number + self.max_number) // 2}"
            "}; only the last \\boxed{} in your reply counts.\n"
            "Enter your first guess."
        )


_RANGE = re.compile(r"between (-?\d+) and (-?\d+)")
_HINT = re.compile(r"is (higher|lower) than (-?\d+)")


class GuessTheNumberSolver(Agent):
    """Binary search over the range stated in the first observation; always wins in time."""

    def __init__(self) -> None:
        self.low = self.high = 0

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        found = _RANGE.search(observation)
        if found is None:
            raise ValueError("GuessTheNumberSolver: the first observation does not state the range.")
        self.low, self.high = int(found.group(1)), int(found.group(2))

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        hint = _HINT.search(observation)
        if hint is not None:
            guess = int(hint.group(2))
            if hint.group(1) == "higher":
                self.low = guess + 1
            else:
                self.high = guess - 1
        return f"\\boxed{{{(self.low + self.high) // 2}}}"
