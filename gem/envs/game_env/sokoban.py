"""Sokoban: push every box onto a target.

A move is ``\\boxed{up}``, ``down``, ``left`` or ``right`` (any case): the player steps that way,
pushing a box in front of it if the cell beyond the box is free. Rewards as in GEM: solving 1; a
move 0; a move into a wall or a box that cannot be pushed 0 (the game goes on); an answer that
cannot be read -0.1 and the episode ends. When the turn limit cuts the episode, the reward is the
share of boxes on targets.

Levels are made by playing backwards from the solved room (see ``_sokoban_levels``), so each can
be solved within ``max_turns`` moves, and a reset takes milliseconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from gem.core import Agent
from gem.envs.game_env import _sokoban_levels as levels
from gem.envs.game_env._puzzle_base import (
    DIRECTIONS,
    Illegal,
    PuzzleEnv,
    board_lines,
    parse_direction,
    positive_int,
    stated_turns,
)
from gem.params import Param, check_params, max_turns_param

# ((rows, columns), num_boxes, max_turns) drawn by -random, as GEM.
RANDOM_PRESETS = (((6, 6), 2, 20), ((8, 8), 5, 50))
MAX_SIDE = 20
SYMBOLS = {"wall": "#", "floor": "_", "target": "O", "box_on_target": "√", "box": "X", "player": "P", "player_on_target": "S"}


class SokobanEnv(PuzzleEnv[str]):
    """Sokoban in a ``dim_room`` room (outer walls included) with ``num_boxes`` boxes.

    ``dim_room=None`` (or GEM's alias ``room_size``), ``num_boxes=None`` or ``max_turns=None``
    draws all three per episode from GEM's -random presets.
    """

    title = "Sokoban"
    _ROOM = {"min": 4, "max": MAX_SIDE, "length": (2, 2)}
    PARAMS = (
        Param("dim_room", tuple, "(rows, columns) of the room, walls included (None: drawn per episode)",
              nullable=True, client={"max": 10}, **_ROOM),  # type: ignore[arg-type]
        max_turns_param("moves allowed (None: drawn per episode)", min=2),
        Param("num_boxes", int, "boxes to push, at most a third of the floor (None: drawn per episode)",
              min=1, nullable=True, client={"max": 4}),
        Param("room_size", tuple, "the original GEM's name for dim_room; wins over it when given",
              nullable=True, client={"max": 10}, **_ROOM),  # type: ignore[arg-type]
    )

    def __init__(
        self,
        dim_room: Optional[Sequence[int]] = (6, 6),
        max_turns: Optional[int] = 100,
        num_boxes: Optional[int] = 3,
        room_size: Optional[Sequence[int]] = None,
    ) -> None:
        check_params(self, locals())
        if room_size is not None:
            dim_room = room_size
        self._random_params = dim_room is None or max_turns is None or num_boxes is None
        if not self._random_params:
            rows, cols = dim_room  # type: ignore[misc]
            inside = (rows - 2) * (cols - 2)
            positive_int("num_boxes", num_boxes, 1, max(1, inside // 3))
            self.dim_room, self.num_boxes, self.max_turns = (rows, cols), num_boxes, max_turns
        else:
            self.dim_room, self.num_boxes, self.max_turns = RANDOM_PRESETS[0]  # type: ignore[assignment]
        self.floor: frozenset[levels.Cell] = frozenset()
        self.targets: frozenset[levels.Cell] = frozenset()
        self.boxes: set[levels.Cell] = set()
        self.player: levels.Cell = (0, 0)
        self.known_solution = 0

    # ----------------------------------------------------------- the game
    def _new_game(self) -> None:
        if self._random_params:
            self.dim_room, self.num_boxes, self.max_turns = self.rng.choice(RANDOM_PRESETS)  # type: ignore[assignment]
        level = levels.generate(self.dim_room[0], self.dim_room[1], self.num_boxes, self.max_turns, self.rng)
        self.floor, self.targets = level.floor, level.targets
        self.boxes, self.player = set(level.boxes), level.player
        self.known_solution = level.known_solution

    def _rules(self) -> str:
        s = SYMBOLS
        return (
            f"Push all {self.num_boxes} boxes onto the targets. You move one cell up, down, left or right "
            "per turn; walking into a box pushes it one cell if the cell beyond it is free floor or a target. "
            "You cannot pull boxes, push two boxes at once, or walk through walls.\n"
            f"Symbols: {s['player']} you, {s['player_on_target']} you standing on a target, {s['wall']} wall, "
            f"{s['box']} box, {s['target']} empty target, {s['box_on_target']} box on a target, "
            f"{s['floor']} empty floor. Row 1 is the top row."
        )

    def _example(self) -> str:
        return "\\boxed{up}"

    def _parse(self, answer: str) -> str:
        return parse_direction(answer)

    def _apply(self, move: str) -> tuple[str, float]:
        step = levels.STEPS[move]
        nxt = (self.player[0] + step[0], self.player[1] + step[1])
        if nxt not in self.floor:
            raise Illegal(f"moving {move} walks into a wall.")
        if nxt in self.boxes:
            beyond = (nxt[0] + step[0], nxt[1] + step[1])
            if beyond not in self.floor:
                raise Illegal(f"the box {move} of you is against a wall and cannot be pushed.")
            if beyond in self.boxes:
                raise Illegal(f"the box {move} of you is blocked by another box.")
            self.boxes.remove(nxt)
            self.boxes.add(beyond)
            self.player = nxt
            where = "onto a target" if beyond in self.targets else "one cell"
            return f"you pushed a box {move} {where}.", 0.0
        self.player = nxt
        return f"you moved {move}.", 0.0

    def _solved(self) -> bool:
        return self.boxes <= self.targets

    def _truncation_reward(self) -> float:
        return len(self.boxes & self.targets) / self.num_boxes

    def render(self) -> str:
        return "\n".join(" ".join(self._symbol((r, c)) for c in range(self.dim_room[1])) for r in range(self.dim_room[0]))

    def _symbol(self, cell: levels.Cell) -> str:
        if cell not in self.floor:
            return SYMBOLS["wall"]
        on_target = cell in self.targets
        if cell == self.player:
            return SYMBOLS["player_on_target" if on_target else "player"]
        if cell in self.boxes:
            return SYMBOLS["box_on_target" if on_target else "box"]
        return SYMBOLS["target" if on_target else "floor"]

    # ---------------------------------------------------------- agents
    def sample_random_action(self) -> str:
        return f"\\boxed{{{self.action_rng.choice(DIRECTIONS)}}}"

    def make_solver(self) -> Agent:
        return SokobanSolver()


def read_level(observation: str) -> tuple[frozenset[levels.Cell], frozenset[levels.Cell], frozenset[levels.Cell], levels.Cell]:
    """(floor, targets, boxes, player) of the room shown last in ``observation``."""
    floor, targets, boxes = set(), set(), set()
    player = (-1, -1)
    for r, line in enumerate(board_lines(observation)):
        for c, symbol in enumerate(line.split()):
            cell = (r, c)
            if symbol == SYMBOLS["wall"]:
                continue
            floor.add(cell)
            if symbol in (SYMBOLS["target"], SYMBOLS["box_on_target"], SYMBOLS["player_on_target"]):
                targets.add(cell)
            if symbol in (SYMBOLS["box"], SYMBOLS["box_on_target"]):
                boxes.add(cell)
            if symbol in (SYMBOLS["player"], SYMBOLS["player_on_target"]):
                player = cell
    return frozenset(floor), frozenset(targets), frozenset(boxes), player


class SokobanSolver(Agent):
    """Reads the room and the turn limit, plans by A* over pushes within the turns left, and plays it.

    Weighted A* plans first; only when its plan is longer than the turns left does exact A* (fewest
    moves) run. It plans again whenever the env refuses a move.
    """

    def __init__(self) -> None:
        self.plan: list[str] = []
        self.turns_left = 0

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        self.plan = []
        self.turns_left = stated_turns(observation)

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        if not self.plan or "invalid move:" in observation:
            self.plan = levels.plan_within(*read_level(observation), limit=self.turns_left)
        self.turns_left -= 1
        return f"\\boxed{{{self.plan.pop(0)}}}"
