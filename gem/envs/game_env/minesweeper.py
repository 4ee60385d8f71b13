"""Minesweeper: reveal every cell that does not hide a mine.

A move is the last ``\\boxed{...}`` in the action: ``\\boxed{reveal ROW COL}`` or ``\\boxed{flag ROW COL}``
(rows and columns count from 0; ``flag`` on a flagged cell removes the flag). The first reveal is always
safe: mines are laid after it, away from the cell and its neighbours. Revealing a cell with no adjacent
mines opens its neighbours too. The game is won when every safe cell is revealed (flags are an aid,
not a requirement, as in the usual rules; GEM also required every mine to be flagged).

Rewards: winning 1; hitting a mine 0 and the episode ends; other moves 0; an invalid move (off the
board, a revealed cell, revealing a flagged cell, an unknown command) 0 and the turn is spent; no
parsable move -0.1 and the episode ends. Running out of turns truncates the episode.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from gem.envs.game_env._prompts import GAME_OVER_SUFFIX, first_request
from gem.core import Agent, Env, StepResult
from gem.envs.game_env._shaping import ProgressReward
from gem.envs.game_env.minesweeper_solver import MinesweeperSolver, neighbours
from gem.params import Param, check_params, max_turns_param
from gem.utils.parsing import extract_last_boxed_answer
from gem.utils.text import preview

_MOVE = re.compile(r"([A-Za-z]+)\s*[\s,:(]\s*(\d{1,4})\s*[\s,]\s*(\d{1,4})\s*\)?")
COMMANDS = ("reveal", "flag")
RANDOM_SIZES = (5, 6, 7, 8)  # -random: a square board of this side, side**2 // 5 mines, side**2 turns


MAX_SIDE = 50


class MinesweeperEnv(Env):
    """A ``rows`` x ``cols`` board with ``num_mines`` mines, cleared within ``max_turns`` moves.

    Any of the four set to ``None`` draws a square board of side 5 to 8 per episode, with side**2 // 5
    mines and side**2 turns (the ``-random`` preset).

    ``dense_reward=True`` (default, as GEM) pays each reveal the share of safe cells it opened, so a
    cleared board returns 1 in total; ``False`` pays only the win (see :mod:`._shaping`).
    """

    reset_before_first_step = True  # a step before reset plays in a fresh episode
    PARAMS = (
        Param("rows", int, "rows of the board (None: drawn per episode)", min=1, max=MAX_SIDE, nullable=True),
        Param("cols", int, "columns of the board (None: drawn per episode)", min=1, max=MAX_SIDE, nullable=True),
        Param("num_mines", int, "mines, fewer than rows * cols (None: drawn per episode)", min=1,
              max=MAX_SIDE * MAX_SIDE - 1, nullable=True),
        max_turns_param("reveals allowed (None: drawn per episode)"),
        Param("dense_reward", bool, "each reveal earns the share of safe cells it opened"),
    )

    def __init__(
        self,
        rows: Optional[int] = 8,
        cols: Optional[int] = 8,
        num_mines: Optional[int] = 10,
        max_turns: Optional[int] = 20,
        dense_reward: bool = True,
    ) -> None:
        check_params(self, locals())
        self._random_params = rows is None or cols is None or num_mines is None or max_turns is None
        if not self._random_params:
            if num_mines >= rows * cols:  # type: ignore[operator]
                raise ValueError(
                    f"num_mines ({num_mines}) must be below the number of cells ({rows * cols})."
                )  # type: ignore[operator]
        self.rows, self.cols = rows or 8, cols or 8
        self.num_mines, self.max_turns = num_mines or 10, max_turns or 20
        self.shaping = ProgressReward(dense_reward)
        self._new_board()

    def _new_board(self) -> None:
        n = self.rows * self.cols
        self.mines = bytearray(n)
        self.counts = bytearray(n)
        self.revealed = bytearray(n)
        self.flags = bytearray(n)
        self.cells = ["."] * n  # what the player sees, kept up to date move by move
        self.mines_laid = False
        self.safe_left = n - self.num_mines
        self.turn_count = 0
        self.shaping.reset()

    # ------------------------------------------------------------------ API
    def reset(self, seed: Optional[int] = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        super().reset(seed)
        if self._random_params:
            side = self.rng.choice(RANDOM_SIZES)
            self.rows = self.cols = side
            self.num_mines, self.max_turns = side * side // 5, side * side
        self._new_board()
        return self._instructions() + "\n\n" + self.render(), {"suffix": first_request(self.get_task_suffix())}

    def _step(self, action: str) -> StepResult:
        turn = self.turn_count = self.turn_count + 1
        move = self._parse(action)
        if move is None:
            return self._result(
                f"Turn {turn}: no valid move found in '{preview(action, 60)}'. A move is \\boxed{{reveal ROW COL}} "
                "or \\boxed{flag ROW COL}, e.g. \\boxed{reveal 0 0}. The game is over.",
                self.format_error_reward,
                terminated=True,
                info={"suffix": GAME_OVER_SUFFIX, "success": False},
            )
        command, row, col = move
        reward = self.invalid_action_reward
        cell = row * self.cols + col
        if command not in COMMANDS:
            feedback = f"Turn {turn}: unknown command {preview(command, 20)!r}; use 'reveal' or 'flag'."
        elif not (row < self.rows and col < self.cols):
            feedback = (
                f"Turn {turn}: cell ({row}, {col}) is off the board; rows go from 0 to {self.rows - 1} and "
                f"columns from 0 to {self.cols - 1}."
            )
        elif self.revealed[cell]:
            feedback = f"Turn {turn}: cell ({row}, {col}) is already revealed; choose a hidden cell."
        elif command == "flag":
            self.flags[cell] ^= 1
            self.cells[cell] = "F" if self.flags[cell] else "."
            feedback = f"Turn {turn}: {'placed a flag on' if self.flags[cell] else 'removed the flag from'} ({row}, {col})."
            reward = self.internal_step_reward
        elif self.flags[cell]:
            feedback = (
                f"Turn {turn}: cell ({row}, {col}) is flagged; remove the flag (flag it again) to reveal it."
            )
        else:
            if not self.mines_laid:
                self._lay_mines(cell)
            if self.mines[cell]:
                return self._result(
                    f"Turn {turn}: BOOM! ({row}, {col}) hid a mine. You lose.\n{self.render(show_mines=True)}",
                    self.fail_reward,
                    terminated=True,
                    info={"suffix": GAME_OVER_SUFFIX, "success": False},
                )
            opened = self._open(cell)
            if self.safe_left == 0:
                return self._result(
                    f"Turn {turn}: you revealed the last safe cell. The board is clear; you win!\n{self.render()}",
                    self.shaping.win(self),
                    terminated=True,
                    info={"suffix": GAME_OVER_SUFFIX, "success": True},
                )
            feedback = f"Turn {turn}: revealed ({row}, {col}); {opened} cell(s) opened."
            safe = self.rows * self.cols - self.num_mines
            reward = self.shaping.progress((safe - self.safe_left) / safe, self)
        if turn >= self.max_turns:
            return self._result(
                f"{feedback}\nYou have used all {self.max_turns} turns with {self.safe_left} safe cell(s) still hidden.\n"
                + self.render(show_mines=True),
                reward,
                truncated=True,
                info={"suffix": GAME_OVER_SUFFIX, "success": False},
            )
        return f"{feedback}\n{self.render()}", float(reward), False, False, {"suffix": self.get_task_suffix()}

    def sample_random_action(self, reveal_or_flag: Optional[str] = None) -> str:
        """A random cell to ``reveal_or_flag`` (``"reveal"`` or ``"flag"``; default: flag one time in ten)."""
        rng = self.action_rng
        if reveal_or_flag is None:
            command = "flag" if rng.random() < 0.1 else "reveal"
        elif reveal_or_flag in ("reveal", "flag"):
            command = reveal_or_flag
        else:
            raise ValueError(f"reveal_or_flag must be 'reveal', 'flag' or None, got {reveal_or_flag!r}.")
        return f"\\boxed{{{command} {rng.randrange(self.rows)} {rng.randrange(self.cols)}}}"

    def make_solver(self) -> Agent:
        return MinesweeperSolver()

    # -------------------------------------------------------------- helpers
    def get_task_suffix(self) -> str:
        return "Enter your next move."

    def render(self, show_mines: bool = False) -> str:
        """The board as text: '.' hidden, 'F' flag, a digit = adjacent mines ('*' mines after the game)."""
        cols, cells = self.cols, self.cells
        if show_mines:
            cells = ["*" if m and not r else c for m, r, c in zip(self.mines, self.revealed, cells)]
        lines = ["Board (row, column):", "    " + " ".join(f"{c:>2}" for c in range(cols))]
        for r in range(self.rows):
            lines.append(f"{r:>2}   " + "  ".join(cells[r * cols : (r + 1) * cols]))
        lines.append(
            f"Mines: {self.num_mines}. Safe cells left: {self.safe_left}. Turns left: {self.max_turns - self.turn_count}."
        )
        return "\n".join(lines)

    def _parse(self, action: str) -> Optional[tuple[str, int, int]]:
        content = extract_last_boxed_answer(action)
        if not content or len(content) > 100:
            return None
        found = _MOVE.fullmatch(content)
        if found is None:
            return None
        return found.group(1).lower(), int(found.group(2)), int(found.group(3))

    def _neighbours(self, cell: int) -> tuple[int, ...]:
        return neighbours(cell, self.rows, self.cols)

    def _lay_mines(self, first: int) -> None:
        """Lay the mines away from the first revealed cell (and its neighbours when there is room)."""
        keep_clear = {first, *self._neighbours(first)}
        if self.rows * self.cols - len(keep_clear) < self.num_mines:
            keep_clear = {first}
        spots = [c for c in range(self.rows * self.cols) if c not in keep_clear]
        for c in self.rng.sample(spots, self.num_mines):
            self.mines[c] = 1
            for n in self._neighbours(c):
                self.counts[n] += 1
        self.mines_laid = True

    def _open(self, cell: int) -> int:
        """Reveal ``cell``, flooding through cells with no adjacent mine; return how many opened."""
        stack, opened = [cell], 0
        self.revealed[cell] = 1
        while stack:
            cur = stack.pop()
            opened += 1
            self.cells[cur] = str(self.counts[cur])
            if self.counts[cur] == 0:
                for n in self._neighbours(cur):
                    if not self.revealed[n] and not self.flags[n]:
                        self.revealed[n] = 1
                        stack.append(n)
        self.safe_left -= opened
        return opened

    def _instructions(self) -> str:
        return (
            "You are playing Minesweeper.\n"
            f"The board has {self.rows} rows and {self.cols} columns, numbered from 0, and hides {self.num_mines} "
            f"mines. Reveal every cell without a mine within {self.max_turns} turns to win.\n"
            "A revealed cell shows how many of its (up to 8) neighbours hide a mine; a 0 opens its "
            "neighbours automatically. Revealing a mine loses the game. Your first reveal is always safe.\n"
            "Moves: \\boxed{reveal ROW COL} reveals a cell; \\boxed{flag ROW COL} puts a flag on a cell you "
            "think hides a mine (or removes it). For example \\boxed{reveal 2 3} reveals row 2, column 3. "
            "Only the last \\boxed{} in your reply counts. Choosing a cell off the board, a revealed cell, or "
            "revealing a flagged cell wastes the turn; a reply without a boxed move ends the game.\n"
            "On the board, '.' is a hidden cell, 'F' a flag and a digit a revealed cell."
        )
