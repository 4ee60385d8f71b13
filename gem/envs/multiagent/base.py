"""Multi-agent environments: several named agents share one episode, in turns or all at once.

Conventions (PettingZoo's parallel API, with GEM's names):

- ``possible_agents`` lists every agent id; ``agents`` the ones still playing. An agent whose
  episode ended (``terminations``/``truncations`` true) is removed from ``agents`` after the step
  that ended it; the episode is over when ``agents`` is empty.
- ``reset(seed) -> (observations, infos)``, both dicts keyed by the live agents.
- ``step(actions) -> (observations, rewards, terminations, truncations, infos)``: ``actions`` maps
  agent id to action text; every returned dict is keyed by the agents that were live when the step
  began (so an agent that just finished gets its last observation and reward).
- ``mode``: ``"sequential"`` (turn-based: only ``current_agent``, alias ``agent_selection``, acts)
  or ``"simultaneous"`` (every live agent acts each step). ``active_agents()`` says who acts now and
  each agent's info carries ``active``.
- Bad input never raises: an acting agent whose action is missing, not a string or unparseable gets
  ``format_error_reward`` and the game ends (see ``_forfeit_rewards`` for the others). An action from
  an agent that is not acting is ignored and noted in its info.
- Messages: an action may carry ``<message>text</message>`` (to every other live agent) or
  ``<message to="player_1">text</message>`` (to one agent). The tags are removed before the move is
  parsed; the text is delivered in the recipients' observations (and ``info["messages"]``) until
  they next act. At most :data:`MAX_MESSAGES_PER_ACTION` messages of :data:`MAX_MESSAGE_CHARS` each.
  Feedback from the game (the other agents' moves, an invalid move, the result) is kept the same
  way, so an agent that only looks at its observation on its own turn misses nothing.
- ``max_steps`` bounds an episode (invalid moves do not pass the turn): reaching it truncates the
  game for everyone with ``_truncation_rewards()``.

Rewards are on GEM's scale: a win is ``success_reward`` (1), a loss ``fail_reward`` (0), a draw
half way between (:meth:`MultiAgentEnv._draw_reward`, 0.5), an invalid move ``invalid_action_reward``
(0) and a format error ``format_error_reward`` (-0.1, worse than any outcome of play). The levels
are the env's own (``gem.make(id, success_reward=2.0)`` sets them); :data:`WIN_REWARD`,
:data:`LOSS_REWARD` and :data:`DRAW_REWARD` are the defaults.

A multi-agent env written for the original GEM (``observe`` and ``_process_actions``) subclasses
``gem.multiagent.MultiAgentEnv`` (see :mod:`gem.compat.multiagent`).
"""

from __future__ import annotations

import abc
import random
import re
from collections.abc import Mapping
from typing import Any, Optional, Sequence

from gem.core import EPISODE_OVER_OBSERVATION, Agent, Env
from gem.errors import GemError
from gem.params import Param
from gem.utils import constants
from gem.utils.text import preview

SEQUENTIAL = "sequential"
SIMULTANEOUS = "simultaneous"
_MODE_ALIASES = {
    "sequential": SEQUENTIAL,
    "turn": SEQUENTIAL,
    "aec": SEQUENTIAL,
    "simultaneous": SIMULTANEOUS,
    "parallel": SIMULTANEOUS,
}

WIN_REWARD: float = constants.SUCCESS_REWARD
LOSS_REWARD: float = constants.FAIL_REWARD
DRAW_REWARD: float = (constants.SUCCESS_REWARD + constants.FAIL_REWARD) / 2
MAX_MESSAGE_CHARS = 500
MAX_MESSAGES_PER_ACTION = 4
DEFAULT_MAX_STEPS = 200


def max_steps_param(nullable: bool = False, description: str = "moves before the game is cut") -> "Param":
    """``max_steps`` as the games declare it: at least 1; a client may ask for at most 1000."""
    return Param("max_steps", int, description, min=1, nullable=nullable, client={"max": 1000})

MultiStepResult = tuple[
    dict[str, str], dict[str, float], dict[str, bool], dict[str, bool], dict[str, dict[str, Any]]
]

