"""Crosswords: fill a small crossword from its clues, one letter per turn.

A move is the last ``\\boxed{...}`` in the action: ``\\boxed{ROW COL LETTER}``, e.g. ``\\boxed{0 2 A}`` (rows
and columns count from 0). Every clue gives its number, direction, starting cell and length. A right
letter is written into the grid; a wrong one is refused (as in GEM) and costs the turn. Basic puzzles
use everyday words with plain clues (:data:`crosswords_clues.EASY`); ``hardcore`` puzzles use longer,
rarer words with terser clues (:data:`crosswords_clues.HARD`). The clues were written for this project.

Rewards, as GEM (``dense_reward=True``, the default): each right letter pays its share of the letter
cells (1 / cells), so a completed grid returns 1. With ``dense_reward=False`` only completing the grid
pays (1). Wrong letters 0; an invalid move (off the grid, a black square, a filled cell) 0 and the turn
is spent; no parsable move -0.1 and the episode ends. Running out of turns truncates the episode.
"""

from __future__ import annotations

import random
import re
from typing import Any, Optional

from gem.core import Agent
from gem.envs.game_env import crosswords_clues
from gem.envs.game_env._word_base import GRID_TITLE, LetterGridEnv, grid_params

_MOVE = re.compile(r"[\s\[(]*(\d{1,3})[\s,]+(\d{1,3})[\s,:=]+([A-Za-z])[\s\])]*")
ACROSS, DOWN = (0, 1), (1, 0)
RANDOM_NUM_WORDS = (3, 4)
RANDOM_SPARE_TURNS = 10  # -random: turns = letter cells + this
_BANKS = {False: crosswords_clues.EASY, True: crosswords_clues.HARD}

Placement = tuple[str, int, int, tuple[int, int]]  # (word, row, col, direction)


