"""Word Search: find the listed words hidden in a grid of letters.

A find is the last ``\\boxed{...}`` in the action holding four numbers, the row and column of a word's
first letter and of its last letter: ``\\boxed{2 0 2 4}`` (rows and columns count from 0; commas and
brackets are tolerated). Either end may come first. Basic puzzles hide common words across (left to
right) or down; ``hardcore`` puzzles hide less common, longer words in all eight directions, backwards
and diagonally included, in a larger grid. Any straight line that spells a listed word counts.

Rewards, as GEM (``dense_reward=True``, the default): each word found pays 1 / number of words, so
finding them all returns 1. With ``dense_reward=False`` only finding the last word pays (1). Misses 0;
an invalid find (off the grid, not a straight line the puzzle allows, a line tried before) 0 and the
turn is spent; no parsable find -0.1 and the episode ends. Running out of turns truncates the episode.
"""

from __future__ import annotations

import random
import re
import string
from typing import Any, Optional

from gem.core import Agent
from gem.envs.game_env import words
from gem.envs.game_env._word_base import GRID_TITLE, LetterGridEnv, grid_params

_NUMBERS = re.compile(
    r"[\s,;()\[\]]*(\d{1,3})[\s,;()\[\]]+(\d{1,3})[\s,;()\[\]]+(\d{1,3})[\s,;()\[\]]+(\d{1,3})[\s,;()\[\]]*"
)
BASIC_DIRECTIONS = ((0, 1), (1, 0))
ALL_DIRECTIONS = ((0, 1), (1, 0), (0, -1), (-1, 0), (1, 1), (-1, -1), (1, -1), (-1, 1))
# (min length, max length, tier, smallest grid side) for basic and hardcore puzzles
BASIC = (3, 6, "common", 8)
HARDCORE = (5, 8, "rare", 11)
RANDOM_NUM_WORDS = (4, 5, 6)


