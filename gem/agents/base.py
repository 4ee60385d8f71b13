"""The agent interface. The episode loop lives in :mod:`gem.rollout` (re-exported here)."""

from __future__ import annotations

import abc
import asyncio
from typing import Any, Optional

from gem.rollout import Episode, StopEpisode, arun_episode, episode_success, run_episode

__all__ = ["Agent", "Episode", "StopEpisode", "arun_episode", "episode_success", "run_episode"]


class Agent(abc.ABC):
    """Produces an action for each observation of an episode.

    ``reset`` receives the episode's first observation; ``act`` is then called with the latest
    observation (the first one included) and returns the action string. ``aact`` is the same for
    code inside an event loop; by default it runs ``act`` in a thread, and agents that wait on the
    network (:class:`~gem.agents.openai_agent.OpenAIAgent`) override it. An agent may raise
    :class:`~gem.rollout.StopEpisode` to end the episode early.
    """

    def reset(self, observation: str, info: Optional[dict[str, Any]] = None) -> None:
        """Start a new episode (stateless agents need nothing here)."""

    @abc.abstractmethod
    def act(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        """The action for ``observation``."""

    async def aact(self, observation: str, info: Optional[dict[str, Any]] = None) -> str:
        """:meth:`act` without blocking the event loop (in a worker thread)."""
        return await asyncio.to_thread(self.act, observation, info)
