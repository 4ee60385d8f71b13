"""What the single-player puzzles (FifteenPuzzle, Sudoku, TowerofHanoi, Game2048, Sokoban) share.

A puzzle is a board, a move parser and a move rule. :class:`PuzzleEnv` runs the episode around
them the same way for every game: count the turn, parse the last ``\\boxed{...}`` (a malformed
answer is a format error that ends the episode, as in GEM), apply a legal move or explain why a
move is illegal (reward 0, the game goes on), end on success, failure or the turn limit, and show
the board after every move. Solver agents read the board back with :func:`board_lines`.
"""

from __future__ import annotations

import abc
import re
from typing import Any, Generic, Optional, TypeVar

from gem.core import Env, StepResult
from gem.envs.game_env._prompts import GAME_OVER_SUFFIX, first_request
from gem.utils.parsing import extract_last_boxed_answer
from gem.utils.text import preview

MoveT = TypeVar("MoveT")

BOARD_HEADER = "Current board:"
MAX_ANSWER_CHARS = 100  # longer boxed answers are refused before any pattern runs on them
PARSE_CACHE_SIZE = 4096  # distinct well-formed answers remembered per game (see PuzzleEnv._parse_cache)
NEXT_MOVE = "Enter your next move."
FIRST_MOVE = first_request(NEXT_MOVE)
DIRECTIONS = ("up", "down", "left", "right")
# (row, column) offsets of the four directions.
OFFSETS = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}


class Illegal(Exception):
    """A well-formed move that the rules forbid; the message says why (invalid move, reward 0)."""


class PuzzleEnv(Env, abc.ABC, Generic[MoveT]):
    """An episode of a turn-limited puzzle played through ``\\boxed{...}`` answers.

    Subclasses set ``title`` and implement ``_new_game`` (draw the board from ``self.rng``),
    ``_rules``, ``_example``, ``_parse``, ``_apply``, ``_solved`` and ``render``; ``_lost`` and
    ``_truncation_reward`` have defaults.
    """

    title = "a puzzle"
    reset_before_first_step = True  # a step before reset plays in a fresh episode
    max_turns: int = 1
    turn_count: int = 0
    # A game whose ``_parse`` depends on the answer alone (not the board) sets this to ``{}``: parsed
    # moves (immutable) are then remembered per class, answer -> move, up to PARSE_CACHE_SIZE.
    _parse_cache: Optional[dict[str, Any]] = None

    # ------------------------------------------------------------ game hooks
    @abc.abstractmethod
    def _new_game(self) -> None:
        """Draw a fresh board (and per-episode parameters for ``-random`` presets) from ``self.rng``."""

    @abc.abstractmethod
    def _rules(self) -> str:
        """The rules and the action format, for the first observation."""

    @abc.abstractmethod
    def _example(self) -> str:
        """A well-formed answer, e.g. ``\\boxed{up}``."""

    @abc.abstractmethod
    def _parse(self, answer: str) -> MoveT:
        """The move in the boxed ``answer``; raise ``ValueError`` (saying why) if it is malformed."""

    @abc.abstractmethod
    def _apply(self, move: MoveT) -> tuple[str, float]:
        """Play ``move``: (what happened, reward); raise :class:`Illegal` if the rules forbid it."""

    @abc.abstractmethod
    def _solved(self) -> bool:
        """Whether the puzzle is solved."""

    @abc.abstractmethod
    def render(self) -> str:
        """The board as text."""

    def _lost(self) -> bool:
        """Whether no move can help any more (2048 with a full, frozen board)."""
        return False

    def _truncation_reward(self) -> float:
        """GEM's partial credit when the turn limit cuts the episode, as a share of
        ``success_reward`` (0 unless a game says)."""
        return 0.0

    def _success_reward(self, move_reward: float) -> float:
        """The reward of the solving move."""
        return self.success_reward

    # ------------------------------------------------------------------ API
    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        self._new_game()
        self.turn_count = 0
        # The board and the one request for a move end the observation and are its suffix too, so
        # a prompt built from both (gem.utils.prompting.user_content) states them once.
        suffix = f"{self._board_block()}\n{FIRST_MOVE}"
        observation = (
            f"You are playing {self.title}.\n{self._rules()}\n"
            f"Put your move inside \\boxed{{}}, for example {self._example()}; only the last "
            f"\\boxed{{}} in your reply counts. You have {self.max_turns} turns.\n\n"
            f"{suffix}"
        )
        return observation, {"suffix": suffix}

    def _step(self, action: str) -> StepResult:
        turn = self.turn_count = self.turn_count + 1
        answer = extract_last_boxed_answer(action)
        try:
            if answer is None:
                raise ValueError("no complete \\boxed{...} was found")
            if len(answer) > MAX_ANSWER_CHARS:
                raise ValueError(f"the \\boxed{{}} answer is {len(answer)} characters long; a move is a few words")
            cache = self._parse_cache
            if cache is None:
                move = self._parse(answer)
            else:
                move = cache.get(answer)
                if move is None:
                    move = self._parse(answer)
                    if len(cache) < PARSE_CACHE_SIZE:
                        cache[answer] = move
        except ValueError as exc:
            return self._result(
                f"At turn {turn}, your move could not be read: {exc}. A move looks like {self._example()}. "
                "The game is over.",
                self.format_error_reward,
                terminated=True,
                info=self._info(success=False),
            )
        try:
            feedback, reward = self._apply(move)
        except Illegal as exc:
            feedback, reward = f"invalid move: {exc}", self.invalid_action_reward
        board = self._board_block()
        text = f"At turn {turn}, {feedback}\n\n{board}"
        if self._solved():
            return self._result(
                f"{text}\nCongratulations! You solved the puzzle in {turn} turns.",
                self._success_reward(reward),
                terminated=True,
                info=self._info(success=True, board=board),
            )
        if self._lost():
            return self._result(
                f"{text}\nGame over: no move can change the board.", reward, terminated=True,
                info=self._info(success=False, board=board),
            )
        left = self.max_turns - turn
        if left <= 0:
            return self._result(
                f"{text}\nYou have reached the maximum number of turns ({self.max_turns}).",
                reward + self.success_reward * self._truncation_reward(),
                truncated=True,
                info=self._info(success=False, board=board),
            )
        # The common case, built directly (no episode end to record).
        return (
            f"{text}\n{left} turn{'s' if left != 1 else ''} left. {NEXT_MOVE}",
            float(reward),
            False,
            False,
            {"suffix": NEXT_MOVE},
        )

    def get_task_suffix(self, board: Optional[str] = None) -> str:
        """GEM's per-turn prompt suffix: the board and the request for a move."""
        return f"{board or self._board_block()}\nEnter your move."

    # -------------------------------------------------------------- helpers
    def _board_block(self) -> str:
        return f"{BOARD_HEADER}\n{self.render()}\n"

    def _info(self, success: Optional[bool] = None, board: Optional[str] = None) -> dict[str, Any]:
        """The info of a step that ended the game: its suffix asks for nothing more."""
        info: dict[str, Any] = {"suffix": GAME_OVER_SUFFIX}
        if success is not None:
            info["success"] = success
        return info


