"""Tower of Hanoi: move every disk from tower A to tower C, one top disk at a time.

A move is ``\\boxed{A C}`` (source, then target; ``A,C``, ``AC``, ``A->C`` and ``A to C`` read the
same, any case). Rewards as in GEM: solving 1; a legal move 0; an illegal move (empty source, a
larger disk onto a smaller one, the same tower twice) 0 and the game goes on; an answer that cannot
be read -0.1 and the episode ends. When the turn limit cuts the episode, the reward is the share of
disks already on tower C.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from gem.core import Agent
from gem.envs.game_env._puzzle_base import Illegal, PuzzleEnv, board_lines, quoted
from gem.params import Param, check_params, max_turns_param

TOWERS = "ABC"
RANDOM_PRESETS = ((3, 10), (4, 20), (5, 35))  # (num_disks, max_turns) drawn by -random, as GEM
MAX_DISKS = 12
_MOVE = re.compile(r"([ABC])\s*(?:,|->|→|to|\s)?\s*([ABC])", re.IGNORECASE)


class TowerofHanoiEnv(PuzzleEnv[tuple[str, str]]):
    """Tower of Hanoi with ``num_disks`` disks and ``max_turns`` moves (at least ``2**n - 1``).

    ``num_disks=None`` or ``max_turns=None`` draws both per episode from GEM's -random presets.
    """

    title = "Tower of Hanoi"
    _parse_cache: dict[str, tuple[str, str]] = {}  # a move depends on the answer alone
    PARAMS = (
        Param("num_disks", int, "disks, all on tower A at the start (None: drawn per episode)",
              min=1, max=MAX_DISKS, nullable=True),
        max_turns_param("moves allowed, at least 2**num_disks - 1 (None: drawn per episode)"),
    )

    def __init__(self, num_disks: Optional[int] = 3, max_turns: Optional[int] = 100) -> None:
        check_params(self, locals())
        self._random_params = num_disks is None or max_turns is None
        if not self._random_params:
            if max_turns < 2**num_disks - 1:  # type: ignore[operator]
                raise ValueError(
                    f"max_turns={max_turns} is too few for {num_disks} disks: the shortest solution "
                    f"takes {2**num_disks - 1} moves (2**num_disks - 1)."  # type: ignore[operator]
                )
        self.num_disks, self.max_turns = (num_disks, max_turns) if not self._random_params else RANDOM_PRESETS[0]
        self.towers: dict[str, list[int]] = {t: [] for t in TOWERS}
        self.deterministic = not self._random_params  # fixed disks: the same puzzle from every seed

    # ----------------------------------------------------------- the game
    def _new_game(self) -> None:
        if self._random_params:
            self.num_disks, self.max_turns = self.rng.choice(RANDOM_PRESETS)
        self.towers = {"A": list(range(self.num_disks, 0, -1)), "B": [], "C": []}

    def _rules(self) -> str:
        return (
            f"There are {self.num_disks} disks, numbered 1 (smallest) to {self.num_disks} (largest), "
            "on three towers A, B and C; all start on tower A. Move them all to tower C.\n"
            "Each move takes the top disk of one tower and puts it on top of another tower; a disk may "
            "never sit on a smaller disk.\n"
            "Towers are shown bottom to top. A move names the source tower, then the target tower."
        )

    def _example(self) -> str:
        return "\\boxed{A C}"

    def _parse(self, answer: str) -> tuple[str, str]:
        found = _MOVE.fullmatch(answer.strip())
        if found is None:
            raise ValueError(f"{quoted(answer)} is not a move; write the source and target towers, like A C")
        return found.group(1).upper(), found.group(2).upper()

    def _apply(self, move: tuple[str, str]) -> tuple[str, float]:
        src, dst = move
        if src == dst:
            raise Illegal(f"the source and target are both tower {src}; pick two different towers.")
        if not self.towers[src]:
            raise Illegal(f"tower {src} is empty, so there is no disk to move.")
        disk = self.towers[src][-1]
        if self.towers[dst] and self.towers[dst][-1] < disk:
            raise Illegal(f"disk {disk} from tower {src} cannot go on the smaller disk {self.towers[dst][-1]} on tower {dst}.")
        self.towers[dst].append(self.towers[src].pop())
        return f"you moved disk {disk} from tower {src} to tower {dst}.", 0.0

    def _solved(self) -> bool:
        return len(self.towers["C"]) == self.num_disks

    def _truncation_reward(self) -> float:
        return len(self.towers["C"]) / self.num_disks

    def render(self) -> str:
        towers = self.towers
        return f"A: {_stack_text(towers['A'])}\nB: {_stack_text(towers['B'])}\nC: {_stack_text(towers['C'])}"

    # ---------------------------------------------------------- agents
    def sample_random_action(self) -> str:
        src, dst = self.action_rng.sample(TOWERS, 2)
        return f"\\boxed{{{src} {dst}}}"

    def make_solver(self) -> Agent:
        return TowerofHanoiSolver()


_STACKS: dict[tuple[int, ...], str] = {}  # a tower's disks -> its text; at most 2**MAX_DISKS stacks


def _stack_text(disks: list[int]) -> str:
    """``"3 2 1"`` for the disks of one tower, bottom to top (remembered: resets and steps are hot)."""
    key = tuple(disks)
    text = _STACKS.get(key)
    if text is None:
        text = _STACKS[key] = " ".join(map(str, key))
    return text


def read_towers(observation: str) -> dict[str, list[int]]:
    """The towers (bottom to top) shown last in ``observation``."""
    towers = {}
    for line in board_lines(observation):
        name, _, disks = line.partition(":")
        towers[name.strip()] = [int(d) for d in disks.split()]
    return towers


def next_move(towers: dict[str, list[int]], target: str = "C") -> Optional[tuple[str, str]]:
    """The first move of a shortest way from ``towers`` (any legal position) to all disks on ``target``."""
    where = {disk: name for name, disks in towers.items() for disk in disks}

    def first_move(n: int, goal: str) -> Optional[tuple[str, str]]:
        # Disk n reaches goal after disks 1..n-1 wait on the third tower; recurse on what blocks it.
        if n == 0:
            return None
        if where[n] == goal:
            return first_move(n - 1, goal)
        spare = next(t for t in TOWERS if t not in (where[n], goal))
        return first_move(n - 1, spare) or (where[n], goal)

    return first_move(len(where), target)


class TowerofHanoiSolver(Agent):
    """Reads the towers from each observation and plays the first move of a shortest solution."""

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        move = next_move(read_towers(observation))
        if move is None:
            raise ValueError("TowerofHanoiSolver: the puzzle is already solved; reset the env.")
        return f"\\boxed{{{move[0]} {move[1]}}}"
