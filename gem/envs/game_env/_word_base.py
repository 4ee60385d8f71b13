"""What the word games (Wordle, Hangman, WordSearch, Crosswords) share.

:class:`WordGameEnv` runs the episode the same way for each: count the turn, read the last
``\\boxed{...}`` with the game's pattern (no match is a format error that ends the episode, as in GEM),
let the game play the move, and end on success or at the turn limit. :class:`SecretWordEnv` adds the
secret word of Wordle and Hangman; :class:`LetterGridEnv` the letter grid and the basic/hardcore
puzzles of WordSearch and Crosswords.
"""

from __future__ import annotations

import abc
import functools
import random
import re
from typing import Any, Optional

from gem.envs.game_env._prompts import GAME_OVER_SUFFIX, first_request
from gem.core import Env, StepResult
from gem.envs.game_env import words
from gem.envs.game_env._puzzle_base import MAX_ANSWER_CHARS
from gem.envs.game_env._shaping import ProgressReward
from gem.params import Param, check_params, max_turns_param
from gem.utils.parsing import extract_last_boxed_answer
from gem.utils.text import preview

GRID_TITLE = "Grid (row, column):"  # solver agents find the last grid shown by this line
DENSE_REWARD = Param("dense_reward", bool, "progress earns shares of success along the way")


class WordGameEnv(Env, abc.ABC):
    """An episode of a turn-limited word game played through ``\\boxed{...}`` answers.

    Subclasses set ``_pattern`` (what a well-formed answer looks like), ``_noun`` and ``_suffix``, and
    implement ``_new_episode``, ``_play``, ``_answer_hint``, ``_left_over`` and ``render``. ``_play``
    pays progress through ``self.shaping`` (GEM's shaped reward, :mod:`._shaping`); the winning move
    is paid here, the rest of the success reward.
    """

    _pattern: re.Pattern[str]
    _noun = "move"  # "no valid <noun> in ..." when the answer cannot be read
    _suffix = "Enter your next move."
    max_turns: int = 1
    turn_count: int = 0
    shaping_weight = 1.0  # the share of the success reward that progress pays before a win (GEM's)
    shaping: ProgressReward

    def _init_shaping(self, dense_reward: bool) -> None:
        self.shaping = ProgressReward(dense_reward, self.shaping_weight)

    # ------------------------------------------------------------ game hooks
    @abc.abstractmethod
    def _new_episode(self, rng: random.Random) -> str:
        """Draw the episode from ``rng`` (the env's generator) and return the first observation."""

    @abc.abstractmethod
    def _play(self, found: re.Match[str], turn: int) -> tuple[str, float, bool]:
        """Play the read answer: (what happened, reward, whether the game is won).

        On a win the reward is the move's progress credit only (usually 0); :meth:`step` adds the rest.
        """

    @abc.abstractmethod
    def _answer_hint(self) -> str:
        """How to write an answer, for the format-error message."""

    @abc.abstractmethod
    def _left_over(self) -> str:
        """What was still open when the turns ran out, appended to "You have used all N turns"."""

    @abc.abstractmethod
    def render(self) -> str:
        """The game as the player sees it after a move."""

    # ------------------------------------------------------------------ API
    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        self.turn_count = 0
        self.shaping.reset()
        return self._new_episode(self.rng), {"suffix": first_request(self._suffix)}

    def _step(self, action: str) -> StepResult:
        turn = self.turn_count = self.turn_count + 1
        content = extract_last_boxed_answer(action)
        found = self._pattern.fullmatch(content) if content and len(content) <= MAX_ANSWER_CHARS else None
        if found is None:
            return self._result(
                f"Turn {turn}: no valid {self._noun} in '{preview(action, 60)}'. {self._answer_hint()} "
                "The game is over.",
                self.format_error_reward,
                terminated=True,
                info={"suffix": GAME_OVER_SUFFIX, "success": False},
            )
        text, reward, won = self._play(found, turn)
        if won:
            # the move's own progress credit (if any) plus the rest of the success reward
            return self._result(
                text, reward + self.shaping.win(self), terminated=True, info={"suffix": GAME_OVER_SUFFIX, "success": True}
            )
        if turn >= self.max_turns:
            return self._result(
                f"{text}\nYou have used all {self.max_turns} turns{self._left_over()}.",
                reward,
                truncated=True,
                info={"suffix": GAME_OVER_SUFFIX, "success": False},
            )
        # The common case, built directly (no episode end to record).
        return f"{text}\n{self.render()}", float(reward), False, False, {"suffix": self._suffix}

    def get_task_suffix(self) -> str:
        return self._suffix


# ------------------------------------------------------------------------------------ secret word
WORD_PATTERN = re.compile(r"[A-Za-z]+(?: +[A-Za-z]+)*")  # letters; spaces between letters are ignored
MIN_LENGTH, MAX_LENGTH = 3, 9
SECRET_WORD_PARAMS = (
    Param("word_length", int, "letters of the secret word (None: drawn per episode)",
          min=MIN_LENGTH, max=MAX_LENGTH, nullable=True),
    max_turns_param("guesses allowed (None: drawn per episode with word_length)"),
    DENSE_REWARD,
)


