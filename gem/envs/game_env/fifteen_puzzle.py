"""The sliding-tile puzzle (15-puzzle and its 2x2 and 3x3 versions).

Tiles 1..n*n-1 and one gap on an n-by-n board; put them in order with the gap bottom-right. A move
slides a tile into the gap and is named by the tile's direction, as in GEM: ``\\boxed{up}`` slides
the tile below the gap up, ``down`` the tile above it, ``left`` the tile right of it, ``right`` the
tile left of it. Rewards as in GEM: solving 1; a move 0; a move with no tile to slide 0 (the game
goes on); an answer that cannot be read -0.1 and the episode ends. When the turn limit cuts the
episode, the reward is the share of cells already right.

Boards come from ``init_algo``, drawn from the env's generator:

- ``"monte_carlo"`` (default): a random walk from the solved board that never undoes its previous
  step, so the board can be solved in at most as many moves as the walk took. The walk takes
  ``mc_rand_moves`` steps if given; otherwise between half of and ``min(max_turns, 40)`` steps, so
  every board can be solved within ``max_turns``.
- ``"pure_random"``: a uniformly random solvable board (a random order of the tiles; when that
  order cannot be solved, two tiles are swapped). Such 4x4 boards take about 50 moves and more,
  often beyond ``max_turns``, and the solver's search on them can take long.

A board never starts solved.
"""

from __future__ import annotations

import functools
import heapq
import math
from typing import Any, Optional

from gem.compat.fifteen_puzzle import fifteen_puzzle_compat
from gem.core import Agent
from gem.envs.game_env._puzzle_base import (
    DIRECTIONS,
    OFFSETS,
    Illegal,
    PuzzleEnv,
    board_lines,
    parse_direction,
    permutation_parity,
    stated_turns,
)
from gem.params import Param, check_params, max_turns_param

RANDOM_PRESETS = ((2, 10), (3, 20), (4, 50))  # (num_rows, max_turns) drawn by -random, as GEM
MAX_ROWS = 6
# The scramble walk takes at most this many steps (and never more than max_turns), so the solver's
# search stays quick; its length is drawn between half the cap and the cap.
SCRAMBLE_CAP = 40
GAP = 0
INIT_ALGOS = ("monte_carlo", "pure_random")


def tile_offset(direction: str) -> tuple[int, int]:
    """Where the sliding tile sits relative to the gap (``up``: the tile below the gap)."""
    dr, dc = OFFSETS[direction]
    return -dr, -dc