_CLOSE = "</message>"
_OPEN = "<message"
_HEADER = re.compile(r"\s*(?:to\s*=\s*[\"']?([A-Za-z0-9_.\-]{1,64})[\"']?)?\s*")


_NATIVE_HOOKS = ("_reset_game", "parse_action", "_apply", "legal_actions")


def _overrides(cls: type, name: str) -> bool:
    """Whether ``cls`` defines ``name`` below :class:`MultiAgentEnv`."""
    return getattr(cls, name, None) is not getattr(MultiAgentEnv, name, None)


def split_messages(text: str) -> tuple[list[tuple[Optional[str], str]], str]:
    """Pull ``<message [to="id"]>...</message>`` blocks out of ``text``.

    Returns ``([(recipient or None, message text), ...], text without the blocks)``. One pass over
    the text (hostile input stays linear); a header that is not ``to="id"`` is not a message.
    """
    messages: list[tuple[Optional[str], str]] = []
    rest: list[str] = []
    pos = 0
    while True:
        close = text.find(_CLOSE, pos)
        if close < 0:
            break
        start = text.rfind(_OPEN, pos, close)
        header_end = text.find(">", start, close) if start >= 0 else -1
        header = _HEADER.fullmatch(text, start + len(_OPEN), header_end) if header_end >= 0 else None
        if header is None:
            rest.append(text[pos : close + len(_CLOSE)])
        else:
            rest.append(text[pos:start])
            messages.append((header.group(1), text[header_end + 1 : close]))
        pos = close + len(_CLOSE)
    rest.append(text[pos:])
    return messages, "".join(rest)


class ActionsNotADict(GemError, TypeError, ValueError):
    """``MultiAgentEnv.step`` got something other than a dict ``{agent: action}``.

    A ``ValueError`` too, as code written for GEM catches.
    """


class AgentSelector:
    """Whose turn it is: one agent at a time (``"sequential"``) or all (``"simultaneous"``).

    Keeps GEM's method names (``get_active_agents``, ``next``, ``reinit``, ``add_agent``,
    ``remove_agent``, ``selected``); ``"parallel"`` is accepted for ``"simultaneous"``.
    """

    def __init__(self, agents: Sequence[str], mode: str = SEQUENTIAL) -> None:
        if mode not in _MODE_ALIASES:
            raise ValueError(f"Unknown turn mode {mode!r}; choose one of: {', '.join(_MODE_ALIASES)}.")
        self.mode = _MODE_ALIASES[mode]
        self.reinit(agents)

    def reinit(self, agents: Sequence[str]) -> None:
        """Start over with ``agents``; the first one moves first."""
        self._agents = list(agents)
        self._index = 0
        self.selected: Optional[str] = self._agents[0] if self._agents else None

    def get_active_agents(self) -> list[str]:
        """The agents that must act in the next step."""
        if self.mode == SIMULTANEOUS:
            return list(self._agents)
        return [self.selected] if self.selected is not None else []

    def next(self) -> Optional[str]:
        """Pass the turn to the next agent in order (sequential mode) and return it."""
        if self.mode == SEQUENTIAL and self._agents:
            self._index = (self._index + 1) % len(self._agents)
            self.selected = self._agents[self._index]
        return self.selected

    def select(self, agent: str) -> None:
        """Give the turn to ``agent`` (games whose turn order is not round-robin)."""
        self._index = self._agents.index(agent)
        self.selected = agent

    def is_first(self) -> bool:
        return self._index == 0

    def is_last(self) -> bool:
        return self._index == len(self._agents) - 1

    def add_agent(self, agent: str) -> None:
        if agent not in self._agents:
            self._agents.append(agent)
            if self.selected is None:
                self.reinit(self._agents)

    def remove_agent(self, agent: str) -> None:
        """Drop ``agent``. If it held the turn, the agent before it is selected, so that the
        ``next()`` that ends a step reaches the agent after it."""
        if agent not in self._agents:
            return
        idx = self._agents.index(agent)
        self._agents.remove(agent)
        if not self._agents:
            self._index, self.selected = 0, None
            return
        if idx <= self._index:
            self._index -= 1
        self._index %= len(self._agents)
        self.selected = self._agents[self._index]


