"""Agents that need no model: random, solver and a person at the terminal."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

from gem.agents.base import Agent
from gem.utils.prompting import user_content

if TYPE_CHECKING:
    from gem.core import Env


class RandomAgent(Agent):
    """Plays ``env.sample_random_action()`` every turn."""

    def __init__(self, env: "Env") -> None:
        self.env = env

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        return self.env.sample_random_action()


class SolverAgent(Agent):
    """Plays the env's own solver (``env.make_solver()``), rebuilt for every episode."""

    def __init__(self, env: "Env") -> None:
        self.env = env
        self.solver: Optional[Agent] = None

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        self.solver = self.env.make_solver()
        self.solver.reset(observation, info)

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        if self.solver is None:
            raise RuntimeError("SolverAgent.act() before reset().")
        return self.solver.act(observation, info)


# Answer formats a person may leave out when typing a move: (marker in the instructions, open, close).
MOVE_FORMATS = (("\\boxed", "\\boxed{", "}"), ("<answer>", "<answer>", "</answer>"))


def move_format(instructions: str) -> Optional[tuple[str, str]]:
    """The ``(open, close)`` of the answer format ``instructions`` ask for, if one is known."""
    for marker, opening, closing in MOVE_FORMATS:
        if marker in instructions:
            return opening, closing
    return None


def complete_move(line: str, fmt: Optional[tuple[str, str]]) -> str:
    """``line`` in the format ``fmt`` (``5`` -> ``\\boxed{5}``); left alone if already in it."""
    move = line.strip()
    if fmt is None or not move or fmt[0] in move:
        return line
    return f"{fmt[0]}{move}{fmt[1]}"


class HumanAgent(Agent):
    """A person at the terminal: shows each observation and reads the action from ``read``.

    A move typed without the answer format the env asks for (``1 4 4`` where the instructions
    say ``\\boxed{}``) is put in it, and ``tell`` (if given) says what was taken.
    """

    def __init__(
        self,
        read: Callable[[str], str] = input,
        show: Optional[Callable[[str], None]] = None,
        tell: Optional[Callable[[str], None]] = None,
    ) -> None:
        self.read = read
        self.show = show
        self.tell = tell
        self.format: Optional[tuple[str, str]] = None

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        self.format = move_format(user_content(observation, info))

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        text = user_content(observation, info)
        if self.format is None:
            self.format = move_format(text)
        if self.show is not None:
            self.show(text)
        line = self.read("> ")
        move = complete_move(line, self.format)
        if move != line and self.tell is not None:
            self.tell(f"(taken as {move})")
        return move