@fifteen_puzzle_compat
class FifteenPuzzleEnv(PuzzleEnv[str]):
    """An ``num_rows``-by-``num_rows`` sliding puzzle solvable within ``max_turns`` moves.

    ``num_rows=None`` or ``max_turns=None`` draws both per episode from GEM's -random presets.
    ``init_algo`` and ``mc_rand_moves`` choose how boards are scrambled (see the module docstring).
    """

    _parse_cache: dict[str, str] = {}  # a move depends on the answer alone
    PARAMS = (
        max_turns_param("moves allowed (None: drawn per episode with num_rows)"),
        Param("num_rows", int, "rows (and columns) of the board (None: drawn per episode)",
              min=2, max=MAX_ROWS, nullable=True),
        Param("init_algo", str, "how boards are scrambled", choices=INIT_ALGOS, client=False),
        Param("mc_rand_moves", int, "random moves of the monte_carlo scramble (None: by board size)",
              min=1, nullable=True, client=False),
    )

    def __init__(
        self,
        max_turns: Optional[int] = 20,
        num_rows: Optional[int] = 2,
        init_algo: str = "monte_carlo",
        mc_rand_moves: Optional[int] = None,
    ) -> None:
        check_params(self, locals())
        self._random_params = num_rows is None or max_turns is None
        self.init_algo, self.mc_rand_moves = init_algo, mc_rand_moves
        self.num_rows, self.max_turns = (num_rows, max_turns) if not self._random_params else RANDOM_PRESETS[0]
        self.tiles: list[int] = []  # the board row by row, 0 for the gap
        self.scramble_moves = 0

    @property
    def title(self) -> str:  # type: ignore[override]
        return f"the {self.num_rows * self.num_rows - 1}-Puzzle"

    # ----------------------------------------------------------- the game
    def _new_game(self) -> None:
        if self._random_params:
            self.num_rows, self.max_turns = self.rng.choice(RANDOM_PRESETS)
        n = self.num_rows
        if self.init_algo == "pure_random":
            self.tiles, self.scramble_moves = self._random_board(n), None
            return
        if self.mc_rand_moves is not None:
            length = self.mc_rand_moves
        else:
            cap = min(SCRAMBLE_CAP, self.max_turns)
            length = self.rng.randint(max(1, cap // 2), cap)
        goal = _goal(n)
        slides = _slides(n)
        choice = self.rng.choice
        board = list(goal)
        gap, last = n * n - 1, None
        steps = 0
        while steps < length or board == goal:
            direction, tile = choice([option for option in slides[gap] if option[0] != last])
            board[gap], board[tile] = board[tile], GAP
            gap, steps, last = tile, steps + 1, _OPPOSITE[direction]
        self.tiles, self.scramble_moves = board, steps

    def _random_board(self, n: int) -> list[int]:
        """A uniformly random solvable, unsolved board."""
        while True:
            board = list(range(n * n))
            self.rng.shuffle(board)
            if not is_solvable(board, n):  # swapping two tiles flips the parity
                first, second = self.rng.sample([i for i, v in enumerate(board) if v != GAP], 2)
                board[first], board[second] = board[second], board[first]
            if board != _goal(n):
                return board

    def _rules(self) -> str:
        n = self.num_rows
        return (
            f"The board has {n} rows and {n} columns holding tiles 1 to {n * n - 1} and one empty cell, "
            "shown as __. Arrange the tiles in ascending order, row by row, with the empty cell in the "
            "bottom-right corner.\n"
            "A move slides a tile next to the empty cell into it:\n"
            "- up: the tile below the empty cell moves up\n"
            "- down: the tile above the empty cell moves down\n"
            "- left: the tile right of the empty cell moves left\n"
            "- right: the tile left of the empty cell moves right"
        )

    def _example(self) -> str:
        return "\\boxed{up}"

    def _parse(self, answer: str) -> str:
        return parse_direction(answer)

    def _apply(self, move: str) -> tuple[str, float]:
        gap = self.tiles.index(GAP)
        tile = _targets(self.num_rows)[gap].get(move)
        if tile is None:
            raise Illegal(f"there is no tile to slide {move}: the empty cell is on that edge of the board.")
        value = self.tiles[tile]
        self.tiles[gap], self.tiles[tile] = value, GAP
        return f"you slid tile {value} {move}.", 0.0

    def _solved(self) -> bool:
        return self.tiles == _goal(self.num_rows)

    def _truncation_reward(self) -> float:
        goal = _goal(self.num_rows)
        return sum(a == b for a, b in zip(self.tiles, goal)) / len(goal)

    def render(self) -> str:
        return _layout(self.num_rows).format(*[_CELLS[v] for v in self.tiles])

    # ---------------------------------------------------------- agents
    def sample_random_action(self) -> str:
        return f"\\boxed{{{self.action_rng.choice(DIRECTIONS)}}}"

    def make_solver(self) -> Agent:
        return FifteenPuzzleSolver()


_OPPOSITE = {"up": "down", "down": "up", "left": "right", "right": "left"}


_CELLS = ["__"] + [f"{v:2d}" for v in range(1, MAX_ROWS * MAX_ROWS)]  # a tile as the board shows it


def is_solvable(board: list[int], n: int) -> bool:
    """Whether slides can bring ``board`` (row by row, 0 for the gap) to the solved board.

    Every slide swaps the gap with a neighbour: it flips the parity of the arrangement and moves
    the gap one step, so (arrangement parity + the gap's distance from its goal cell) stays even.
    """
    if sorted(board) != list(range(n * n)):
        return False
    target = [n * n - 1 if v == GAP else v - 1 for v in board]  # each cell's tile -> its goal cell
    r, c = divmod(board.index(GAP), n)
    return (permutation_parity(target) + (n - 1 - r) + (n - 1 - c)) % 2 == 0


def goal_board(n: int) -> list[int]:
    """The solved board, row by row, 0 for the gap."""
    return list(range(1, n * n)) + [GAP]


@functools.lru_cache(maxsize=None)
def _layout(n: int) -> str:
    """The board's format string: ``n`` rows of ``n`` space-separated cells."""
    return "\n".join([" ".join(["{}"] * n)] * n)


@functools.lru_cache(maxsize=None)
def _goal(n: int) -> list[int]:
    """``goal_board(n)``, shared: only ever compared, never changed."""
    return goal_board(n)


@functools.lru_cache(maxsize=None)
def _slides(n: int) -> tuple[tuple[tuple[str, int], ...], ...]:
    """Per gap index, the (direction, tile index) of every tile that can slide into the gap."""
    table = []
    for gap in range(n * n):
        r, c = divmod(gap, n)
        moves = []
        for direction in DIRECTIONS:
            dr, dc = tile_offset(direction)
            if 0 <= r + dr < n and 0 <= c + dc < n:
                moves.append((direction, (r + dr) * n + c + dc))
        table.append(tuple(moves))
    return tuple(table)


@functools.lru_cache(maxsize=None)
def _targets(n: int) -> tuple[dict[str, int], ...]:
    """``_slides`` as one ``{direction: tile index}`` dict per gap index."""
    return tuple(dict(moves) for moves in _slides(n))


def _slide_target(gap: int, direction: str, n: int) -> Optional[int]:
    """The index of the tile that ``direction`` slides into the gap, or None at the edge."""
    return _targets(n)[gap].get(direction)


def read_board(observation: str) -> list[int]:
    """The board shown last in ``observation`` as a flat list (0 for the gap)."""
    return [GAP if cell == "__" else int(cell) for line in board_lines(observation) for cell in line.split()]


def _heuristic(board: tuple[int, ...], n: int) -> int:
    """Manhattan distance plus linear conflicts: never more than the moves still needed."""
    total = 0
    rows: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    cols: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for index, tile in enumerate(board):
        if tile == GAP:
            continue
        r, c = divmod(index, n)
        gr, gc = divmod(tile - 1, n)
        total += abs(r - gr) + abs(c - gc)
        if r == gr:
            rows[r].append((c, gc))
        if c == gc:
            cols[c].append((r, gr))
    for line in rows + cols:
        # Two tiles in their goal line but in the wrong order: one must leave the line (+2).
        for i in range(len(line)):
            for j in range(i + 1, len(line)):
                if (line[i][0] - line[j][0]) * (line[i][1] - line[j][1]) < 0:
                    total += 2
                    break
    return total


def solve(board: list[int], n: int, weight: float = 1.0) -> list[str]:
    """Moves that solve ``board``: A* (shortest when ``weight`` is 1), weighted for speed above 1."""
    goal = tuple(goal_board(n))
    start = tuple(board)
    parents: dict[tuple[int, ...], Optional[tuple[tuple[int, ...], str]]] = {start: None}
    cost = {start: 0}
    frontier = [(weight * _heuristic(start, n), 0, start)]
    while frontier:
        _, g, state = heapq.heappop(frontier)
        if state == goal:
            moves = []
            while parents[state] is not None:
                state, move = parents[state]  # type: ignore[misc]
                moves.append(move)
            return moves[::-1]
        if g > cost[state]:
            continue
        gap = state.index(GAP)
        for direction in DIRECTIONS:
            tile = _slide_target(gap, direction, n)
            if tile is None:
                continue
            nxt = list(state)
            nxt[gap], nxt[tile] = nxt[tile], GAP
            child = tuple(nxt)
            if g + 1 < cost.get(child, 1 << 30):
                cost[child] = g + 1
                parents[child] = (state, direction)
                heapq.heappush(frontier, (g + 1 + weight * _heuristic(child, n), g + 1, child))
    raise ValueError("this board cannot be solved (the tiles are in an unreachable order)")


class FifteenPuzzleSolver(Agent):
    """Plans with weighted A* and, when that plan is too long for the turns left, with exact A*."""

    def __init__(self, weight: float = 1.5) -> None:
        self.weight = weight
        self.plan: list[str] = []
        self.expected: Optional[list[int]] = None
        self.turns_left = 0

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        self.plan, self.expected = [], None
        self.turns_left = stated_turns(observation)

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        board = read_board(observation)
        n = math.isqrt(len(board))
        if board != self.expected or not self.plan:
            self.plan = solve(board, n, self.weight)
            if len(self.plan) > self.turns_left:
                self.plan = solve(board, n, 1.0)
        move = self.plan.pop(0)
        gap = board.index(GAP)
        tile = _slide_target(gap, move, n)
        board[gap], board[tile] = board[tile], GAP  # type: ignore[index]
        self.expected = board
        self.turns_left -= 1
        return f"\\boxed{{{move}}}"
