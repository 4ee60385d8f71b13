"""Negotiation: two agents split a pool of items, each with private valuations (Deal or No Deal).

The pool holds books, hats and balls (1-4 of each, 5-7 items in all). Each agent values the item
types privately (whole numbers, the whole pool worth 10 to each). Agents take turns, ``player_0``
first, for ``max_turns`` turns in all. A turn is one of, in ``\\boxed{}``:

- ``propose books=B hats=H balls=L``: the items the proposer keeps (missing kinds mean 0); the
  other agent gets the rest. The new proposal replaces any earlier one.
- ``accept``: take the other agent's standing proposal; the deal is made and the game ends.

Messages (``<message>...</message>``) let the agents talk alongside their moves. A deal is
checked against the pool (a proposal asking for more than there is is an invalid move, the same
agent moves again) and scored: each agent's reward is the value of what it gets divided by 10 (so
in 0..1). No deal within ``max_turns`` gives both 0. ``success`` is a deal in which the agent scored
more than the other. An unreadable action is a format error (-0.1) and ends the game with no deal.
"""

from __future__ import annotations

import functools
import itertools
import re
from typing import Any, Optional

from gem.core import Agent
from gem.envs.multiagent.base import MultiAgentEnv, max_steps_param
from gem.envs.multiagent.players import Player
from gem.params import Param, check_params
from gem.utils.parsing import extract_last_boxed_answer

ITEMS = ("books", "hats", "balls")
TOTAL_VALUE = 10
_PAIR = re.compile(r"([a-z]+)\s*[=:]\s*(\d{1,3})\b")
_PROPOSE = re.compile(r"propose\b\s*:?\s*(.*)", re.S)


def value_of(values: dict[str, int], items: dict[str, int]) -> int:
    return sum(values[k] * items.get(k, 0) for k in ITEMS)


def all_splits(counts: dict[str, int]) -> list[dict[str, int]]:
    """Every bundle a proposer could keep, in a fixed order."""
    ranges = [range(counts[k] + 1) for k in ITEMS]
    return [dict(zip(ITEMS, combo)) for combo in itertools.product(*ranges)]


def bundle_text(items: dict[str, int]) -> str:
    return " ".join(f"{k}={items.get(k, 0)}" for k in ITEMS)


