"""Players for multi-agent games: the random player, the scripted players' base (both defined in
:mod:`gem.envs.multiagent.base`, which seats them, and re-exported here), and player specs.

Players are :class:`gem.agents.base.Agent` objects, so a scripted player, a random player and an
LLM agent are interchangeable in any seat. They read only what their seat may know: the
observation text and ``info`` (``info["legal_actions"]`` and ``info["view"]``, the agent's own
structured view).

A *player spec* names a player: ``"random"``, ``"scripted"``, an ``Agent`` instance, or a callable
``(env, agent_id) -> Agent``. :func:`make_player` turns a spec into an agent.
"""

from __future__ import annotations

from typing import Callable, Union

from gem.core import Agent
from gem.envs.multiagent.base import MultiAgentEnv, Player, RandomPlayer  # noqa: F401  (their old home)

PlayerSpec = Union[str, Agent, Callable[["MultiAgentEnv", str], Agent]]
PLAYER_KINDS = ("random", "scripted")


def make_player(spec: PlayerSpec, env: "MultiAgentEnv", agent: str) -> Agent:
    """The agent for ``agent``'s seat described by ``spec`` (see the module docstring)."""
    if isinstance(spec, Agent):
        return spec
    if isinstance(spec, str):
        if spec == "random":
            return env.make_random_player(agent)
        if spec == "scripted":
            return env.make_scripted_player(agent)
        raise ValueError(
            f"Unknown player {spec!r}; choose one of: {', '.join(PLAYER_KINDS)}, an Agent, "
            "or a callable (env, agent_id) -> Agent."
        )
    if callable(spec):
        player = spec(env, agent)
        if not isinstance(player, Agent):
            raise TypeError(f"The player factory returned {type(player).__name__}, not a gem Agent.")
        return player
    raise TypeError(f"A player is 'random', 'scripted', an Agent or a factory; got {type(spec).__name__}.")


def seed_player(player: Agent, seed: int) -> None:
    """Seed ``player`` if it has a generator (``Player.seed``); other agents are left alone."""
    seeder = getattr(player, "seed", None)
    if callable(seeder):
        seeder(seed)
