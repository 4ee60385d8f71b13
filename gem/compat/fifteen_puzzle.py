"""The original GEM's FifteenPuzzle names: its board as rows and the helpers its tests call.

The original kept the board as a list of rows with ``None`` for the gap and exposed
``VALID_INITIALIZATION_ALGOS``, ``greatest_num``, ``goal_board``, ``goal_parity`` and the helpers
``_generate_goal_board``, ``_get_empty_position``, ``_has_correct_tiles``, ``_get_board_parity``,
``_is_solvable``, ``_move``, ``_is_solved``, ``_render_board`` and ``_get_soft_reward``.
:func:`fifteen_puzzle_compat` gives :class:`gem.envs.game_env.fifteen_puzzle.FifteenPuzzleEnv`
those names (see :mod:`gem.compat.attach`) on top of its own board (``tiles``: flat, row by row, 0
for the gap); they return what the original's returned. Assigning ``board`` sets ``tiles``.
"""

from __future__ import annotations

from typing import Any, Optional, TypeVar

from gem.compat.attach import add_names
from gem.envs.game_env._puzzle_base import Illegal, permutation_parity

Rows = list[list[Optional[int]]]

GAP = 0  # the gap on the flat board (FifteenPuzzleEnv.tiles)


class FifteenPuzzleNames:
    """The original GEM's FifteenPuzzle attributes and helpers (see the module docstring).

    The class given them holds ``num_rows`` and ``tiles`` and implements ``_apply`` (raising
    ``Illegal`` where no tile can slide), ``_solved``, ``render`` and ``_truncation_reward``.
    """

    num_rows: int
    tiles: list[int]

    @property
    def greatest_num(self) -> int:
        """The largest tile."""
        return self.num_rows * self.num_rows - 1

    @property
    def board(self) -> Rows:
        """The board as a list of rows, ``None`` for the gap (a copy).

        Assigning rows (``None`` or 0 for the gap) or a flat list (0 for the gap) sets the board.
        """
        return self._rows(self.tiles)

    @board.setter
    def board(self, value: Any) -> None:
        self.tiles = self._flat(value)

    def _rows(self, flat: list[int]) -> Rows:
        """The flat board ``flat`` (0 for the gap) as rows, ``None`` for the gap."""
        n = self.num_rows
        return [[None if v == GAP else v for v in flat[r * n:(r + 1) * n]] for r in range(n)]

    def _flat(self, board: Any) -> list[int]:
        """``board`` (rows or flat; ``None`` or 0 for the gap) as a flat list, checked to be a board."""
        try:
            cells = [c for row in board for c in row] if board and isinstance(board[0], (list, tuple)) else list(board)
            flat = [GAP if c is None else int(c) for c in cells]
        except (TypeError, ValueError) as exc:
            raise ValueError(f"a board is a list of rows of tiles (None for the gap), got {board!r:.120}") from exc
        n = self.num_rows
        if sorted(flat) != list(range(n * n)):
            raise ValueError(f"a {n}x{n} board holds the tiles 1 to {n * n - 1} and one gap once each, got {board!r:.120}")
        return flat

    @property
    def goal_board(self) -> Rows:
        """The solved board, as rows."""
        return self._generate_goal_board()

    @property
    def goal_parity(self) -> int:
        """The solved board's parity (see :meth:`_get_board_parity`)."""
        return self._get_board_parity(self._generate_goal_board())

    def _generate_goal_board(self) -> Rows:
        """The solved board as rows: tiles in order, ``None`` (the gap) bottom-right."""
        n = self.num_rows
        tiles: list[Optional[int]] = [*range(1, n * n), None]
        return [tiles[r * n:(r + 1) * n] for r in range(n)]

    def _get_empty_position(self) -> tuple[int, int]:
        """(row, column) of the gap."""
        return divmod(self.tiles.index(GAP), self.num_rows)

    def _has_correct_tiles(self, board: Rows) -> bool:
        """Whether ``board`` holds each tile and the gap (compared as the set of cells)."""
        return {c for row in board for c in row} == set(range(1, self.greatest_num + 1)) | {None}

    def _get_board_parity(self, board: Rows) -> int:
        """(parity of the tiles' order + the gap's distance from the top-left corner) mod 2.
        Every slide keeps it."""
        cells = [c for row in board for c in row]
        target = [len(cells) - 1 if c is None else c - 1 for c in cells]  # the gap sorts last, as in the goal
        r, c = divmod(cells.index(None), self.num_rows)
        return (permutation_parity(target) + r + c) % 2

    def _is_solvable(self, board: Rows) -> bool:
        """Whether slides can bring ``board`` (rows, ``None`` for the gap) to the solved board:
        it holds every tile and has the solved board's parity."""
        if not self._has_correct_tiles(board):
            return False
        return self._get_board_parity(self._rows(self._flat(board))) == self.goal_parity

    def _move(self, direction: str) -> bool:
        """Slide the tile ``direction`` into the gap; ``False`` (nothing moves) where none can."""
        if not isinstance(direction, str):
            return False
        try:
            self._apply(direction)  # type: ignore[attr-defined]
        except Illegal:
            return False
        return True

    def _is_solved(self) -> bool:
        """Whether the board is solved."""
        return self._solved()  # type: ignore[attr-defined]

    def _render_board(self) -> str:
        """The board as the observation shows it, one row per line."""
        return self.render() + "\n"  # type: ignore[attr-defined]

    def _get_soft_reward(self) -> float:
        """The share of cells already right (the partial credit when the turn limit cuts the episode)."""
        return self._truncation_reward()  # type: ignore[attr-defined]


E = TypeVar("E", bound=type)


def fifteen_puzzle_compat(cls: E) -> E:
    """Class decorator: the names of :class:`FifteenPuzzleNames`, and ``VALID_INITIALIZATION_ALGOS``
    (the choices of the class's ``init_algo`` parameter, as a list)."""
    add_names(cls, FifteenPuzzleNames)
    for param in getattr(cls, "PARAMS", ()):
        if param.name == "init_algo" and param.choices is not None:
            cls.VALID_INITIALIZATION_ALGOS = list(param.choices)  # type: ignore[attr-defined]
    return cls
