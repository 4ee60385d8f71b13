"""A Minesweeper solver that reads the board from the observation text.

Each turn it parses the board, deduces safe cells and mines from the numbers (single-constraint rules,
then exact enumeration of the frontier), reveals a cell known to be safe, and when none is, reveals
the hidden cell least likely to hold a mine (exact probabilities from the enumeration, weighted by the
ways to place the remaining mines elsewhere). It never flags: known mines are kept in its memory.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any, Optional

from gem.core import Agent


@functools.lru_cache(maxsize=1 << 14)
def neighbours(cell: int, rows: int, cols: int) -> tuple[int, ...]:
    """The (up to 8) cells around ``cell`` on a ``rows`` x ``cols`` board, row by row."""
    r, c = divmod(cell, cols)
    return tuple(
        rr * cols + cc
        for rr in range(max(r - 1, 0), min(r + 2, rows))
        for cc in range(max(c - 1, 0), min(c + 2, cols))
        if rr != r or cc != c
    )

_SIZE = re.compile(r"The board has (\d+) rows and (\d+) columns, numbered from 0, and hides (\d+) mines")
_ROW = re.compile(r"^\s*(\d+)   (.*)$")
MAX_FRONTIER = 48  # enumerate frontier components up to this many cells


class MinesweeperSolver(Agent):
    """Deduction first, exact mine probabilities when deduction runs out."""

    def __init__(self) -> None:
        self.rows = self.cols = self.mines = 0
        self.known_mines: set[int] = set()

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        found = _SIZE.search(observation)
        if found is None:
            raise ValueError("MinesweeperSolver: the first observation does not state the board size.")
        self.rows, self.cols, self.mines = (int(g) for g in found.groups())
        self.known_mines = set()

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        board = self._parse(observation)
        if board is None or all(c == "." for c in board):
            cell = (self.rows // 2) * self.cols + self.cols // 2
        else:
            cell = self._choose(board)
        return f"\\boxed{{reveal {cell // self.cols} {cell % self.cols}}}"

    # ---------------------------------------------------------------- reading
    def _parse(self, observation: str) -> Optional[list[str]]:
        start = observation.rfind("Board (row, column):")
        if start < 0:
            return None
        cells: list[str] = []
        for line in observation[start:].splitlines()[2 : 2 + self.rows]:
            found = _ROW.match(line)
            if found is None:
                return None
            cells.extend(found.group(2).split())
        return cells if len(cells) == self.rows * self.cols else None

    def _neighbours(self, cell: int) -> tuple[int, ...]:
        return neighbours(cell, self.rows, self.cols)

    # --------------------------------------------------------------- thinking
    def _constraints(self, board: list[str]) -> list[tuple[frozenset[int], int]]:
        """(hidden unknown neighbours, mines among them) for every revealed number."""
        out = []
        for cell, mark in enumerate(board):
            if mark.isdigit():
                hidden = [n for n in self._neighbours(cell) if board[n] in ".F"]
                unknown = frozenset(n for n in hidden if n not in self.known_mines)
                if unknown:
                    out.append((unknown, int(mark) - (len(hidden) - len(unknown))))
        return out

    def _choose(self, board: list[str]) -> int:
        safe: set[int] = set()
        changed = True
        while changed and not safe:
            changed = False
            for unknown, need in self._constraints(board):
                if need == 0:
                    safe |= unknown
                elif need == len(unknown):
                    self.known_mines |= unknown
                    changed = True
        if safe:
            return min(safe)
        hidden = [c for c, mark in enumerate(board) if mark in ".F" and c not in self.known_mines]
        return self._least_risky(board, hidden)

    def _least_risky(self, board: list[str], hidden: list[int]) -> int:
        """The hidden cell with the lowest mine probability (0 means certainly safe)."""
        constraints = self._constraints(board)
        frontier = sorted({c for unknown, _ in constraints for c in unknown})
        others = [c for c in hidden if c not in set(frontier)]
        left = self.mines - len(self.known_mines)
        if not frontier or len(frontier) > MAX_FRONTIER:
            return self._fallback(hidden, constraints, left)
        index = {c: i for i, c in enumerate(frontier)}
        cons = [([index[c] for c in unknown], need) for unknown, need in constraints]
        by_cell: list[list[int]] = [[] for _ in frontier]
        for k, (cells, _) in enumerate(cons):
            for i in cells:
                by_cell[i].append(k)
        # Enumerate assignments cell by cell with running sums, pruning as soon as a constraint breaks.
        assigned = [0] * len(frontier)
        sums = [0] * len(cons)
        remaining = [len(cells) for cells, _ in cons]
        # counts[m] = (number of solutions with m frontier mines, per-cell mine tallies)
        counts: dict[int, list[Any]] = {}

        def search(i: int, mines: int) -> None:
            if mines > left:
                return
            if i == len(frontier):
                entry = counts.setdefault(mines, [0, [0] * len(frontier)])
                entry[0] += 1
                tally = entry[1]
                for j, v in enumerate(assigned):
                    if v:
                        tally[j] += 1
                return
            for value in (0, 1):
                ok = True
                for k in by_cell[i]:
                    s = sums[k] + value
                    r = remaining[k] - 1
                    need = cons[k][1]
                    if s > need or s + r < need:
                        ok = False
                        break
                if not ok:
                    continue
                for k in by_cell[i]:
                    sums[k] += value
                    remaining[k] -= 1
                assigned[i] = value
                search(i + 1, mines + value)
                assigned[i] = 0
                for k in by_cell[i]:
                    sums[k] -= value
                    remaining[k] += 1

        search(0, 0)
        total = 0.0
        mine_weight = [0.0] * len(frontier)
        other_mines = 0.0
        for m, (n_solutions, tally) in counts.items():
            rest = left - m
            if rest > len(others):
                continue
            w = math.comb(len(others), rest)
            total += n_solutions * w
            other_mines += n_solutions * w * rest
            for j, t in enumerate(tally):
                mine_weight[j] += t * w
        if total == 0:
            return self._fallback(hidden, constraints, left)
        best = min(range(len(frontier)), key=lambda j: (mine_weight[j], frontier[j]))
        for j, weight in enumerate(mine_weight):
            if weight == total:
                self.known_mines.add(frontier[j])
        best_p = mine_weight[best] / total
        if others:
            p_other = other_mines / total / len(others)
            if p_other < best_p:
                return min(others, key=lambda c: (self._corner_rank(c), c))
        return frontier[best]

    def _corner_rank(self, cell: int) -> int:
        """Corners, then edges: unknown cells there open up more of the board when safe."""
        r, c = divmod(cell, self.cols)
        return (r not in (0, self.rows - 1)) + (c not in (0, self.cols - 1))

    def _fallback(self, hidden: list[int], constraints: list[tuple[frozenset[int], int]], left: int) -> int:
        """Local estimate: a cell's risk is its worst constraint's mine density."""
        risk = {c: left / max(len(hidden), 1) for c in hidden}
        for unknown, need in constraints:
            p = need / len(unknown)
            for c in unknown:
                risk[c] = max(risk[c], p) if c in risk else p
        return min(hidden, key=lambda c: (risk[c], c))
