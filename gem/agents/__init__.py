"""Agents that produce actions: random, solver, gold (reads the answer key: pipeline smoke tests
only), a person at the terminal (and LLM agents).

``AGENTS``/``make_agent`` (:mod:`gem.agents.registry`) name them for ``gem run``, ``gem eval`` and
``gem play``; the episode loop is :mod:`gem.rollout` (``run_episode``/``arun_episode``).
"""

from gem.agents.base import Agent, Episode, StopEpisode, arun_episode, run_episode
from gem.agents.gold import GoldAgent
from gem.agents.registry import AGENTS, check_agent, make_agent
from gem.agents.simple import HumanAgent, RandomAgent, SolverAgent

__all__ = [
    "AGENTS",
    "Agent",
    "Episode",
    "GoldAgent",
    "HumanAgent",
    "OpenAIAgent",
    "RandomAgent",
    "SolverAgent",
    "StopEpisode",
    "arun_episode",
    "check_agent",
    "make_agent",
    "run_episode",
]


def __getattr__(name: str):  # OpenAIAgent imports openai only when asked for
    if name == "OpenAIAgent":
        from gem.agents.openai_agent import OpenAIAgent

        return OpenAIAgent
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
