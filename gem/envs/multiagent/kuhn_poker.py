"""Kuhn poker for two agents: a hidden-information card game (one hand per episode).

A deck of three cards (J < Q < K); each agent antes 1 chip and gets one card that the other does
not see. ``player_0`` acts first. Actions in ``\\boxed{}``: ``check`` or ``bet`` (1 chip) when no
bet is open, ``call`` or ``fold`` when facing a bet. The hand ends on a fold or when both have
acted with bets matched (showdown: the higher card takes the pot).

Rewards are the chips won, mapped onto GEM's 0..1 scale: ``0.5 + chips / 4`` (win 2 chips: 1,
win 1: 0.75, lose 1: 0.25, lose 2: 0); ``info["chips"]`` has the raw number on the final step and
``success`` means chips > 0. A legal word that does not fit the moment (``call`` with no bet open)
is an invalid move (0, act again); an unreadable action is a format error (-0.1) and counts as a
fold for the other agent's reward. The scripted player plays Kuhn's equilibrium strategy.
"""

from __future__ import annotations

from typing import Any, Optional

from gem.core import Agent
from gem.envs.multiagent.base import MultiAgentEnv, max_steps_param
from gem.envs.multiagent.players import Player
from gem.params import check_params
from gem.utils.parsing import extract_last_boxed_answer

CARDS = ("J", "Q", "K")
MOVES = ("check", "bet", "call", "fold")
ANTE = 1
# history of moves (c=check, b=bet, k=call, f=fold) -> who acts next; missing: the hand is over
_TO_ACT = {"": 0, "c": 1, "b": 1, "cb": 0}
_LETTER = {"check": "c", "bet": "b", "call": "k", "fold": "f"}


def chips_to_reward(chips: float) -> float:
    """Map chips won (-2..2) onto 0..1 (constant-sum, so optimal play is unchanged)."""
    return 0.5 + chips / 4.0


