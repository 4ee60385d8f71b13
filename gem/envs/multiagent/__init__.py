"""Multi-agent games: the :class:`MultiAgentEnv` base, its checker, games, single-agent views and
self-play. Importing this package stays light; games load when made (``gem.make("multi:...")``)."""

from gem.compat import multiagent as _original_contract  # noqa: F401 -- sets base.adopt_original_contract
from gem.envs.multiagent.base import AgentSelector, MultiAgentEnv

__all__ = ["AgentSelector", "MultiAgentEnv"]