def quoted(answer: str) -> str:
    """The agent's boxed answer, shortened and cleaned for an error message."""
    return f"'{preview(answer, 60)}'"


def parse_direction(answer: str) -> str:
    """``up``/``down``/``left``/``right`` (any case) from a boxed answer, else ``ValueError``."""
    word = answer.strip().lower()
    if word not in DIRECTIONS:
        raise ValueError(f"{quoted(answer)} is not one of {', '.join(DIRECTIONS)}")
    return word


def permutation_parity(target: list[int]) -> int:
    """The parity (0 even, 1 odd) of the permutation that sends ``i`` to ``target[i]``: its size
    minus its number of cycles, mod 2."""
    seen, cycles = [False] * len(target), 0
    for start in range(len(target)):
        if not seen[start]:
            cycles += 1
            i = start
            while not seen[i]:
                seen[i] = True
                i = target[i]
    return (len(target) - cycles) % 2


def board_lines(observation: str) -> list[str]:
    """The lines of the last board shown in ``observation`` (for solver agents)."""
    start = observation.rfind(BOARD_HEADER)
    if start < 0:
        raise ValueError("the observation shows no board; solvers need the env's own observations")
    block = observation[start + len(BOARD_HEADER) :].lstrip("\n").split("\n\n", 1)[0]
    return [line for line in block.split("\n") if line.strip()]


def positive_int(name: str, value: Any, low: int = 1, high: Optional[int] = None) -> int:
    """``value`` checked to be an int in ``[low, high]``; ``ValueError`` naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise ValueError(f"{name} must be an int {bound} (or None for the -random preset), got {value!r}.")
    return value


_TURNS = re.compile(r"You have (\d+) turns")


def stated_turns(observation: str) -> int:
    """The turn limit the first observation states (a large number if it states none)."""
    found = _TURNS.search(observation)
    return int(found.group(1)) if found else 1 << 30
