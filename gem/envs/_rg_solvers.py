"""Reference answers for the ReasoningGym tasks that keep none (many answers are valid).

reasoning-gym's ``rush_hour`` and ``boxnet`` items have ``answer: None``: their scorers check an
answer by simulating it. The solvers here compute one valid answer from the item's metadata, so a
validator (``gem validate``) has a gold answer to play and to build wrong answers from. Each returns
the answer text (what goes inside ``\\boxed{}``), or ``None`` when it cannot solve the item within
its bound; the agent never sees it.
"""

from __future__ import annotations

import functools
import json
import re
from collections import deque
from typing import Any, Callable, Optional

_SIZE = 6  # reasoning-gym's Rush Hour board is 6x6; the red car (A) sits in row 2
_EXIT_ROW = 2
MAX_STATES = 200_000  # rush_hour: board states searched before giving up


_Board = tuple[list[tuple[int, int]], tuple[int, ...], set[int]]


def _rush_hour_board(item: dict[str, Any]) -> Optional[_Board]:
    """``(pieces, start, walls)`` of an item's board: each movable piece's ``(stride, size)`` and first
    cell, in reasoning-gym's ``Board`` order (the n-th label in sorted order is the letter
    ``chr(ord("A") + n)``), and the wall cells; ``None`` for a malformed board."""
    desc = str((item.get("metadata") or {}).get("board_config", ""))
    if len(desc) != _SIZE * _SIZE:
        return None
    cells: dict[str, list[int]] = {}
    for i, label in enumerate(desc):
        if label not in ("o", "x", "."):
            cells.setdefault(label, []).append(i)
    pieces: list[tuple[int, int]] = []
    start: list[int] = []
    for label in sorted(cells):
        ps = cells[label]
        if len(ps) < 2:
            return None
        stride = ps[1] - ps[0]
        if stride not in (1, _SIZE) or any(b - a != stride for a, b in zip(ps, ps[1:])):
            return None
        pieces.append((stride, len(ps)))
        start.append(ps[0])
    if not pieces or pieces[0][0] != 1 or start[0] // _SIZE != _EXIT_ROW:
        return None
    return pieces, tuple(start), {i for i, label in enumerate(desc) if label == "x"}


def _occupied(pieces: list[tuple[int, int]], state: tuple[int, ...], walls: set[int]) -> set[int]:
    out = set(walls)
    for (stride, size), pos in zip(pieces, state):
        out.update(pos + k * stride for k in range(size))
    return out


def _slide(pieces: list[tuple[int, int]], state: tuple[int, ...], full: set[int], n: int, direction: int):
    """The positions piece ``n`` reaches sliding one cell at a time in ``direction`` (-1 or 1)."""
    stride, size = pieces[n]
    pos = p = state[n]
    while True:
        head = p - stride if direction < 0 else p + size * stride
        if head < 0 or head >= _SIZE * _SIZE or head in full:
            return
        if stride == 1 and head // _SIZE != pos // _SIZE:
            return
        p += direction * stride
        yield p


def solve_rush_hour(item: dict[str, Any]) -> Optional[str]:
    """A shortest solution (fewest moves, each moving one car any distance) as ``"F+1 K-2 ..."``.

    Breadth-first search over board states; walls (``x``) never move. ``None`` when the board is
    malformed or no solution is found within :data:`MAX_STATES` states.
    """
    board = _rush_hour_board(item)
    if board is None:
        return None
    pieces, first, walls = board
    target = _EXIT_ROW * _SIZE + _SIZE - pieces[0][1]
    parent: dict[tuple[int, ...], Optional[tuple[tuple[int, ...], str]]] = {first: None}
    queue = deque([first])
    while queue:
        state = queue.popleft()
        if state[0] == target:
            moves = []
            step = parent[state]
            while step is not None:
                state, move = step
                moves.append(move)
                step = parent[state]
            return " ".join(reversed(moves))
        if len(parent) > MAX_STATES:
            return None
        full = _occupied(pieces, state, walls)
        for n in range(len(pieces)):
            for direction in (-1, 1):
                for steps, p in enumerate(_slide(pieces, state, full, n, direction), 1):
                    nxt = state[:n] + (p,) + state[n + 1:]
                    if nxt not in parent:
                        parent[nxt] = (state, f"{chr(ord('A') + n)}{'+' if direction > 0 else '-'}{steps}")
                        queue.append(nxt)
    return None


_MOVE = re.compile(r"([A-Z])([+-])(\d+)")


