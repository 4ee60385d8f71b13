"""Sudoku on a 4x4 or 9x9 grid, generated with exactly one solution.

A move fills one empty cell: ``\\boxed{row column digit}`` (1-based; spaces or commas between).
Rewards as in GEM: a right digit earns ``1 / (empty cells at the start)``, so a solved puzzle sums to
1; a digit that breaks a rule or is not the solution's, a given or filled cell, or numbers out of
range earn 0 and the game goes on (the observation says which); an answer that cannot be read
-0.1 and the episode ends.

Generation is fast: a solved grid is a base pattern under random symmetries (relabelled digits,
rows and columns shuffled within their bands, bands shuffled, transposition), the clues are a
random sample of its cells, and while a second solution exists one cell where it differs becomes a
clue too. So a puzzle has at least ``clues`` clues and always exactly one solution.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any, Optional

from gem.core import Agent
from gem.envs.game_env._puzzle_base import Illegal, PuzzleEnv, board_lines, quoted
from gem.params import Param, check_params, max_turns_param

SCALES = (4, 9)
RANDOM_PRESETS = ((4, 10, 15), (9, 50, 50))  # (scale, clues, max_turns) drawn by -random, as GEM
_NUMBERS = re.compile(r"\s*(\d{1,3})\s*[,\s]\s*(\d{1,3})\s*[,\s]\s*(\d{1,3})\s*")


class SudokuEnv(PuzzleEnv[tuple[int, int, int]]):
    """A ``scale``-by-``scale`` Sudoku with about ``clues`` givens and ``max_turns`` moves.

    Any of ``clues``/``max_turns``/``scale`` set to ``None`` draws all three per episode from GEM's
    -random presets.
    """

    PARAMS = (
        Param("clues", int, "cells filled in at the start, fewer than scale**2 (None: drawn per episode)",
              min=1, max=max(SCALES) ** 2 - 1, nullable=True),
        max_turns_param("moves allowed, at least the empty cells (None: drawn per episode)"),
        Param("scale", int, "rows (and columns) of the grid (None: drawn per episode)", choices=SCALES,
              nullable=True),
    )

    def __init__(self, clues: Optional[int] = 30, max_turns: Optional[int] = 100, scale: Optional[int] = 9) -> None:
        check_params(self, locals())
        self._random_params = clues is None or max_turns is None or scale is None
        if not self._random_params:
            if clues >= scale * scale:  # type: ignore[operator]
                raise ValueError(f"clues={clues} is too many for a {scale}x{scale} grid: at most {scale * scale - 1}.")
            if scale * scale - clues > max_turns:  # type: ignore[operator]
                raise ValueError(
                    f"max_turns={max_turns} is too few: {scale * scale - clues} cells are empty "  # type: ignore[operator]
                    "and each move fills one; raise max_turns or clues."
                )
            self.scale, self.clues, self.max_turns = scale, clues, max_turns
        else:
            self.scale, self.clues, self.max_turns = RANDOM_PRESETS[0]
        self.board: list[list[int]] = []
        self.full_grid: list[list[int]] = []
        self.init_num_empty = 0

    @property
    def title(self) -> str:  # type: ignore[override]
        return f"Sudoku ({self.scale}x{self.scale})"

    # ----------------------------------------------------------- the game
    def _new_game(self) -> None:
        if self._random_params:
            self.scale, self.clues, self.max_turns = self.rng.choice(RANDOM_PRESETS)
        self.full_grid, self.board = generate(self.scale, self.clues, self.rng)
        self.init_num_empty = sum(row.count(0) for row in self.board)

    def _rules(self) -> str:
        n, b = self.scale, _box(self.scale)
        return (
            f"Fill the empty cells (shown as .) of the {n}x{n} grid with digits 1 to {n} so that every "
            f"row, every column and every {b}x{b} box holds each digit exactly once. The puzzle has "
            "exactly one solution.\n"
            f"Rows are numbered 1 to {n} from the top and columns 1 to {n} from the left. A move fills "
            "one empty cell: row, column, digit. Given cells and cells you filled cannot be changed; "
            "a digit that is not the solution's is refused."
        )

    def _example(self) -> str:
        return "\\boxed{1 2 3}"

    def _parse(self, answer: str) -> tuple[int, int, int]:
        found = _NUMBERS.fullmatch(answer)
        if found is None:
            raise ValueError(f"{quoted(answer)} is not three whole numbers (row column digit)")
        return int(found.group(1)), int(found.group(2)), int(found.group(3))

    def _apply(self, move: tuple[int, int, int]) -> tuple[str, float]:
        row, col, digit = move
        n = self.scale
        if not (1 <= row <= n and 1 <= col <= n and 1 <= digit <= n):
            raise Illegal(f"row {row}, column {col}, digit {digit} is out of range; each must be 1 to {n}.")
        r, c = row - 1, col - 1
        if self.board[r][c]:
            raise Illegal(f"row {row}, column {col} already holds {self.board[r][c]}; fill an empty cell.")
        clash = _clash(self.board, r, c, digit)
        if clash:
            raise Illegal(f"{digit} at row {row}, column {col} repeats the {digit} in the same {clash}.")
        if self.full_grid[r][c] != digit:
            raise Illegal(f"{digit} at row {row}, column {col} breaks no rule yet, but leaves the puzzle with no solution.")
        self.board[r][c] = digit
        return f"you placed {digit} at row {row}, column {col}.", self.success_reward / self.init_num_empty

    def _solved(self) -> bool:
        return all(all(row) for row in self.board)

    def _success_reward(self, move_reward: float) -> float:
        return move_reward  # GEM's dense scale: the right digits of a solved puzzle sum to success_reward

    def render(self) -> str:
        layout, cells = _layout(self.scale)
        return layout.format(*[cells[v] for row in self.board for v in row])

    # ---------------------------------------------------------- agents
    def sample_random_action(self) -> str:
        empty = [(r, c) for r in range(self.scale) for c in range(self.scale) if not self.board[r][c]]
        r, c = self.action_rng.choice(empty) if empty else (0, 0)
        return f"\\boxed{{{r + 1} {c + 1} {self.action_rng.randint(1, self.scale)}}}"

    def make_solver(self) -> Agent:
        return SudokuSolver()


# ------------------------------------------------------------- grids
@functools.lru_cache(maxsize=None)
def _layout(n: int) -> tuple[str, tuple[str, ...]]:
    """The board's format string for scale ``n`` (one ``{}`` per cell) and each value's cell text."""
    b, width = _box(n), len(str(n))

    def group(cells: list[str]) -> str:
        return " | ".join(" ".join(cells[i : i + b]) for i in range(0, n, b))

    lines = ["   " + group([f"{c + 1:>{width}}" for c in range(n)])]
    for r in range(n):
        if r and r % b == 0:
            lines.append("   " + "-+-".join("-" * (b * (width + 1) - 1) for _ in range(b)))
        lines.append(f"{r + 1:>2} " + group(["{}"] * n))
    cells = ("." * width,) + tuple(f"{v:>{width}}" for v in range(1, n + 1))
    return "\n".join(lines), cells


def _box(n: int) -> int:
    return math.isqrt(n)


def _clash(board: list[list[int]], r: int, c: int, digit: int) -> str:
    """Which unit of cell (r, c) already holds ``digit`` ("row", "column", "box"), or ""."""
    b = _box(len(board))
    if digit in board[r]:
        return "row"
    if any(board[i][c] == digit for i in range(len(board))):
        return "column"
    br, bc = r - r % b, c - c % b
    if any(board[i][j] == digit for i in range(br, br + b) for j in range(bc, bc + b)):
        return "box"
    return ""


def solved_grid(n: int, rng: Any) -> list[list[int]]:
    """A random complete grid: the base pattern under random validity-preserving symmetries."""
    b = _box(n)
    digits = list(range(1, n + 1))
    rng.shuffle(digits)

    def order() -> list[int]:
        bands = list(range(b))
        rng.shuffle(bands)
        out = []
        for band in bands:
            inner = list(range(b))
            rng.shuffle(inner)
            out += [band * b + i for i in inner]
        return out

    rows, cols = order(), order()
    grid = [[digits[(b * (r % b) + r // b + c) % n] for c in cols] for r in rows]
    if rng.random() < 0.5:
        grid = [list(col) for col in zip(*grid)]
    return grid


def solutions(board: list[list[int]], limit: int = 2) -> list[list[list[int]]]:
    """Up to ``limit`` solutions of ``board`` (0 for empty): depth-first, fewest candidates first."""
    n = len(board)
    b = _box(n)
    full = (1 << (n + 1)) - 2
    cells = [board[r][c] for r in range(n) for c in range(n)]
    row_used, col_used, box_used = [0] * n, [0] * n, [0] * n
    box_of = [(i // n) // b * b + (i % n) // b for i in range(n * n)]
    empty = []
    for i, v in enumerate(cells):
        if v:
            bit = 1 << v
            r, c, x = i // n, i % n, box_of[i]
            if (row_used[r] | col_used[c] | box_used[x]) & bit:
                return []  # the givens already break a rule
            row_used[r] |= bit
            col_used[c] |= bit
            box_used[x] |= bit
        else:
            empty.append(i)
    found: list[list[list[int]]] = []

    def search(open_cells: list[int]) -> None:
        if not open_cells:
            found.append([cells[r * n : (r + 1) * n] for r in range(n)])
            return
        best, best_mask, best_count = -1, 0, n + 1
        for i in open_cells:
            mask = full & ~(row_used[i // n] | col_used[i % n] | box_used[box_of[i]])
            count = mask.bit_count()
            if count < best_count:
                best, best_mask, best_count = i, mask, count
                if count <= 1:
                    break
        if best_count == 0:
            return
        rest = [i for i in open_cells if i != best]
        r, c, x = best // n, best % n, box_of[best]
        while best_mask and len(found) < limit:
            bit = best_mask & -best_mask
            best_mask ^= bit
            cells[best] = bit.bit_length() - 1
            row_used[r] |= bit
            col_used[c] |= bit
            box_used[x] |= bit
            search(rest)
            row_used[r] ^= bit
            col_used[c] ^= bit
            box_used[x] ^= bit
        cells[best] = 0

    search(empty)
    return found


def generate(n: int, clues: int, rng: Any) -> tuple[list[list[int]], list[list[int]]]:
    """(solution, puzzle) with at least ``clues`` givens and exactly one solution."""
    solution = solved_grid(n, rng)
    kept = set(rng.sample(range(n * n), clues))
    while True:
        puzzle = [[solution[r][c] if r * n + c in kept else 0 for c in range(n)] for r in range(n)]
        found = solutions(puzzle, limit=2)
        other = next((s for s in found if s != solution), None)
        if other is None:
            return solution, puzzle
        differ = [r * n + c for r in range(n) for c in range(n) if other[r][c] != solution[r][c]]
        kept.add(rng.choice(differ))


_ROW = re.compile(r"^\s*(\d+)\s+(.*)$")


def read_grid(observation: str) -> list[list[int]]:
    """The grid shown last in ``observation`` (0 for empty cells)."""
    grid = []
    for line in board_lines(observation)[1:]:
        found = _ROW.match(line)
        if found is None:
            continue  # a box separator
        grid.append([0 if cell.startswith(".") else int(cell) for cell in found.group(2).split() if cell != "|"])
    return grid


class SudokuSolver(Agent):
    """Solves the grid in the first observation, then fills one cell per turn."""

    def __init__(self) -> None:
        self.plan: list[tuple[int, int, int]] = []

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        grid = read_grid(observation)
        found = solutions(grid, limit=1)
        if not found:
            raise ValueError("SudokuSolver: the grid in the observation has no solution.")
        self.plan = [(r + 1, c + 1, found[0][r][c]) for r in range(len(grid)) for c in range(len(grid)) if not grid[r][c]]

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        if not self.plan:
            self.reset(observation)
        row, col, digit = self.plan.pop(0)
        return f"\\boxed{{{row} {col} {digit}}}"
