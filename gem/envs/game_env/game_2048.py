"""2048: slide the tiles, merge equal neighbours, reach the target tile.

A move is ``\\boxed{up}``, ``down``, ``left`` or ``right`` (any case). After every move that changes
the board a 2 (90%) or a 4 (10%) appears on a random empty cell. Rewards as in GEM: each new
highest tile earns its share of the way to the target on a log scale, so a won game sums to 1; a
move that changes nothing 0 (the game goes on); an answer that cannot be read -0.1 and the episode
ends. The game ends when the target appears (success), when no move can change the board, or at
the turn limit.

The sum of the tiles grows only by the new tiles (at most 4 a turn), so a target above
``4 * (max_turns + 2)`` cannot be reached: GEM's ``hard`` (512 in 50 turns) and ``extreme-hard``
(2048 in 100 turns) presets are unwinnable by construction; they are kept because GEM has them.
"""

from __future__ import annotations

import math
from functools import lru_cache
from itertools import pairwise
from typing import Any, Optional

from gem.core import Agent
from gem.envs.game_env._puzzle_base import (
    DIRECTIONS,
    Illegal,
    PuzzleEnv,
    board_lines,
    parse_direction,
)
from gem.params import Param, check_params, max_turns_param

RANDOM_PRESETS = ((16, 20), (32, 30), (64, 50))  # (target_tile, max_turns) drawn by -random, as GEM
FOUR_PROBABILITY = 0.1
BOARD_SIZES = range(2, 9)
CONSOLIDATION_WEIGHT = 20.0  # chosen by measuring wins on the easy preset (weights 1, 5, 20, 100)

Board = list[list[int]]


@lru_cache(maxsize=1 << 16)
def slide_line(line: tuple[int, ...]) -> tuple[int, ...]:
    """``line`` slid towards its start, each pair of equal neighbours merged once."""
    tiles = [v for v in line if v]
    out: list[int] = []
    i = 0
    while i < len(tiles):
        if i + 1 < len(tiles) and tiles[i] == tiles[i + 1]:
            out.append(tiles[i] * 2)
            i += 2
        else:
            out.append(tiles[i])
            i += 1
    return tuple(out + [0] * (len(line) - len(out)))


def slide(board: Board, direction: str) -> Board:
    """The board after sliding every tile towards ``direction`` (before the new tile appears)."""
    if direction in ("left", "right"):
        lines = [tuple(row) for row in board]
    else:
        lines = [tuple(col) for col in zip(*board)]
    reverse = direction in ("right", "down")
    moved = [slide_line(line[::-1])[::-1] if reverse else slide_line(line) for line in lines]
    if direction in ("left", "right"):
        return [list(line) for line in moved]
    return [list(row) for row in zip(*moved)]