def rush_hour_invalid(answer: str, item: dict[str, Any]) -> Optional[str]:
    """Why ``answer`` is no honest Rush Hour solution whatever reasoning-gym's scorer says, or ``None``.

    reasoning-gym reads every ``<letter><sign><digits>`` anywhere in the text and silently skips
    blocked moves (or moves a car only as far as it can go), so a spray of moves, or two move lists
    run together, can reach the exit. Here the answer must be moves only (separated by spaces or
    commas), each a whole legal move of a car on the board, ending when the red car has left.
    """
    board = _rush_hour_board(item)
    if board is None:
        return None  # a board this reader cannot parse: the scorer decides
    pieces, state, walls = board
    text = answer.strip().strip("'\"`").strip().rstrip(".")
    tokens = [t for t in re.split(r"[\s,]+", text) if t]
    if not tokens or any(not _MOVE.fullmatch(t) for t in tokens):
        return "not a list of moves (a letter, + or -, a number, separated by spaces)"
    target = _EXIT_ROW * _SIZE + _SIZE - pieces[0][1]
    for k, token in enumerate(tokens):
        if state[0] == target:
            return f"moves after the red car has left (from move {k + 1}, {token})"
        n = ord(token[0]) - ord("A")
        steps = int(token[2:])
        if n >= len(pieces) or steps == 0:
            return f"move {k + 1} ({token}) names no car of the board or moves it nowhere"
        reach = list(_slide(pieces, state, _occupied(pieces, state, walls), n, 1 if token[1] == "+" else -1))
        if steps > len(reach):
            return f"move {k + 1} ({token}) is blocked"
        state = state[:n] + (reach[steps - 1],) + state[n + 1:]
    return None


def _cell(key: str) -> Optional[tuple[int, int]]:
    try:
        a, b = key.split("_")
        return int(float(a)), int(float(b))
    except ValueError:
        return None


def solve_boxnet(item: dict[str, Any]) -> Optional[str]:
    """A plan that matches every box to a target of its colour, as reasoning-gym's JSON list of steps.

    Each box is paired with a target of its colour and carried there one adjacent square per step
    (rows first, then columns), then matched. Every step holds one agent's one action, so no two
    actions ever interfere. ``None`` when the state is malformed or a box has no target of its colour.
    """
    meta = item.get("metadata") or {}
    state = meta.get("initial_state")
    if not isinstance(state, dict):
        return None
    boxes: list[tuple[str, tuple[int, int]]] = []
    targets: dict[str, list[tuple[int, int]]] = {}
    for key, things in state.items():
        cell = _cell(str(key))
        if cell is None or not isinstance(things, list):
            return None
        for thing in things:
            thing = str(thing)
            if thing.startswith("box_"):
                boxes.append((thing[4:], cell))
            elif thing.startswith("target_"):
                targets.setdefault(thing[7:], []).append(cell)
    plan: list[dict[str, str]] = []
    for colour, (r, c) in boxes:
        free = targets.get(colour) or []
        if not free:
            return None
        tr, tc = min(free, key=lambda t: abs(t[0] - r) + abs(t[1] - c))
        free.remove((tr, tc))
        while (r, c) != (tr, tc):
            nr = r + (tr > r) - (tr < r)
            nc = c if nr != r else c + (tc > c) - (tc < c)
            square = f"square[{nr + 0.5}, {nc + 0.5}]"
            plan.append({f"Agent[{r + 0.5}, {c + 0.5}]": f"move(box_{colour}, {square})"})
            r, c = nr, nc
        plan.append({f"Agent[{r + 0.5}, {c + 0.5}]": f"move(box_{colour}, target_{colour})"})
    return json.dumps(plan) if plan else None


SOLVERS: dict[str, Callable[[dict[str, Any]], Optional[str]]] = {
    "rush_hour": solve_rush_hour,
    "boxnet": solve_boxnet,
}


def reference_answer(name: str, item: dict[str, Any]) -> Optional[str]:
    """The reference answer of ``item`` of task ``name`` (``None`` for a task without a solver here,
    or an item its solver cannot solve). Cached by the item's metadata: a group of episodes on one
    item, as validators and RL groups play, solves it once."""
    if name not in SOLVERS:
        return None
    try:
        key = json.dumps(item.get("metadata") or {}, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return None
    return _cached(name, key)


@functools.lru_cache(maxsize=256)
def _cached(name: str, metadata: str) -> Optional[str]:
    return SOLVERS[name]({"metadata": json.loads(metadata)})


def boxnet_invalid(answer: str, item: dict[str, Any]) -> Optional[str]:
    """Why ``answer`` is no boxnet plan reasoning-gym's scorer can read, or ``None``.

    The scorer crashes on JSON that is not a list of objects of strings, and on a box moved to a
    square off the grid; such an answer is the agent's malformed plan (a wrong answer), not a
    failure of the grader.
    """
    state = (item.get("metadata") or {}).get("initial_state")
    if not isinstance(state, dict):
        return None  # a state this reader cannot check: the scorer decides
    try:
        plan = json.loads(answer)
    except ValueError:
        return "not JSON"
    if not isinstance(plan, list) or not all(
        isinstance(step, dict) and all(isinstance(v, str) for v in step.values()) for step in plan
    ):
        return "not a JSON list of steps, each an object of agent -> action strings"
    for step in plan:
        for action in step.values():
            match = re.match(r"move\((.*?),\s(.*?)\)", action)
            if match and "square" in match.group(2):
                coords = tuple(map(float, re.findall(r"\d+\.?\d*", match.group(2))))
                if len(coords) != 2 or f"{coords[0]}_{coords[1]}" not in state:
                    return f"a move to a square off the grid ({action})"
    return None
