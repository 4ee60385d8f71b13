"""Multi-agent games: their base, checker, games, single-agent views and self-play. Importing this
package stays light; games load when made (``gem.make("multi:...")``).

GEM's multi-agent base is :class:`gem.MultiAgentEnv` (:mod:`gem.envs.multiagent.base`). The name
``MultiAgentEnv`` here is the original GEM's class (its main branch's ``from gem.envs.multiagent
import MultiAgentEnv``): :class:`gem.compat.multiagent.MultiAgentEnv`, for subclasses written with
``observe`` and ``_process_actions``.
"""

from typing import Any

from gem.envs.multiagent.base import AgentSelector

__all__ = ["AgentSelector", "MultiAgentEnv"]


def __getattr__(name: str) -> Any:
    if name == "MultiAgentEnv":  # the original's class at the original's path, loaded when asked for
        from gem.compat.multiagent import MultiAgentEnv

        return MultiAgentEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