class WordSearchEnv(LetterGridEnv):
    """Find ``num_words`` hidden words within ``max_turns`` turns.

    Any of ``hardcore``/``max_turns``/``num_words`` set to ``None`` draws a basic or hardcore puzzle of
    4 to 6 words with twice as many turns as words, plus 4, per episode (the ``-random`` preset).
    """

    _pattern = _NUMBERS
    _noun = "find"
    _suffix = "Enter your next find."
    random_num_words = RANDOM_NUM_WORDS
    PARAMS = grid_params(max_words=20)

    def __init__(
        self,
        hardcore: Optional[bool] = False,
        max_turns: Optional[int] = 20,
        num_words: Optional[int] = 5,
        dense_reward: bool = True,
    ) -> None:
        super().__init__(hardcore, max_turns, num_words, defaults=(20, 5), max_words=20, dense_reward=dense_reward)
        for mode in (BASIC, HARDCORE):
            words.words_between(mode[0], mode[1], mode[2])  # fails early if the word lists are missing
        self.grid: list[str] = []
        self.size = 0
        self.targets: list[str] = []
        self.found: list[str] = []
        self.highlight: set[tuple[int, int]] = set()
        self.tried: set[tuple[int, int, int, int]] = set()

    # ------------------------------------------------------------------ API
    def sample_random_action(self) -> str:
        rng = self.action_rng
        r, c = rng.randrange(self.size), rng.randrange(self.size)
        dr, dc = rng.choice(ALL_DIRECTIONS if self.hardcore else BASIC_DIRECTIONS)
        length = rng.randint(2, 6)
        r2 = min(max(r + dr * length, 0), self.size - 1)
        c2 = min(max(c + dc * length, 0), self.size - 1)
        return f"\\boxed{{{r} {c} {r2} {c2}}}"

    def make_solver(self) -> Agent:
        return WordSearchSolver()

    # ------------------------------------------------------------ game hooks
    def _lay_out(self, rng: random.Random) -> None:
        if self._random_params:
            self.max_turns = 2 * self.num_words + 4
        self._generate()
        self.found = []
        self.highlight = set()
        self.tried = set()

    def _grid_rows(self) -> list[str]:
        return self.grid

    def _play(self, found: re.Match[str], turn: int) -> tuple[str, float, bool]:
        r1, c1, r2, c2 = map(int, found.groups())
        line = f"({r1}, {c1}) to ({r2}, {c2})"
        step = self._direction(r1, c1, r2, c2)
        if max(r1, c1, r2, c2) >= self.size:
            return (
                f"Turn {turn}: {line} leaves the grid; rows and columns go from 0 to {self.size - 1}.",
                self.invalid_action_reward,
                False,
            )
        if step is None:
            allowed = (
                "a straight line across, down or diagonal"
                if self.hardcore
                else "a straight line across or down"
            )
            return f"Turn {turn}: {line} is not {allowed}.", self.invalid_action_reward, False
        if (r1, c1, r2, c2) in self.tried or (r2, c2, r1, c1) in self.tried:
            return f"Turn {turn}: you already tried {line}.", self.invalid_action_reward, False
        self.tried.add((r1, c1, r2, c2))
        cells = [(r1 + k * step[0], c1 + k * step[1]) for k in range(max(abs(r2 - r1), abs(c2 - c1)) + 1)]
        grid = self.grid
        text = "".join([grid[r][c] for r, c in cells])
        word = next((w for w in (text, text[::-1]) if w in self.targets and w not in self.found), None)
        if word is None:
            return (
                f"Turn {turn}: {line} reads {text}, which is not a word left to find.",
                self.internal_step_reward,
                False,
            )
        self.found.append(word)
        self.highlight.update(cells)
        for r in {r for r, _ in cells}:
            self._rows[r] = self._draw_row(r)
        if len(self.found) == len(self.targets):
            return (
                f"Turn {turn}: found {word}. You found all {len(self.targets)} words!\n{self.render()}",
                self.internal_step_reward,  # the win itself is paid by WordGameEnv.step
                True,
            )
        reward = self.shaping.progress(len(self.found) / len(self.targets), self)
        return f"Turn {turn}: found {word} at {line}.", reward, False

    def _answer_hint(self) -> str:
        return "A find is \\boxed{START_ROW START_COL END_ROW END_COL}, e.g. \\boxed{0 0 0 3}."

    def _left_over(self) -> str:
        return f"; you found {len(self.found)} of {len(self.targets)} words"

    # -------------------------------------------------------------- helpers
    def render(self) -> str:
        """The grid (found letters in brackets), the word list and the turns left."""
        lines = self._grid_lines()
        listed = [f"{w} (found)" if w in self.found else w for w in self.targets]
        lines.append("Words to find: " + ", ".join(listed))
        lines.append(
            f"Found {len(self.found)} of {len(self.targets)}. Turns left: {self.max_turns - self.turn_count}."
        )
        return "\n".join(lines)

    def _draw_row(self, r: int) -> str:
        line = self.grid[r]
        if not any(cell[0] == r for cell in self.highlight):
            return f"{r:>3}  " + "  ".join(line) + " "
        cells = "".join(f"[{ch}]" if (r, c) in self.highlight else f" {ch} " for c, ch in enumerate(line))
        return f"{r:>3} {cells}"

    def _direction(self, r1: int, c1: int, r2: int, c2: int) -> Optional[tuple[int, int]]:
        """The unit step from start to end if the line is one the puzzle allows (a cell alone is not)."""
        dr, dc = r2 - r1, c2 - c1
        if (dr, dc) == (0, 0) or (dr and dc and abs(dr) != abs(dc)):
            return None
        step = ((dr > 0) - (dr < 0), (dc > 0) - (dc < 0))
        if not self.hardcore and step[0] and step[1]:
            return None
        return step

    def _generate(self) -> None:
        rng = self.rng
        low, high, tier, min_side = HARDCORE if self.hardcore else BASIC
        pool = words.words_between(low, high, tier)
        chosen: list[str] = []
        while len(chosen) < self.num_words:
            w = rng.choice(pool).upper()
            if all(w not in c and c not in w for c in chosen):  # no word hides inside another
                chosen.append(w)
        letters = sum(map(len, chosen))
        side = max(min_side, max(map(len, chosen)) + 1)
        while side * side < 3 * letters:
            side += 1
        directions = ALL_DIRECTIONS if self.hardcore else BASIC_DIRECTIONS
        while True:
            grid = self._place(chosen, side, directions)
            if grid is not None:
                break
            side += 1
        filler = iter(rng.choices(string.ascii_uppercase, k=side * side))
        for r in range(side):
            for c in range(side):
                letter = next(filler)
                if grid[r][c] == "":
                    grid[r][c] = letter
        self.size = side
        self.grid = ["".join(row) for row in grid]
        self.targets = sorted(chosen, key=lambda w: (-len(w), w))

    def _place(
        self, chosen: list[str], side: int, directions: tuple[tuple[int, int], ...]
    ) -> Optional[list[list[str]]]:
        """Lay the words into an empty grid (sharing matching letters), or None after too many tries."""
        rng = self.rng
        grid = [[""] * side for _ in range(side)]
        for word in sorted(chosen, key=len, reverse=True):
            for _ in range(200):
                dr, dc = rng.choice(directions)
                rows = range(max(0, -dr * (len(word) - 1)), side - max(0, dr * (len(word) - 1)))
                cols = range(max(0, -dc * (len(word) - 1)), side - max(0, dc * (len(word) - 1)))
                r, c = rng.choice(rows), rng.choice(cols)
                cells = [(r + k * dr, c + k * dc) for k in range(len(word))]
                if all(grid[y][x] in ("", ch) for (y, x), ch in zip(cells, word)):
                    for (y, x), ch in zip(cells, word):
                        grid[y][x] = ch
                    break
            else:
                return None
        return grid

    def _instructions(self) -> str:
        where = (
            "Words run in any of the eight directions: across, down or diagonally, forwards or backwards."
            if self.hardcore
            else "Words run across (left to right) or down (top to bottom)."
        )
        return (
            f"You are playing Word Search ({'hardcore' if self.hardcore else 'basic'}).\n"
            f"Find all {self.num_words} listed words hidden in the {self.size} x {self.size} grid within "
            f"{self.max_turns} turns. {where}\n"
            "To mark a word, give the row and column of its first letter and of its last letter, numbered from "
            "0, inside \\boxed{}: \\boxed{2 0 2 4} marks the word from row 2, column 0 to row 2, column 4. Only "
            "the last \\boxed{} in your reply counts. Found letters are shown in [brackets].\n"
            "A line off the grid, a line the puzzle does not allow, or a line you tried before wastes the turn; "
            "a reply without a boxed find ends the game."
        )