class Game2048Env(PuzzleEnv[str]):
    """2048 on a ``board_size`` square board: reach ``target_tile`` within ``max_turns`` moves.

    ``target_tile=None`` or ``max_turns=None`` draws both per episode from GEM's -random presets.
    """

    title = "2048"
    PARAMS = (
        Param("target_tile", int, "the tile that wins, a power of two (None: drawn per episode)", min=4,
              nullable=True, client={"choices": tuple(2**k for k in range(2, 18))}),
        max_turns_param("moves allowed (None: drawn per episode with target_tile)"),
        Param("board_size", int, "rows (and columns) of the board", min=BOARD_SIZES[0], max=BOARD_SIZES[-1]),
    )

    def __init__(self, target_tile: Optional[int] = 2048, max_turns: Optional[int] = 1000, board_size: int = 4) -> None:
        check_params(self, locals())
        self._random_params = target_tile is None or max_turns is None
        if target_tile is not None and target_tile & (target_tile - 1):
            raise ValueError(f"target_tile must be a power of two (4, 8, 16, ...), got {target_tile!r}.")
        self.board_size = board_size
        self.target_tile, self.max_turns = (target_tile, max_turns) if not self._random_params else RANDOM_PRESETS[0]
        self.board: Board = []
        self.max_tile_achieved = self.init_max_tile_achieved = 0

    # ----------------------------------------------------------- the game
    def _new_game(self) -> None:
        if self._random_params:
            self.target_tile, self.max_turns = self.rng.choice(RANDOM_PRESETS)
        self.board = [[0] * self.board_size for _ in range(self.board_size)]
        self._spawn()
        self._spawn()
        self.max_tile_achieved = self.init_max_tile_achieved = self._max_tile()

    def _spawn(self) -> None:
        empty = [(r, c) for r, row in enumerate(self.board) for c, v in enumerate(row) if not v]
        if empty:
            r, c = self.rng.choice(empty)
            self.board[r][c] = 4 if self.rng.random() < FOUR_PROBABILITY else 2

    def _max_tile(self) -> int:
        return max(max(row) for row in self.board)

    def _rules(self) -> str:
        return (
            f"The board is a {self.board_size}x{self.board_size} grid of numbered tiles; . is an empty cell. "
            f"Reach a {self.target_tile} tile.\n"
            "A move slides every tile as far as it goes in one direction (up, down, left or right); two "
            "equal tiles that collide merge into one tile of twice the value (each tile merges at most "
            "once per move). After a move that changes the board, a new 2 (or sometimes 4) appears on "
            "a random empty cell. A move that changes nothing is refused. The game is lost when no "
            "move can change the board."
        )

    def _example(self) -> str:
        return "\\boxed{left}"

    def _parse(self, answer: str) -> str:
        return parse_direction(answer)

    def _apply(self, move: str) -> tuple[str, float]:
        moved = slide(self.board, move)
        if moved == self.board:
            raise Illegal(f"moving {move} changes nothing; try another direction.")
        self.board = moved
        reward = self._progress_reward()
        self._spawn()
        return f"you moved {move}.", reward

    def _progress_reward(self) -> float:
        """GEM's shaping: each new highest tile (capped at the target) earns its log2 share."""
        current = min(self._max_tile(), self.target_tile)
        if current <= self.max_tile_achieved:
            return self.internal_step_reward
        span = math.log2(self.target_tile) - math.log2(self.init_max_tile_achieved)
        share = (math.log2(current) - math.log2(self.max_tile_achieved)) / span if span > 0 else 0.0
        reward = self.success_reward * share
        self.max_tile_achieved = current
        return reward

    def _solved(self) -> bool:
        return self._max_tile() >= self.target_tile

    def _success_reward(self, move_reward: float) -> float:
        return move_reward  # GEM's scale: the progress rewards of a won game sum to success_reward

    def _lost(self) -> bool:
        return all(slide(self.board, d) == self.board for d in DIRECTIONS)

    def render(self) -> str:
        width = max(4, len(str(self._max_tile())))
        return "\n".join(" ".join(f"{v:>{width}}" if v else " " * (width - 1) + "." for v in row) for row in self.board)

    # ---------------------------------------------------------- agents
    def sample_random_action(self) -> str:
        return f"\\boxed{{{self.action_rng.choice(DIRECTIONS)}}}"

    def make_solver(self) -> Agent:
        return Game2048Solver()


def read_board(observation: str) -> Board:
    """The board shown last in ``observation`` (0 for empty cells)."""
    return [[0 if cell == "." else int(cell) for cell in line.split()] for line in board_lines(observation)]


@lru_cache(maxsize=1 << 16)
def _line_score(line: tuple[int, ...]) -> float:
    """A hand-tuned value of one row or column: room, merges and monotone order score well."""
    ranks = [int(math.log2(v)) if v else 0 for v in line]
    empty = ranks.count(0)
    merges = sum(1 for a, b in pairwise(ranks) if a and a == b)
    left = right = 0.0
    for a, b in pairwise(ranks):
        if a > b:
            left += a**4 - b**4
        else:
            right += b**4 - a**4
    return 270.0 * empty + 700.0 * merges - 47.0 * min(left, right) - 11.0 * sum(r**3.5 for r in ranks)


def evaluate(board: Board) -> float:
    """The heuristic value of a board: its rows' and columns' values plus a consolidation bonus.

    The bonus (the sum of squared tiles) grows with every merge and most with merges of big tiles,
    which is what reaching a target within a few dozen turns needs.
    """
    lines = sum(_line_score(tuple(row)) for row in board) + sum(_line_score(col) for col in zip(*board))
    return lines + CONSOLIDATION_WEIGHT * sum(v * v for row in board for v in row)


def _best_after_move(board: Board) -> float:
    values = [evaluate(m) for m in (slide(board, d) for d in DIRECTIONS) if m != board]
    return max(values) if values else -1e9


def _expected_after_spawn(board: Board) -> float:
    """The mean, over the new tile, of the best move's heuristic value."""
    empty = [(r, c) for r, row in enumerate(board) for c, v in enumerate(row) if not v]
    if not empty:
        return _best_after_move(board)
    total = 0.0
    for r, c in empty:
        for tile, p in ((2, 1 - FOUR_PROBABILITY), (4, FOUR_PROBABILITY)):
            board[r][c] = tile
            total += p * _best_after_move(board)
        board[r][c] = 0
    return total / len(empty)


def best_direction(board: Board) -> str:
    """The move with the best expected value two moves ahead (expectimax over the new tile)."""
    scored = []
    for direction in DIRECTIONS:
        moved = slide(board, direction)
        if moved != board:
            scored.append((_expected_after_spawn(moved), direction))
    if not scored:
        raise ValueError("no move changes this board; the game is over")
    return max(scored)[1]


class Game2048Solver(Agent):
    """Expectimax over the next new tile with a row/column heuristic (wins easy presets most times)."""

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        return f"\\boxed{{{best_direction(read_board(observation))}}}"