class CrosswordsEnv(LetterGridEnv):
    """Complete a crossword of ``num_words`` crossing words within ``max_turns`` letters.

    Any of ``hardcore``/``max_turns``/``num_words`` set to ``None`` draws a basic or hardcore puzzle of
    3 or 4 words with :data:`RANDOM_SPARE_TURNS` more turns than letter cells (the ``-random`` preset).
    """

    reset_before_first_step = True  # a step before reset plays in a fresh episode

    _pattern = _MOVE
    _suffix = "Enter your next letter."
    random_num_words = RANDOM_NUM_WORDS
    PARAMS = grid_params(max_words=8)

    def __init__(
        self,
        hardcore: Optional[bool] = False,
        max_turns: Optional[int] = 30,
        num_words: Optional[int] = 3,
        dense_reward: bool = True,
    ) -> None:
        super().__init__(hardcore, max_turns, num_words, defaults=(30, 3), max_words=8, dense_reward=dense_reward)
        self.solution: list[list[str]] = []  # letter or "." per cell
        self.board: list[list[str]] = []  # what the player sees: "_", "." or a letter
        self.placements: list[Placement] = []
        self.numbers: dict[tuple[int, int], int] = {}
        self.blanks = 0
        self.letter_cells = 0  # cells to fill this episode
        self._clues = ""  # the clue list as rendered (fixed for the episode)

    # ------------------------------------------------------------------ API
    def sample_random_action(self) -> str:
        rng = self.action_rng
        empty = [(r, c) for r, line in enumerate(self.board) for c, v in enumerate(line) if v == "_"]
        r, c = rng.choice(empty) if empty else (0, 0)
        return f"\\boxed{{{r} {c} {rng.choice('ABCDEFGHIJKLMNOPQRSTUVWXYZ')}}}"

    def make_solver(self) -> Agent:
        return CrosswordsSolver()

    # ------------------------------------------------------------ game hooks
    def _lay_out(self, rng: random.Random) -> None:
        self._generate()
        self.letter_cells = self.blanks
        if self._random_params:
            self.max_turns = self.blanks + RANDOM_SPARE_TURNS
        self._clues = self._clue_text()

    def _grid_rows(self) -> list[list[str]]:
        return self.board

    def _play(self, found: re.Match[str], turn: int) -> tuple[str, float, bool]:
        row, col, letter = int(found.group(1)), int(found.group(2)), found.group(3).upper()
        board = self.board
        rows, cols = len(board), len(board[0])
        if row >= rows or col >= cols:
            return (
                f"Turn {turn}: ({row}, {col}) is off the grid; rows go from 0 to {rows - 1}, columns from 0 to {cols - 1}.",
                self.invalid_action_reward,
                False,
            )
        cell = board[row][col]
        if cell == ".":
            return (
                f"Turn {turn}: ({row}, {col}) is a black square; only '_' cells take letters.",
                self.invalid_action_reward,
                False,
            )
        if cell != "_":
            return f"Turn {turn}: ({row}, {col}) already holds {cell}.", self.invalid_action_reward, False
        if self.solution[row][col] != letter:
            return f"Turn {turn}: {letter} does not belong at ({row}, {col}).", self.internal_step_reward, False
        board[row][col] = letter
        self._rows[row] = self._draw_row(row)
        self.blanks -= 1
        if self.blanks == 0:
            return (
                f"Turn {turn}: {letter} at ({row}, {col}) completes the crossword. Well done!\n{self._grid_text()}",
                self.internal_step_reward,  # the win itself is paid by WordGameEnv.step
                True,
            )
        reward = self.shaping.progress(1 - self.blanks / self.letter_cells, self)
        return f"Turn {turn}: {letter} is right at ({row}, {col}).", reward, False

    def _answer_hint(self) -> str:
        return "A move is \\boxed{ROW COL LETTER}, e.g. \\boxed{0 0 A}."

    def _left_over(self) -> str:
        return f" with {self.blanks} cell(s) still empty"

    # -------------------------------------------------------------- helpers
    def render(self) -> str:
        """The grid, the clues and the turns left."""
        return (
            f"{self._grid_text()}\n{self._clues}\n"
            f"Empty cells: {self.blanks}. Turns left: {self.max_turns - self.turn_count}."
        )

    def _clue_text(self) -> str:
        clues = ["Clues:"]
        for word, r, c, d in sorted(self.placements, key=lambda p: (self.numbers[p[1], p[2]], p[3] == DOWN)):
            name = "Across" if d == ACROSS else "Down"
            clue = _BANKS[self.hardcore][word.lower()]
            clues.append(
                f"{self.numbers[r, c]} {name} (starts at row {r}, column {c}; {len(word)} letters): {clue}"
            )
        return "\n".join(clues)

    def _draw_row(self, r: int) -> str:
        return f"{r:>3} " + "".join(f"{v:>3}" for v in self.board[r])

    def _grid_text(self) -> str:
        return "\n".join(self._grid_lines())

    def _generate(self) -> None:
        """Lay ``num_words`` words from the bank so that each crosses one laid before it."""
        rng = self.rng
        bank = sorted(_BANKS[self.hardcore])
        while True:
            order = rng.sample(bank, len(bank))
            cells: dict[tuple[int, int], str] = {}
            dirs: dict[tuple[int, int], set[tuple[int, int]]] = {}
            placed: list[Placement] = []
            for word in order:
                word = word.upper()
                spots = [(0, 0, ACROSS)] if not placed else self._spots(word, cells, dirs)
                if not spots:
                    continue
                r, c, d = rng.choice(spots)
                for k, ch in enumerate(word):
                    cell = (r + k * d[0], c + k * d[1])
                    cells[cell] = ch
                    dirs.setdefault(cell, set()).add(d)
                placed.append((word, r, c, d))
                if len(placed) == self.num_words:
                    break
            if len(placed) == self.num_words:
                break
        top = min(r for r, _ in cells)
        left = min(c for _, c in cells)
        height = max(r for r, _ in cells) - top + 1
        width = max(c for _, c in cells) - left + 1
        self.solution = [["."] * width for _ in range(height)]
        for (r, c), ch in cells.items():
            self.solution[r - top][c - left] = ch
        self.board = [["_" if ch != "." else "." for ch in line] for line in self.solution]
        self.blanks = len(cells)
        self.placements = [(w, r - top, c - left, d) for w, r, c, d in placed]
        starts = sorted({(r, c) for _, r, c, _ in self.placements})
        self.numbers = {cell: k for k, cell in enumerate(starts, 1)}

    @staticmethod
    def _spots(
        word: str, cells: dict[tuple[int, int], str], dirs: dict[tuple[int, int], set[tuple[int, int]]]
    ) -> list[tuple[int, int, tuple[int, int]]]:
        """Every placement of ``word`` crossing a laid word without touching any other letter."""
        spots = []
        for (cr, cc), ch in cells.items():
            if len(dirs[cr, cc]) > 1:
                continue  # already a crossing
            d = DOWN if ACROSS in dirs[cr, cc] else ACROSS
            side = (d[1], d[0])
            for k, wch in enumerate(word):
                if wch != ch:
                    continue
                r, c = cr - k * d[0], cc - k * d[1]
                before, after = (r - d[0], c - d[1]), (r + len(word) * d[0], c + len(word) * d[1])
                if before in cells or after in cells:
                    continue
                ok = True
                for j, letter in enumerate(word):
                    cell = (r + j * d[0], c + j * d[1])
                    if cell in cells:
                        if cells[cell] != letter or d in dirs[cell]:
                            ok = False
                            break
                    elif (cell[0] + side[0], cell[1] + side[1]) in cells or (
                        cell[0] - side[0],
                        cell[1] - side[1],
                    ) in cells:
                        ok = False
                        break
                if ok:
                    spots.append((r, c, d))
        return sorted(set(spots))

    def _instructions(self) -> str:
        kind = "hardcore: longer, rarer words" if self.hardcore else "basic: everyday words"
        return (
            f"You are playing Crosswords ({kind}).\n"
            f"Fill every empty cell of the crossword below within {self.max_turns} turns. Each clue gives its "
            "number, direction (Across runs left to right, Down top to bottom), the row and column of its first "
            "letter, and its length. Crossing words share a letter.\n"
            "Each turn, write one letter into one cell inside \\boxed{ROW COL LETTER} (rows and columns numbered "
            "from 0), e.g. \\boxed{0 2 A}; only the last \\boxed{} in your reply counts. A right letter is written "
            "in; a wrong letter is refused and uses the turn. A cell off the grid, a black square ('.') or a "
            "filled cell wastes the turn; a reply without a boxed move ends the game. Empty cells are shown as '_'."
        )