# ---------------------------------------------------------------------------------------- solver
_ROW = re.compile(r"^\s*(\d+) ((?:[ \[][A-Z][ \]])+)$")
_LIST = re.compile(r"^Words to find: (.*)$", re.M)


class WordSearchSolver(Agent):
    """Reads the grid and the word list, then marks each remaining word where it is spelled."""

    def __init__(self) -> None:
        self.directions: tuple[tuple[int, int], ...] = BASIC_DIRECTIONS

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        self.directions = ALL_DIRECTIONS if "any of the eight directions" in observation else BASIC_DIRECTIONS

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        start = observation.rfind(GRID_TITLE)
        grid = [
            m.group(2)[1::3] for m in (_ROW.match(line) for line in observation[start:].splitlines()) if m
        ]
        listed = _LIST.search(observation, start)
        if start < 0 or not grid or listed is None:
            raise RuntimeError("WordSearchSolver: the observation does not show the grid and the word list.")
        remaining = [w for w in listed.group(1).split(", ") if not w.endswith("(found)")]
        for word in remaining:
            spot = self._locate(grid, word)
            if spot is not None:
                return "\\boxed{%d %d %d %d}" % spot
        raise RuntimeError(f"WordSearchSolver: none of {remaining} is in the grid.")

    def _locate(self, grid: list[str], word: str) -> Optional[tuple[int, int, int, int]]:
        size, n = len(grid), len(word)
        for r in range(size):
            for c in range(size):
                if grid[r][c] != word[0]:
                    continue
                for dr, dc in self.directions:
                    r2, c2 = r + dr * (n - 1), c + dc * (n - 1)
                    if (
                        0 <= r2 < size
                        and 0 <= c2 < size
                        and all(grid[r + k * dr][c + k * dc] == word[k] for k in range(n))
                    ):
                        return r, c, r2, c2
        return None