class NegotiationEnv(MultiAgentEnv):
    """Split a pool of items by alternating proposals; private valuations, a checked, scored deal."""

    name = "Negotiation"
    PARAMS = (
        Param("max_turns", int, "offers before the negotiation ends without a deal", min=2,
              client={"max": 1000}),
        max_steps_param(nullable=True, description="moves before the game is cut (None: 3 * max_turns)"),
    )

    def __init__(self, max_turns: int = 16, max_steps: Optional[int] = None) -> None:
        check_params(self, locals())
        super().__init__(
            ["player_0", "player_1"],
            mode="sequential",
            max_steps=max_steps if max_steps is not None else 3 * max_turns,
        )
        self.max_turns = max_turns
        self.counts: dict[str, int] = {k: 1 for k in ITEMS}
        self.values: dict[str, dict[str, int]] = {}
        self.offer: Optional[tuple[str, dict[str, int]]] = None  # (proposer, what it keeps)
        self.turn = 0
        self.over = False

    def _reset_game(self, **kwargs: Any) -> None:
        rng = self.rng
        while True:
            self.counts = {k: rng.randint(1, 4) for k in ITEMS}
            if 5 <= sum(self.counts.values()) <= 7:
                break
        options = valuation_options(self.counts)
        while True:
            self.values = {a: dict(rng.choice(options)) for a in self.possible_agents}
            # every kind of item is worth something to someone, and the agents do not agree exactly
            if (
                all(any(v[k] for v in self.values.values()) for k in ITEMS)
                and self.values["player_0"] != self.values["player_1"]
            ):
                break
        self.offer = None
        self.turn = 0
        self.over = False

    # ------------------------------------------------------------------ rules
    def parse_action(self, agent: str, text: str) -> Any:
        answer = extract_last_boxed_answer(text)
        if answer is None:
            return None
        answer = answer.strip().lower()
        if answer == "accept":
            return ("accept", None)
        found = _PROPOSE.fullmatch(answer)
        if found is None:
            return None
        body = found.group(1)
        pairs = _PAIR.findall(body)
        leftover = _PAIR.sub("", body).replace(",", " ").strip()
        if leftover:
            return None
        bundle: dict[str, int] = {}
        for name, count in pairs:
            if name in bundle:
                return None
            bundle[name] = int(count)
        return ("propose", bundle)

    def legal_actions(self, agent: str) -> list[str]:
        if agent not in self.active_agents():
            return []
        actions = [f"\\boxed{{propose {bundle_text(b)}}}" for b in all_splits(self.counts)]
        if self.offer is not None and self.offer[0] != agent:
            actions.append("\\boxed{accept}")
        return actions

    def _apply(self, moves: dict[str, Any]) -> None:
        ((agent, (kind, bundle)),) = moves.items()
        other = next(a for a in self.possible_agents if a != agent)
        if kind == "accept":
            if self.offer is None or self.offer[0] == agent:
                self._invalid(agent, "there is no proposal from the other agent to accept; make one instead.")
                return
            proposer, kept = self.offer
            rest = {k: self.counts[k] - kept[k] for k in ITEMS}
            self._deal({proposer: kept, agent: rest})
            return
        unknown = [k for k in bundle if k not in ITEMS]
        if unknown:
            self._invalid(agent, f"there is no {unknown[0]!r} in the pool; the items are {', '.join(ITEMS)}.")
            return
        kept = {k: bundle.get(k, 0) for k in ITEMS}
        too_many = [k for k in ITEMS if kept[k] > self.counts[k]]
        if too_many:
            k = too_many[0]
            self._invalid(agent, f"you asked for {kept[k]} {k} but the pool has {self.counts[k]}.")
            return
        self.offer = (agent, kept)
        self.turn += 1
        rest = {k: self.counts[k] - kept[k] for k in ITEMS}
        self._note(other, f"{agent} proposes to keep {bundle_text(kept)} and give you {bundle_text(rest)}.")
        if self.turn >= self.max_turns:
            self._note_all(f"No deal after {self.max_turns} turns: nobody gets anything.")
            self.over = True
            self._end_game({a: self.fail_reward for a in self.agents}, info={"deal": False, "score": 0.0})

    def _deal(self, shares: dict[str, dict[str, int]]) -> None:
        scores = {a: value_of(self.values[a], shares[a]) / TOTAL_VALUE for a in self.possible_agents}
        text = "; ".join(
            f"{a} gets {bundle_text(shares[a])} (worth {scores[a] * TOTAL_VALUE:g} to it)"
            for a in self.possible_agents
        )
        self._note_all(f"Deal! {text}.")
        self.over = True
        for agent in self.possible_agents:
            other = next(a for a in self.possible_agents if a != agent)
            self._retire(
                agent,
                self.fail_reward + (self.success_reward - self.fail_reward) * scores[agent],
                success=scores[agent] > scores[other],
                info={"deal": True, "score": scores[agent], "share": shares[agent]},
            )

    # ------------------------------------------------------------ what agents see
    def observe(self, agent: str) -> str:
        values = ", ".join(f"{k}: {self.values[agent][k]} each" for k in ITEMS)
        lines = [
            f"You are {agent}, negotiating how to split a pool of items with the other agent.",
            f"Pool: {bundle_text(self.counts)}. Your private values: {values} "
            f"(the pool is worth {TOTAL_VALUE} to you; the other agent's values are secret).",
            f"Your reward is the value of what you get / {TOTAL_VALUE}; with no deal after "
            f"{self.max_turns} turns both get 0. Turns used: {self.turn} of {self.max_turns}.",
        ]
        if self.offer is not None and not self.over and self.agents:
            proposer, kept = self.offer
            rest = {k: self.counts[k] - kept[k] for k in ITEMS}
            mine = rest if proposer != agent else kept
            lines.append(
                f"Standing proposal by {proposer}: {proposer} keeps {bundle_text(kept)}, the other gets "
                f"{bundle_text(rest)} (worth {value_of(self.values[agent], mine)} to you)."
            )
        return "\n".join(lines)

    def action_prompt(self, agent: str) -> str:
        can_accept = self.offer is not None and self.offer[0] != agent
        return (
            "Your move: \\boxed{propose books=B hats=H balls=L} (what you keep)"
            + (" or \\boxed{accept}" if can_accept else "")
            + ". You may add <message>...</message> for the other agent."
        )

    def view(self, agent: str) -> dict[str, Any]:
        return {
            "counts": dict(self.counts),
            "values": dict(self.values.get(agent, {})),
            "offer": None
            if self.offer is None
            else {"proposer": self.offer[0], "keeps": dict(self.offer[1])},
            "turn": self.turn,
            "max_turns": self.max_turns,
            "agent": agent,
        }

    def make_scripted_player(self, agent: str) -> Agent:
        return NegotiatorPlayer()


