"""The original GEM's ``MultiAgentEnv`` and ``AgentSelector``, at its module paths ``gem.multiagent``,
``gem.multiagent.multi_agent_env`` (0.1.0) and ``gem.envs.multiagent.multi_agent_env`` (its main
branch), which import this module (see :mod:`gem.compat.aliases`).

A subclass written the original way calls ``super().__init__()``, sets ``self.possible_agents``
(and, for turns, ``self.agent_selector = AgentSelector(agents)``; without one every live agent acts
each step) and implements ``observe(agent)`` and
``_process_actions(actions) -> (observations, rewards, terminations, truncations, infos)``.
``reset`` then returns ``{agent: observe(agent)}`` and empty infos; ``step`` raises ``ValueError``
for a missing action of an acting agent or an action of one that is not acting (as the original),
calls ``_process_actions``, adds the rewards to ``_cumulative_rewards``, removes the agents whose
``self.terminations``/``self.truncations`` are set and passes the turn.

:class:`MultiAgentEnv` here subclasses :class:`gem.MultiAgentEnv` (whose own subclasses implement
its hooks instead, and are refused when they implement ``_process_actions``).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any, Optional, Sequence

from gem.core import Env
from gem.envs.multiagent.base import MultiAgentEnv as _MultiAgentEnv
from gem.envs.multiagent.base import SIMULTANEOUS, ActionsNotADict, AgentSelector, MultiStepResult

__all__ = ["AgentSelector", "MultiAgentEnv"]


class MultiAgentEnv(_MultiAgentEnv):
    """The original GEM's ``MultiAgentEnv``: :class:`gem.MultiAgentEnv` with the original's subclass
    contract (see the module docstring)."""

    _process_actions_contract = True

    def _set_agents(self, agents: list[str], mode: str, given: bool) -> None:
        # The original GEM's subclasses set possible_agents (and the selector) after __init__.
        self.possible_agents = agents
        self.agents = []
        self.agent_selector = AgentSelector(agents, mode) if given else None

    @property
    def mode(self) -> str:
        """Without a selector every live agent acts each step (``"simultaneous"``)."""
        return SIMULTANEOUS if self.agent_selector is None else self.agent_selector.mode

    def active_agents(self) -> list[str]:
        if self.agent_selector is None:
            return list(self.agents)
        return super().active_agents()

    @abc.abstractmethod
    def _process_actions(self, actions: dict[str, str]) -> MultiStepResult:
        """Play ``actions`` and return the five dicts of the step."""

    def reset(
        self, seed: Optional[int] = None, **kwargs: Any
    ) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:  # type: ignore[override]
        Env.reset(self, seed)
        self.agents = list(self.possible_agents)
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.rewards = {a: 0.0 for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.shared_memory = []
        self.global_context = ""
        if self.agent_selector is not None:
            self.agent_selector.reinit(self.agents)
        return {a: self.observe(a) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions: Any) -> MultiStepResult:  # type: ignore[override]
        if not isinstance(actions, Mapping):
            raise ActionsNotADict(f"Actions must be a dict {{agent: action}}, got {type(actions).__name__}.")
        self._validate_actions(actions, self.active_agents())
        observations, rewards, terminations, truncations, infos = self._process_actions(dict(actions))
        for agent in self.agents:
            if agent in rewards:
                self._cumulative_rewards[agent] = self._cumulative_rewards.get(agent, 0.0) + rewards[agent]
        self._remove_dead_agents()
        if self.agent_selector is not None:
            self.agent_selector.next()
        return observations, rewards, terminations, truncations, infos

    step._gem_step_guard = True  # type: ignore[attr-defined]  # the original checks no episode state

    def _deliver(self, sender: str, to: Optional[str], body: str) -> None:
        """The original keeps every message as sent, in ``shared_memory`` only."""
        recipients = [a for a in self.agents if a != sender] if to is None else [to]
        for recipient in recipients:
            self.shared_memory.append({"from": sender, "to": recipient, "message": body})

    def _agent_state(self, agent: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        return (
            self.observe(agent),
            self._cumulative_rewards.get(agent, 0.0),
            self.terminations.get(agent, False),
            self.truncations.get(agent, False),
            self.infos.get(agent, {}),
        )

    def add_agent(self, agent_id: str) -> None:
        known = list(self.possible_agents)
        super().add_agent(agent_id)
        self.possible_agents[:] = known  # the original does not add it to possible_agents

    def remove_agent(self, agent_id: str) -> None:
        """Take ``agent_id`` out now; the original forgets its entries and does not pass the turn."""
        if agent_id not in self.agents:
            return
        self.agents.remove(agent_id)
        if self.agent_selector is not None:
            self.agent_selector.remove_agent(agent_id)
        for table in (self.terminations, self.truncations, self.rewards, self.infos, self._cumulative_rewards):
            table.pop(agent_id, None)

    def _validate_actions(
        self, actions: Mapping[str, Any], active_agents: Optional[Sequence[str]] = None
    ) -> None:
        """Raise ``ValueError`` when an acting agent (still playing) has no action, or an agent that
        is not acting sent one (the original GEM's check)."""
        active = self.active_agents() if active_agents is None else list(active_agents)
        for agent in active:
            if self.terminations.get(agent, True) or self.truncations.get(agent, True):
                continue
            if agent not in actions:
                raise ValueError(f"Missing action for active agent {agent}; acting agents: {active}.")
        for agent in actions:
            if agent not in active:
                raise ValueError(f"Agent {agent} provided action but is not active; acting agents: {active}.")

    def _remove_dead_agents(self) -> None:
        """Remove every agent whose ``terminations``/``truncations`` entry is set."""
        for agent in [a for a in self.agents if self.terminations.get(a) or self.truncations.get(a)]:
            self.remove_agent(agent)

