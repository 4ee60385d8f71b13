"""GEM, the General Experience Maker: a gym for agentic LLMs.

``gem.make(id)`` builds an env, ``gem.make_vec(ids)`` a vector of them, ``gem.print_envs()``
lists the ids. ``import gem`` stays light: an env's heavy dependencies load when it is made.
"""

import logging

from gem.core import Env, EnvWrapper
from gem.envs.multiagent.base import MultiAgentEnv
from gem.envs.registration import (
    EnvSpec,
    list_envs,
    make,
    print_envs,
    register,
    registry,
    spec,
)
from gem.vector import make_vec
from gem.version import __version__

import gem.envs  # noqa: E402,F401  (registers the built-in ids)



def __getattr__(name: str):  # gem.validate loads the prober only when asked for (import gem stays light)
    if name == "validate":
        from gem.checks import validate

        return validate
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Silent unless the application configures logging (the CLI does).
logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "Env",
    "EnvSpec",
    "EnvWrapper",
    "MultiAgentEnv",
    "__version__",
    "list_envs",
    "make",
    "make_vec",
    "print_envs",
    "register",
    "registry",
    "spec",
    "validate",
]