def valuation_options(counts: dict[str, int]) -> list[dict[str, int]]:
    """Every valuation the rules allow for ``counts`` (whole numbers, the pool worth 10)."""
    return [dict(v) for v in _valuation_options(tuple(counts[k] for k in ITEMS))]


@functools.lru_cache(maxsize=256)
def _valuation_options(counts: tuple[int, ...]) -> tuple[tuple[tuple[str, int], ...], ...]:
    found = []
    for combo in itertools.product(range(TOTAL_VALUE + 1), repeat=len(ITEMS)):
        if sum(c * v for c, v in zip(counts, combo)) == TOTAL_VALUE:
            found.append(tuple(zip(ITEMS, combo)))
    return tuple(found)


class NegotiatorPlayer(Player):
    """A sensible negotiator: asks for a lot early, concedes over time, and reasons about the other
    agent's secret values from the rules (which valuations are possible given the pool and its own).

    ``P(win)`` of a deal is the share of the other agent's possible valuations under which this
    agent scores more. It accepts an offer worth at least its current target with ``P(win) >=
    min_win``, or, on its last chance, any offer worth something (better than no deal). It proposes,
    among the bundles that reach the target with ``P(win) >= min_win``, the one that leaves the other
    agent the most expected value (so a reasonable opponent accepts it).
    """

    def __init__(
        self, start: float = 0.7, floor: float = 0.4, min_win: float = 0.9, seed: Optional[int] = None
    ) -> None:
        super().__init__(seed)
        if not 0 <= floor <= start <= 1 or not 0 <= min_win <= 1:
            raise ValueError(
                f"need 0 <= floor <= start <= 1 and 0 <= min_win <= 1, got "
                f"start={start!r}, floor={floor!r}, min_win={min_win!r}."
            )
        self.start, self.floor, self.min_win = start, floor, min_win

    def _target(self, turn: int, max_turns: int) -> float:
        progress = min(1.0, turn / max(1, max_turns - 2))
        return TOTAL_VALUE * (self.start - (self.start - self.floor) * progress)

    @staticmethod
    def _their_options(counts: dict[str, int], values: dict[str, int]) -> list[dict[str, int]]:
        """The other agent's possible valuations: it differs from ours and values what we do not."""
        return [v for v in valuation_options(counts) if v != values and all(v[k] or values[k] for k in ITEMS)]

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        view = (info or {}).get("view") or {}
        if "counts" not in view or "values" not in view:
            raise ValueError("NegotiatorPlayer needs info['view'] from NegotiationEnv.")
        counts, values = view["counts"], view["values"]
        turn, max_turns, me = view["turn"], view["max_turns"], view["agent"]
        theirs = self._their_options(counts, values) or [values]
        target = self._target(turn, max_turns)

        def rest_of(bundle: dict[str, int]) -> dict[str, int]:
            return {k: counts[k] - bundle[k] for k in ITEMS}

        def win_chance(mine: dict[str, int]) -> float:
            score = value_of(values, mine)
            return sum(score > value_of(v, rest_of(mine)) for v in theirs) / len(theirs)

        offer = view["offer"]
        if offer is not None and offer["proposer"] != me:
            mine = rest_of(offer["keeps"])
            worth = value_of(values, mine)
            last_chance = turn >= max_turns - 2
            if (worth >= target and win_chance(mine) >= self.min_win) or (last_chance and worth > 0):
                return "\\boxed{accept}"

        def their_expected(bundle: dict[str, int]) -> float:
            rest = rest_of(bundle)
            return sum(value_of(v, rest) for v in theirs) / len(theirs)

        candidates = [b for b in all_splits(counts) if value_of(values, b) >= target]
        best = max(
            candidates, key=lambda b: (win_chance(b) >= self.min_win, their_expected(b), value_of(values, b))
        )
        return f"\\boxed{{propose {bundle_text(best)}}}"