def grid_params(max_words: int) -> tuple[Param, ...]:
    """The params of a letter-grid game that holds at most ``max_words`` words."""
    return (
        Param("hardcore", bool, "the harder word lists and layout (None: drawn per episode)", nullable=True),
        max_turns_param("turns allowed (None: drawn per episode)"),
        Param("num_words", int, "words hidden in the grid (None: drawn per episode)", min=1, max=max_words,
              nullable=True),
        DENSE_REWARD,
    )


class SecretWordEnv(WordGameEnv):
    """Find a secret ``word_length``-letter word within ``max_turns`` guesses (Wordle, Hangman).

    ``word_length=None`` or ``max_turns=None`` is the ``-random`` preset: ``_draw_config`` picks both
    per episode.
    """

    _pattern = WORD_PATTERN
    _noun = "guess found"
    _suffix = "Enter your next guess."

    def __init__(
        self,
        word_length: Optional[int],
        max_turns: Optional[int],
        tier: words.Tier,
        random_lengths: tuple[int, ...],
        dense_reward: bool = True,
    ) -> None:
        check_params(self, locals())
        self._init_shaping(dense_reward)
        self._random_params = word_length is None or max_turns is None
        self.word_length = word_length or 5
        self.max_turns = max_turns or 20
        for n in random_lengths if self._random_params else (self.word_length,):
            words.require_words(n, tier, minimum=10)  # fails early if the word lists are missing
        self.secret = ""
        self.turn_count = 0

    def _tier(self) -> words.Tier:
        """The tier the secret is drawn from."""
        return "common"

    @abc.abstractmethod
    def _draw_config(self, rng: random.Random) -> None:
        """Set ``word_length`` and ``max_turns`` for a ``-random`` episode."""

    def _draw_secret(self, rng: random.Random) -> None:
        if self._random_params:
            self._draw_config(rng)
        self.secret = rng.choice(words.words(self.word_length, self._tier())).upper()

    def _random_word(self, rng: random.Random) -> str:
        """A boxed word the secret could be."""
        return "\\boxed{" + rng.choice(words.words(self.word_length, self._tier())).upper() + "}"

    def _example_word(self) -> str:
        """The most common word of the secret's length (upper case), for examples."""
        return words.words(self.word_length, "common")[0].upper()

    def _left_over(self) -> str:
        return f"; the word was {self.secret}"


# ------------------------------------------------------------------------------------ letter grid
class LetterGridEnv(WordGameEnv):
    """A basic or ``hardcore`` grid puzzle of ``num_words`` words (WordSearch, Crosswords).

    Any of ``hardcore``/``max_turns``/``num_words`` set to ``None`` is the ``-random`` preset: a basic
    or hardcore puzzle of ``random_num_words`` words per episode; ``_lay_out`` sets its turns.
    """

    random_num_words: tuple[int, ...] = ()

    def __init__(
        self,
        hardcore: Optional[bool],
        max_turns: Optional[int],
        num_words: Optional[int],
        defaults: tuple[int, int],
        max_words: int,
        dense_reward: bool = True,
    ) -> None:
        check_params(self, locals())
        self._init_shaping(dense_reward)
        self._random_params = hardcore is None or max_turns is None or num_words is None
        self.hardcore = bool(hardcore)
        self.max_turns = max_turns or defaults[0]
        self.num_words = num_words or defaults[1]
        self.turn_count = 0
        self._rows: list[str] = []  # rendered grid lines, redrawn only when a row changes

    @abc.abstractmethod
    def _lay_out(self, rng: random.Random) -> None:
        """Build the puzzle (and the turns of a ``-random`` episode) from ``rng``."""

    @abc.abstractmethod
    def _draw_row(self, r: int) -> str:
        """Row ``r`` of the grid as shown."""

    @abc.abstractmethod
    def _grid_rows(self) -> list[Any]:
        """The grid's rows of cells, as laid out."""

    @abc.abstractmethod
    def _instructions(self) -> str:
        """The rules and the answer format, for the first observation."""

    def _new_episode(self, rng: random.Random) -> str:
        if self._random_params:
            self.hardcore = rng.random() < 0.5
            self.num_words = rng.choice(self.random_num_words)
        self._lay_out(rng)
        self._rows = [self._draw_row(r) for r in range(len(self._grid_rows()))]
        return self._instructions() + "\n\n" + self.render()

    def _grid_lines(self) -> list[str]:
        """The grid as shown: title, column numbers and the rendered rows."""
        return [GRID_TITLE, grid_header(len(self._grid_rows()[0])), *self._rows]


@functools.lru_cache(maxsize=64)
def grid_header(width: int) -> str:
    """The column numbers above a grid ``width`` cells wide."""
    return "    " + "".join(f"{c:>3}" for c in range(width))
