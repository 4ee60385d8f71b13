"""Tic-Tac-Toe for two agents: a perfect-information board game.

``player_0`` plays X and moves first, ``player_1`` plays O. A move is a cell number 1-9 in
``\\boxed{}`` (cells numbered left to right, top to bottom). Rewards: win 1, draw 0.5, loss 0;
an occupied or out-of-range cell is an invalid move (reward 0, the same player moves again); an
unreadable move is a format error (-0.1) and forfeits the game (the opponent gets the win).
The scripted player is minimax (it never loses) that, among equally safe moves, picks the one that
wins most often against a random opponent.
"""

from __future__ import annotations

import functools
from typing import Any, Optional

from gem.core import Agent
from gem.envs.multiagent.base import MultiAgentEnv, max_steps_param
from gem.envs.multiagent.players import Player
from gem.params import check_params
from gem.utils.parsing import extract_last_boxed_answer, parse_int

LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
MARKS = ("X", "O")
EMPTY = " "


def winner(board: tuple[str, ...]) -> Optional[str]:
    """``"X"`` or ``"O"`` if that mark has three in a line, else ``None``."""
    for a, b, c in LINES:
        if board[a] != EMPTY and board[a] == board[b] == board[c]:
            return board[a]
    return None


def render(board: Any) -> str:
    """The board with free cells shown by their number."""
    cells = [board[i] if board[i] != EMPTY else str(i + 1) for i in range(9)]
    rows = [f" {cells[r]} | {cells[r + 1]} | {cells[r + 2]}" for r in (0, 3, 6)]
    return "\n---+---+---\n".join(rows)


class TicTacToeEnv(MultiAgentEnv):
    """Two agents take turns marking a 3x3 board; three in a line wins."""

    name = "Tic-Tac-Toe"
    deterministic = True  # no chance: the seed changes nothing
    PARAMS = (max_steps_param(),)

    def __init__(self, max_steps: int = 30) -> None:
        check_params(self, locals())
        super().__init__(["player_0", "player_1"], mode="sequential", max_steps=max_steps)
        self.board: list[str] = [EMPTY] * 9

    def mark(self, agent: str) -> str:
        return MARKS[self.possible_agents.index(agent)]

    def _reset_game(self, **kwargs: Any) -> None:
        self.board = [EMPTY] * 9

    def observe(self, agent: str) -> str:
        me = self.mark(agent)
        return (
            f"You are playing Tic-Tac-Toe as {me} ({agent}); X moves first. Three of your marks in a "
            f"row, column or diagonal wins.\nBoard:\n{render(self.board)}"
        )

    def action_prompt(self, agent: str) -> str:
        free = [str(i + 1) for i in range(9) if self.board[i] == EMPTY]
        example = free[0] if free else "1"
        cells = ", ".join(free)
        return f"Your move: put a free cell number ({cells}) in \\boxed{{}}, e.g. \\boxed{{{example}}}."

    def parse_action(self, agent: str, text: str) -> Optional[int]:
        return parse_int(extract_last_boxed_answer(text))

    def legal_actions(self, agent: str) -> list[str]:
        if agent not in self.active_agents():
            return []
        return [f"\\boxed{{{i + 1}}}" for i in range(9) if self.board[i] == EMPTY]

    def view(self, agent: str) -> dict[str, Any]:
        return {"board": list(self.board), "mark": self.mark(agent)}

    def _apply(self, moves: dict[str, Any]) -> None:
        ((agent, cell),) = moves.items()
        if not 1 <= cell <= 9:
            self._invalid(agent, f"cell {cell} is not on the board (1-9).")
            return
        if self.board[cell - 1] != EMPTY:
            self._invalid(agent, f"cell {cell} is already taken.")
            return
        me = self.mark(agent)
        self.board[cell - 1] = me
        other = next(a for a in self.agents if a != agent)
        self._note(other, f"{agent} ({me}) marked cell {cell}.")
        if winner(tuple(self.board)) == me:
            self._note(agent, f"You marked cell {cell} and won.")
            self._note(other, f"{agent} won.")
            self._end_game(
                {agent: self.success_reward, other: self.fail_reward}, winners=[agent], info={"outcome": f"{agent} won"}
            )
        elif EMPTY not in self.board:
            self._note_all("The board is full: a draw.")
            self._end_game({a: self._draw_reward() for a in self.agents}, info={"outcome": "draw"})

    def _forfeit_rewards(self, offenders: Any) -> dict[str, float]:
        return {a: self.success_reward for a in self.agents if a not in offenders}

    def make_scripted_player(self, agent: str) -> Agent:
        return MinimaxPlayer()


@functools.lru_cache(maxsize=None)
def _minimax(board: tuple[str, ...], to_move: str) -> int:
    """The game value for X (+1 X wins, 0 draw, -1 O wins) with perfect play from here."""
    won = winner(board)
    if won is not None:
        return 1 if won == "X" else -1
    if EMPTY not in board:
        return 0
    nxt = "O" if to_move == "X" else "X"
    values = [_minimax(_play(board, i, to_move), nxt) for i in range(9) if board[i] == EMPTY]
    return max(values) if to_move == "X" else min(values)


def _play(board: tuple[str, ...], cell: int, mark: str) -> tuple[str, ...]:
    return board[:cell] + (mark,) + board[cell + 1 :]


def _safe_moves(board: tuple[str, ...], me: str) -> list[int]:
    """The cells that keep the minimax value (never worse than perfect play)."""
    nxt = "O" if me == "X" else "X"
    sign = 1 if me == "X" else -1
    scored = [(sign * _minimax(_play(board, i, me), nxt), i) for i in range(9) if board[i] == EMPTY]
    best = max(v for v, _ in scored)
    return [i for v, i in scored if v == best]


@functools.lru_cache(maxsize=None)
def _win_chance(board: tuple[str, ...], me: str, my_turn: bool) -> float:
    """P(``me`` wins) when ``me`` plays safe moves that maximize it and the opponent plays uniformly."""
    won = winner(board)
    if won is not None:
        return 1.0 if won == me else 0.0
    if EMPTY not in board:
        return 0.0
    other = "O" if me == "X" else "X"
    if my_turn:
        return max(_win_chance(_play(board, i, me), me, False) for i in _safe_moves(board, me))
    free = [i for i in range(9) if board[i] == EMPTY]
    return sum(_win_chance(_play(board, i, other), me, True) for i in free) / len(free)


def best_move(board: Any, me: str) -> int:
    """The scripted player's cell (0-based): minimax-safe, then most wins against random play."""
    key = tuple(board)
    safe = _safe_moves(key, me)
    return max(safe, key=lambda i: (_win_chance(_play(key, i, me), me, False), -i))


class MinimaxPlayer(Player):
    """Perfect Tic-Tac-Toe from ``info["view"]``: never loses, and punishes random play."""

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        view = (info or {}).get("view") or {}
        if "board" not in view:
            raise ValueError("MinimaxPlayer needs info['view'] from TicTacToeEnv.")
        return f"\\boxed{{{best_move(view['board'], view['mark']) + 1}}}"