class KuhnPokerEnv(MultiAgentEnv):
    """One hand of Kuhn poker between ``player_0`` (acts first) and ``player_1``."""

    name = "Kuhn poker"
    PARAMS = (max_steps_param(),)

    def __init__(self, max_steps: int = 20) -> None:
        check_params(self, locals())
        super().__init__(["player_0", "player_1"], mode="sequential", max_steps=max_steps)
        self.cards: dict[str, str] = {}
        self.history = ""
        self.committed: dict[str, int] = {}

    def _reset_game(self, **kwargs: Any) -> None:
        deck = list(CARDS)
        self.rng.shuffle(deck)
        self.cards = dict(zip(self.possible_agents, deck))
        self.history = ""
        self.committed = {a: ANTE for a in self.possible_agents}

    # ------------------------------------------------------------------ rules
    def _legal_moves(self) -> list[str]:
        if self.history not in _TO_ACT:
            return []
        return ["call", "fold"] if self.history.endswith("b") else ["check", "bet"]

    def legal_actions(self, agent: str) -> list[str]:
        if agent not in self.active_agents():
            return []
        return [f"\\boxed{{{m}}}" for m in self._legal_moves()]

    def parse_action(self, agent: str, text: str) -> Optional[str]:
        answer = extract_last_boxed_answer(text)
        if answer is None:
            return None
        word = answer.strip().lower()
        return word if word in MOVES else None

    def _apply(self, moves: dict[str, Any]) -> None:
        ((agent, move),) = moves.items()
        if move not in self._legal_moves():
            self._invalid(agent, f"you cannot {move} now; choose {' or '.join(self._legal_moves())}.")
            return
        other = next(a for a in self.possible_agents if a != agent)
        self.history += _LETTER[move]
        if move in ("bet", "call"):
            self.committed[agent] += 1
        self._note(other, f"{agent} chose to {move}.")
        if move == "fold":
            self._settle(winner=other, showdown=False)
        elif self.history in ("cc", "bk", "cbk"):
            self._settle(
                winner=max(self.possible_agents, key=lambda a: CARDS.index(self.cards[a])), showdown=True
            )

    def _settle(self, winner: str, showdown: bool) -> None:
        loser = next(a for a in self.possible_agents if a != winner)
        won = self.committed[loser]
        chips = {winner: won, loser: -won}
        cards = ", ".join(f"{a} had {c}" for a, c in self.cards.items())
        how = f"Showdown: {cards}." if showdown else f"{loser} folded."
        self._note_all(f"{how} {winner} wins {won} chip{'s' if won != 1 else ''}.")
        for agent in self.possible_agents:
            self._retire(
                agent,
                self._chips_reward(chips[agent]),
                success=chips[agent] > 0,
                info={"chips": chips[agent], "cards": dict(self.cards) if showdown else None},
            )

    def _forfeit_rewards(self, offenders: Any) -> dict[str, float]:
        lost = sum(self.committed[o] for o in offenders)  # the offender folds what it put in
        return {a: self._chips_reward(lost) for a in self.agents if a not in offenders}

    def _chips_reward(self, chips: float) -> float:
        """:func:`chips_to_reward` on this env's scale (``fail_reward`` .. ``success_reward``)."""
        return self.fail_reward + (self.success_reward - self.fail_reward) * chips_to_reward(chips)

    # ------------------------------------------------------------ what agents see
    def _history_text(self) -> str:
        words = {"c": "checked", "b": "bet", "k": "called", "f": "folded"}
        order = [0, 1, 0]
        return (
            ", ".join(f"{self.possible_agents[order[i]]} {words[ch]}" for i, ch in enumerate(self.history))
            or "none yet"
        )

    def observe(self, agent: str) -> str:
        pot = sum(self.committed.values())
        return (
            f"You are {agent} in a hand of Kuhn poker (cards J < Q < K; player_0 acts first). "
            f"Each player antes {ANTE} chip; a bet or call adds 1.\nYour card: {self.cards[agent]}. "
            f"Pot: {pot} chips. Actions so far: {self._history_text()}."
        )

    def action_prompt(self, agent: str) -> str:
        legal = self._legal_moves()
        return f"Your action: \\boxed{{{legal[0]}}} or \\boxed{{{legal[1]}}}." if legal else ""

    def view(self, agent: str) -> dict[str, Any]:
        return {
            "card": self.cards.get(agent),
            "history": self.history,
            "position": self.possible_agents.index(agent),
        }

    def make_scripted_player(self, agent: str) -> Agent:
        return KuhnEquilibriumPlayer()


class KuhnEquilibriumPlayer(Player):
    """Kuhn's equilibrium strategy (with bluff parameter ``alpha`` in [0, 1/3] for the first player).

    First player: bet K with prob 3*alpha, bet J with prob alpha, check Q; facing a bet after
    checking, call with K, call Q with prob alpha + 1/3, fold J. Second player: facing a bet, call
    with K, call Q with prob 1/3, fold J; after a check, bet K, bet J with prob 1/3, check Q.
    """

    def __init__(self, alpha: float = 1 / 3, seed: Optional[int] = None) -> None:
        if not 0.0 <= alpha <= 1 / 3:
            raise ValueError(f"alpha must be in [0, 1/3], got {alpha!r}.")
        super().__init__(seed)
        self.alpha = alpha

    def _prob_aggressive(self, card: str, history: str) -> float:
        """Probability of bet (no bet open) or call (facing a bet)."""
        a = self.alpha
        table = {
            "": {"J": a, "Q": 0.0, "K": 3 * a},
            "cb": {"J": 0.0, "Q": a + 1 / 3, "K": 1.0},
            "b": {"J": 0.0, "Q": 1 / 3, "K": 1.0},
            "c": {"J": 1 / 3, "Q": 0.0, "K": 1.0},
        }
        return table[history][card]

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        view = (info or {}).get("view") or {}
        if view.get("card") not in CARDS or view.get("history") not in _TO_ACT:
            raise ValueError("KuhnEquilibriumPlayer needs info['view'] from KuhnPokerEnv on its turn.")
        history = view["history"]
        aggressive = self.rng.random() < self._prob_aggressive(view["card"], history)
        if history.endswith("b"):
            return "\\boxed{call}" if aggressive else "\\boxed{fold}"
        return "\\boxed{bet}" if aggressive else "\\boxed{check}"