# ------------------------------------------------ players every game can seat
class Player(Agent):
    """An agent with its own generator; ``seed(s)`` makes its choices reproducible."""

    def __init__(self, seed: Optional[int] = None) -> None:
        self.rng = random.Random(seed)

    def seed(self, seed: Optional[int]) -> None:
        """Restart the player's generator from ``seed``."""
        self.rng = random.Random(seed)


class RandomPlayer(Player):
    """Picks uniformly among ``info["legal_actions"]``."""

    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        legal = (info or {}).get("legal_actions") or []
        if not legal:
            raise ValueError(
                "RandomPlayer needs info['legal_actions'] (a MultiAgentEnv gives it to the acting agent); "
                "it was called for an agent that is not acting or with a foreign info dict."
            )
        return self.rng.choice(legal)



class MultiAgentEnv(Env):
    """Base class of multi-agent envs (see the module docstring for the conventions).

    Subclasses call ``super().__init__(possible_agents, mode=...)`` and implement:

    - ``_reset_game(**kwargs)``: set up a new game from ``self.rng`` (called by ``reset``).
    - ``observe(agent) -> str``: what ``agent`` sees of the game now.
    - ``parse_action(agent, text) -> move or None``: ``None`` is a format error.
    - ``_apply(moves)``: play ``{agent: move}`` for the acting agents, reporting through
      ``_reward``, ``_note``, ``_invalid`` (turn stays), ``_end_game`` and ``_retire``.
    - ``legal_actions(agent) -> list[str]``: well-formed actions (``sample_random_action`` draws one).
    - optionally ``view(agent) -> dict`` (the agent's own structured view, in ``info["view"]``,
      for scripted players), ``action_prompt(agent)``, ``_forfeit_rewards``, ``_truncation_rewards``
      and ``make_scripted_player(agent)``.

    A class that implements ``_process_actions`` instead is refused when it is created (it
    subclasses ``gem.multiagent.MultiAgentEnv``, see the module docstring).
    """

    name: str = "game"
    _process_actions_contract = False  # True on gem.compat.multiagent's class

    def __init__(
        self,
        possible_agents: Optional[Sequence[str]] = None,
        mode: str = SEQUENTIAL,
        max_steps: int = DEFAULT_MAX_STEPS,
    ) -> None:
        agents = list(
            possible_agents if possible_agents is not None else getattr(self, "possible_agents", [])
        )
        self._set_agents(agents, mode, possible_agents is not None)
        if not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive int, got {max_steps!r}.")
        self.max_steps = max_steps
        self.terminations: dict[str, bool] = {}
        self.truncations: dict[str, bool] = {}
        self.rewards: dict[str, float] = {}
        self.infos: dict[str, dict[str, Any]] = {}
        self._cumulative_rewards: dict[str, float] = {}
        self.shared_memory: list[dict[str, str]] = []  # every message of the episode, in order
        self.global_context = ""
        self.step_count = 0
        self._inbox: dict[str, list[dict[str, str]]] = {}
        self._notes: dict[str, list[str]] = {}
        self._final: dict[str, dict[str, Any]] = {}
        self._keep_turn = False
        self._turn_to: Optional[str] = None

    def _set_agents(self, agents: list[str], mode: str, given: bool) -> None:
        """Check the subclass's hooks and the agent ids; set ``possible_agents`` and the selector."""
        missing = [h for h in _NATIVE_HOOKS if not _overrides(type(self), h)]
        if missing:
            raise TypeError(
                f"Can't instantiate {type(self).__name__}: implement {', '.join(missing)} "
                "(a class with observe and _process_actions subclasses gem.multiagent.MultiAgentEnv)."
            )
        valid = all(isinstance(a, str) and a for a in agents)
        if not agents or len(set(agents)) != len(agents) or not valid:
            raise ValueError(f"possible_agents must be unique non-empty strings, got {agents!r}.")
        self.possible_agents = agents
        self.agents = []
        self.agent_selector = AgentSelector(agents, mode)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if hasattr(cls, "_process_actions") and not cls._process_actions_contract:
            raise TypeError(
                f"{cls.__name__} implements _process_actions, the original GEM's multi-agent contract: "
                "subclass gem.multiagent.MultiAgentEnv (also gem.envs.multiagent.MultiAgentEnv) instead of "
                "gem.MultiAgentEnv."
            )

    @property
    def mode(self) -> str:
        """``"sequential"`` or ``"simultaneous"``."""
        return self.agent_selector.mode

    # ------------------------------------------------------------ subclass hooks
    # observe is needed by both contracts (see gem.compat.multiagent); the others are checked in __init__.
    @abc.abstractmethod
    def observe(self, agent: str) -> str:
        """What ``agent`` sees of the game now (messages and turn prompts are added by the base)."""

    def _reset_game(self, **kwargs: Any) -> None:
        """Set up a new game, drawing randomness from ``self.rng``."""
        raise NotImplementedError

    def parse_action(self, agent: str, text: str) -> Any:
        """The move in ``text`` (messages already removed), or ``None`` if it cannot be parsed."""
        raise NotImplementedError

    def _apply(self, moves: dict[str, Any]) -> None:
        """Play the parsed moves of the acting agents."""
        raise NotImplementedError

    def legal_actions(self, agent: str) -> list[str]:
        """Well-formed, legal action strings for ``agent`` now (empty when it is not acting)."""
        raise NotImplementedError

    def view(self, agent: str) -> dict[str, Any]:
        """``agent``'s structured view of the game (only what it may know), for scripted players."""
        return {}

    def action_prompt(self, agent: str) -> str:
        """The instruction shown when it is ``agent``'s turn."""
        return "It is your turn."

    def _forfeit_rewards(self, offenders: Sequence[str]) -> dict[str, float]:
        """Rewards of the other agents when ``offenders`` made format errors (default: loss level)."""
        return {a: self.fail_reward for a in self.agents if a not in offenders}

    def _truncation_rewards(self) -> dict[str, float]:
        """Rewards when ``max_steps`` cuts the game (default: loss level for everyone)."""
        return {a: self.fail_reward for a in self.agents}

    def _draw_reward(self) -> float:
        """A draw: half way between a win and a loss."""
        return (self.success_reward + self.fail_reward) / 2

    def make_scripted_player(self, agent: str) -> "Agent":
        """A strong scripted player for ``agent``'s seat."""
        raise NotImplementedError(f"{type(self).__name__} has no scripted player.")

    def make_random_player(self, agent: str) -> "Agent":
        """A player that picks a legal action uniformly at random."""
        return RandomPlayer()

    # ------------------------------------------------ helpers for subclasses
    def _reward(self, agent: str, reward: float) -> None:
        self.rewards[agent] = self.rewards.get(agent, 0.0) + float(reward)

    def _note(self, agent: str, text: str) -> None:
        """A line of feedback shown at the top of ``agent``'s observations until it next acts."""
        self._notes.setdefault(agent, []).append(text)

    def _note_all(self, text: str) -> None:
        for agent in self.agents:
            self._note(agent, text)

    def _invalid(self, agent: str, text: str) -> None:
        """``agent`` made an illegal (but well-formed) move: invalid-move reward, it moves again."""
        self._reward(agent, self.invalid_action_reward)
        self._note(agent, f"Invalid move: {text} Try again.")
        self._keep_turn = True

    def _give_turn(self, agent: str) -> None:
        """The next turn goes to ``agent`` (for turn orders that are not round-robin)."""
        self._turn_to = agent

    def _end_game(
        self,
        rewards: Mapping[str, float],
        winners: Sequence[str] = (),
        truncated: bool = False,
        info: Optional[Mapping[str, Any]] = None,
    ) -> None:
        """End the game for every live agent with final ``rewards``; ``winners`` get success."""
        for agent in list(self.agents):
            if self.terminations.get(agent) or self.truncations.get(agent):
                continue  # already retired this step
            self._retire(
                agent, rewards.get(agent, 0.0), success=agent in winners, truncated=truncated, info=info
            )

    def _retire(
        self,
        agent: str,
        reward: float = 0.0,
        success: bool = False,
        truncated: bool = False,
        info: Optional[Mapping[str, Any]] = None,
    ) -> None:
        """``agent`` leaves the game (the others may go on); removed from ``agents`` after the step."""
        self._reward(agent, reward)
        if truncated:
            self.truncations[agent] = True
        else:
            self.terminations[agent] = True
        self._final[agent] = {"success": bool(success), **(info or {})}

    # ------------------------------------------------------------------ the API
    def reset(
        self, seed: Optional[int] = None, **kwargs: Any
    ) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:  # type: ignore[override]
        """Start a game; returns ``(observations, infos)`` keyed by agent."""
        super().reset(seed)
        self.agents = list(self.possible_agents)
        self.agent_selector.reinit(self.agents)
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.shared_memory = []
        self.global_context = ""
        self.step_count = 0
        self._inbox = {a: [] for a in self.agents}
        self._notes = {}
        self._final = {}
        self._reset_game(**kwargs)
        observations = {a: self._observation(a) for a in self.agents}
        infos = {a: self._agent_info(a) for a in self.agents}
        self.infos = {a: dict(i) for a, i in infos.items()}  # built fresh each step: no deep copy needed
        return observations, infos

    def _step(self, actions: Mapping[str, Any]) -> MultiStepResult:  # type: ignore[override]
        """Apply ``{agent: action}`` for the acting agents; returns five dicts keyed by agent."""
        if not isinstance(actions, Mapping):
            raise ActionsNotADict(
                f"{type(self).__name__}.step() takes a dict {{agent: action}}, got {type(actions).__name__}; "
                f"the acting agents are {self.active_agents()}. For a single-agent view use an id "
                "ending in '-vs-scripted' or '-vs-random'."
            )
        before = list(self.agents)
        acting = self.active_agents()
        self.rewards = {a: 0.0 for a in before}
        self._final, self._keep_turn, self._turn_to = {}, False, None
        ignored: dict[str, str] = {}
        for agent in actions:
            if agent not in acting:
                if agent in before:
                    ignored[agent] = "it is not your turn; the action was ignored"
                    self._note(agent, "It was not your turn; your action was ignored.")
        moves: dict[str, Any] = {}
        offenders: list[str] = []
        outgoing: list[tuple[str, Optional[str], str]] = []
        for agent in acting:
            # it acted on an observation that showed its notes and messages
            self._inbox[agent] = []
            self._notes[agent] = []
            text = actions.get(agent)
            if not isinstance(text, str):
                offenders.append(agent)
                self._note(
                    agent,
                    "No action was given (expected text)."
                    if text is None
                    else f"The action must be text, got {type(text).__name__}.",
                )
                continue
            messages, rest = split_messages(text)
            move = self.parse_action(agent, rest)
            if move is None:
                offenders.append(agent)
                self._note(agent, f"Could not read a move in {preview(rest)!r}. {self.action_prompt(agent)}")
                continue
            moves[agent] = move
            outgoing.extend((agent, to, body) for to, body in messages[:MAX_MESSAGES_PER_ACTION])
        self.step_count += 1
        if offenders:
            names = ", ".join(offenders)
            for agent in offenders:
                self._retire(agent, self.format_error_reward, info={"format_error": True})
            others = self._forfeit_rewards(offenders)
            self._note_all(f"The game is over: {names} made a format error.")
            self._end_game(
                others,
                winners=[a for a, r in others.items() if r >= self.success_reward],
                info={"reason": f"format error by {names}"},
            )
        else:
            for sender, to, body in outgoing:
                self._deliver(sender, to, body)
            self._apply(moves)
            if self.agents and not all(self.terminations[a] or self.truncations[a] for a in self.agents):
                if self.step_count >= self.max_steps:
                    self._note_all(f"The game is over: the step limit ({self.max_steps}) was reached.")
                    self._end_game(self._truncation_rewards(), truncated=True, info={"reason": "step limit"})
        return self._finish_step(before, ignored)

    def _episode_over_result(self) -> MultiStepResult:  # type: ignore[override]
        """A step after the end: reward 0 for every agent, the end's flags, nothing changes."""
        agents = list(self.possible_agents)
        ended = getattr(self, "truncations", {}) or {}
        return (
            {a: EPISODE_OVER_OBSERVATION for a in agents},
            {a: 0.0 for a in agents},
            {a: not ended.get(a, False) for a in agents},
            {a: bool(ended.get(a, False)) for a in agents},
            {a: {"episode_over": True} for a in agents},
        )

    def _finish_step(self, before: list[str], ignored: dict[str, str]) -> MultiStepResult:
        for agent, reward in self.rewards.items():
            self._cumulative_rewards[agent] = self._cumulative_rewards.get(agent, 0.0) + reward
        leaving = [a for a in before if self.terminations.get(a) or self.truncations.get(a)]
        acted = self.agent_selector.selected
        for agent in leaving:
            self.agents.remove(agent)
            self.agent_selector.remove_agent(agent)
        if self.mode == SEQUENTIAL and self.agents:
            if self._turn_to is not None and self._turn_to in self.agents:
                self.agent_selector.select(self._turn_to)
            elif not self._keep_turn or acted in leaving:
                self.agent_selector.next()
        observations = {a: self._observation(a) for a in before}
        infos = {a: self._agent_info(a) for a in before}
        for agent, why in ignored.items():
            infos[agent]["ignored_action"] = why
        self.infos = {a: dict(i) for a, i in infos.items()}
        terminations = {a: bool(self.terminations.get(a)) for a in before}
        truncations = {a: bool(self.truncations.get(a)) for a in before}
        rewards = {a: float(self.rewards.get(a, 0.0)) for a in before}
        if not self.agents:
            self._needs_reset = True
        return observations, rewards, terminations, truncations, infos

    # ------------------------------------------------------------ turn helpers
    @property
    def current_agent(self) -> Optional[str]:
        """The agent whose turn it is (sequential mode); ``None`` in simultaneous mode or at the end."""
        if self.mode == SIMULTANEOUS or not self.agents:
            return None
        return self.agent_selector.selected

    @property
    def agent_selection(self) -> Optional[str]:
        """PettingZoo's name for :attr:`current_agent`."""
        return self.current_agent

    @property
    def num_agents(self) -> int:
        return len(self.agents)

    def active_agents(self) -> list[str]:
        """The agents that must act in the next step."""
        if not self.agents:
            return []
        return self.agent_selector.get_active_agents()

    def sample_random_action(self, agent: Optional[str] = None) -> str:
        """A legal action for ``agent`` (default: the first acting agent), from ``action_rng``."""
        if agent is None:
            active = self.active_agents()
            if not active:
                return ""
            agent = active[0]
        legal = self.legal_actions(agent)
        return self.action_rng.choice(legal) if legal else ""

    def sample_random_actions(self) -> dict[str, str]:
        """A legal action for every acting agent."""
        return {a: self.sample_random_action(a) for a in self.active_agents()}

    # -------------------------------------------------------------- messages
    def _deliver(self, sender: str, to: Optional[str], body: str) -> None:
        text = preview(body.strip(), MAX_MESSAGE_CHARS)
        if not text:
            return
        if to is None or to == "all":
            recipients = [a for a in self.agents if a != sender]
        elif to in self.agents and to != sender:
            recipients = [to]
        else:
            self._note(
                sender,
                f"Your message to {preview(to, 64)!r} was not delivered: "
                f"send to one of {[a for a in self.agents if a != sender]} or to everyone.",
            )
            return
        for recipient in recipients:
            message = {"from": sender, "to": recipient, "message": text}
            self.shared_memory.append(message)
            self._inbox.setdefault(recipient, []).append(message)

    def send_message(self, from_agent: str, to_agent: str, message: str) -> None:
        """Deliver ``message`` from ``from_agent`` to ``to_agent`` (both live) in its next observation."""
        for who in (from_agent, to_agent):
            if who not in self.agents:
                raise ValueError(f"{who!r} is not a live agent; live agents: {self.agents}.")
        self._deliver(from_agent, to_agent, message)

    def broadcast_message(self, from_agent: str, message: str) -> None:
        """Deliver ``message`` from ``from_agent`` to every other live agent."""
        if from_agent not in self.agents:
            raise ValueError(f"{from_agent!r} is not a live agent; live agents: {self.agents}.")
        self._deliver(from_agent, None, message)

    # ---------------------------------------------------------- observations
    def _observation(self, agent: str) -> str:
        parts = list(self._notes.get(agent, ()))
        parts.append(self.observe(agent))
        inbox = self._inbox.get(agent, [])
        if inbox:
            parts.append(
                "Messages for you:\n" + "\n".join(f"- from {m['from']}: {m['message']}" for m in inbox)
            )
        if agent in self.agents and agent in self.active_agents():
            parts.append(self.action_prompt(agent))
        elif agent in self.agents:
            parts.append(f"Waiting for {', '.join(self.active_agents())}.")
        return "\n\n".join(p for p in parts if p)

    def _agent_info(self, agent: str) -> dict[str, Any]:
        active = agent in self.agents and agent in self.active_agents()
        info: dict[str, Any] = {
            "agent": agent,
            "active": active,
            "view": self.view(agent),
            "messages": [dict(m) for m in self._inbox.get(agent, [])],
        }
        if active:
            info["legal_actions"] = self.legal_actions(agent)
            info["suffix"] = self.action_prompt(agent)
        if agent in self._final:
            info.update(self._final[agent])
        return info

    # ---------------------------------------------------------- GEM's names
    def get_state(self, agent: Optional[str] = None) -> Any:  # type: ignore[override]
        """Without ``agent``: a snapshot for ``set_state``. With one (GEM's use): ``agent``'s
        ``(observation, cumulative reward, terminated, truncated, info)``."""
        if agent is None:
            return super().get_state()
        if agent not in self.agents:
            raise ValueError(f"{agent!r} is not a live agent; live agents: {self.agents}.")
        return self._agent_state(agent)

    def _agent_state(self, agent: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        return (
            self._observation(agent),
            self._cumulative_rewards.get(agent, 0.0),
            self.terminations.get(agent, False),
            self.truncations.get(agent, False),
            self._agent_info(agent),
        )

    def get_active_states(self) -> dict[str, Any]:
        """``get_state(agent)`` for every acting agent."""
        return {a: self.get_state(a) for a in self.active_agents() if a in self.agents}

    def add_agent(self, agent_id: str) -> None:
        """A new agent joins mid-game (games that allow it)."""
        if agent_id in self.agents:
            return
        if agent_id not in self.possible_agents:
            self.possible_agents.append(agent_id)
        self.agents.append(agent_id)
        if self.agent_selector is not None:
            self.agent_selector.add_agent(agent_id)
        self.terminations[agent_id] = self.truncations[agent_id] = False
        self.rewards[agent_id] = self._cumulative_rewards[agent_id] = 0.0
        self.infos[agent_id] = {}
        self._inbox[agent_id] = []

    def remove_agent(self, agent_id: str) -> None:
        """Take ``agent_id`` out of the game now (no reward)."""
        if agent_id not in self.agents:
            return
        self.agents.remove(agent_id)
        selector = self.agent_selector
        had_turn = selector.selected == agent_id
        selector.remove_agent(agent_id)
        if had_turn and self.mode == SEQUENTIAL:
            selector.next()  # the turn passes to the agent after it
        if not self.agents:
            self._needs_reset = True

    def make_solver(self) -> "Agent":
        raise NotImplementedError(
            f"{type(self).__name__} is multi-agent: use make_scripted_player(agent), or a single-agent "
            "view (an id ending in '-vs-scripted') whose solver is the scripted player."
        )

    def __str__(self) -> str:
        name = "" if self.spec is None else " " + self.spec.id
        return f"<{type(self).__name__}{name} agents={self.possible_agents}>"
