"""The agent interface. :class:`Agent` is defined in :mod:`gem.core` (envs' solvers are agents, and
envs sit below the agents), the episode loop in :mod:`gem.rollout`; both are re-exported here."""

from __future__ import annotations

from gem.core import Agent
from gem.rollout import Episode, StopEpisode, arun_episode, episode_success, run_episode

__all__ = ["Agent", "Episode", "StopEpisode", "arun_episode", "episode_success", "run_episode"]
