"""Multi-agent games: the :class:`MultiAgentEnv` base, its checker, games, single-agent views and
self-play. Importing this package stays light; games load when made (``gem.make("multi:...")``)."""

from gem.envs.multiagent.base import AgentSelector, MultiAgentEnv

__all__ = ["AgentSelector", "MultiAgentEnv"]