# ---------------------------------------------------------------------------------------- solver
_CLUE = re.compile(r"^\d+ (Across|Down) \(starts at row (\d+), column (\d+); (\d+) letters\): (.+)$", re.M)
_ROW = re.compile(r"^\s*(\d+) ((?:  [A-Z_.])+)$", re.M)


class CrosswordsSolver(Agent):
    """Knows the clue bank: reads each clue's answer, then fills the empty cells one by one."""

    def __init__(self) -> None:
        self.answers = {clue: word.upper() for bank in _BANKS.values() for word, clue in bank.items()}
        self.letters: dict[tuple[int, int], str] = {}

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        self.letters = {}
        for direction, r, c, length, clue in _CLUE.findall(observation):
            word = self.answers.get(clue.strip())
            if word is None or len(word) != int(length):
                raise ValueError(f"CrosswordsSolver: no answer of {length} letters for the clue {clue!r}.")
            d = ACROSS if direction == "Across" else DOWN
            for k, ch in enumerate(word):
                self.letters[int(r) + k * d[0], int(c) + k * d[1]] = ch

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        start = observation.rfind(GRID_TITLE)
        for found in _ROW.finditer(observation, start):
            r = int(found.group(1))
            for c, mark in enumerate(found.group(2)[2::3]):
                if mark == "_":
                    return f"\\boxed{{{r} {c} {self.letters[r, c]}}}"
        raise RuntimeError("CrosswordsSolver: the observation shows no empty cell.")
