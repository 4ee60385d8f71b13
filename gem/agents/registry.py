"""The one table of agents by name, used by ``gem run``, ``gem eval`` and ``gem play``.

``make_agent(name, env, **options)`` builds one; :func:`check_agent` says, before any work, whether
an agent can drive an env and, if not, which ones can.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from gem.agents.base import Agent


def _random(env: Any, **_: Any) -> Agent:
    from gem.agents.simple import RandomAgent

    return RandomAgent(env)


def _solver(env: Any, **_: Any) -> Agent:
    from gem.agents.simple import SolverAgent

    return SolverAgent(env)


def _openai(env: Any, **options: Any) -> Agent:
    from gem.agents.openai_agent import OpenAIAgent

    return OpenAIAgent(**options)


def _gold(env: Any, **_: Any) -> Agent:
    from gem.agents.gold import GoldAgent

    return GoldAgent(env)


def _gold_cannot_play(env: Any) -> Optional[str]:
    from gem.agents.gold import cannot_play

    return cannot_play(env)


def _human(env: Any, **options: Any) -> Agent:
    from gem.agents.simple import HumanAgent

    return HumanAgent(**options)


@dataclass(frozen=True)
class AgentSpec:
    """An agent by name: how to build it and the env method it needs (``None``: any text env);
    ``cannot_play(env)``, if given, says why it cannot play an env (``None``: it can)."""

    name: str
    factory: Callable[..., Agent]
    description: str
    needs: Optional[str] = None
    cannot_play: Optional[Callable[[Any], Optional[str]]] = None


AGENTS: dict[str, AgentSpec] = {
    spec.name: spec
    for spec in (
        AgentSpec("openai", _openai, "an LLM behind an OpenAI-compatible server (--model, --base-url)"),
        AgentSpec("random", _random, "the env's random actions", needs="sample_random_action"),
        AgentSpec("solver", _solver, "the env's own solver", needs="make_solver"),
        AgentSpec(
            "gold", _gold, "reads the answer key (single-turn tasks); for pipeline smoke tests only, never a baseline",
            cannot_play=_gold_cannot_play,
        ),
        AgentSpec("human", _human, "a person at the terminal (gem play)"),
    )
}
# The agents that play without a person (gem eval, gem run).
UNATTENDED: tuple[str, ...] = tuple(name for name in AGENTS if name != "human")


def _implements(env: Any, method: str) -> bool:
    from gem.core import Env

    base = getattr(Env, method)
    return getattr(type(getattr(env, "unwrapped", env)), method, base) is not base


def _is_multiagent(env: Any) -> bool:
    from gem.envs.multiagent.base import MultiAgentEnv

    return isinstance(getattr(env, "unwrapped", env), MultiAgentEnv)


def single_agent_views(env_id: Optional[str]) -> list[str]:
    """The registered single-agent views of the multi-agent game ``env_id``."""
    from gem.envs.registration import registry

    # dict.items: the built-in table only (listing every id would load optional namespaces)
    return sorted(
        spec_id for spec_id, spec in dict.items(registry) if env_id and spec.kwargs.get("game") == env_id
    )


def cannot_drive(name: str, env: Any) -> Optional[str]:
    """Why agent ``name`` cannot play ``env`` (``None`` when it can)."""
    if name not in AGENTS:
        raise KeyError(f"Unknown agent {name!r}; choose one of: {', '.join(AGENTS)}.")
    if _is_multiagent(env):
        views = single_agent_views(getattr(env, "env_id", None))
        hint = f"; play one of its single-agent views: {', '.join(views)}" if views else ""
        return f"{env.env_id or type(env).__name__} is a multi-agent env (one action per seat){hint}"
    needs = AGENTS[name].needs
    if needs and not _implements(env, needs):
        what = {"make_solver": "has no solver", "sample_random_action": "has no random actions"}[needs]
        return f"{env.env_id or type(env.unwrapped).__name__} {what}"
    if AGENTS[name].cannot_play is not None:
        return AGENTS[name].cannot_play(env)
    return None


def agents_for(env: Any, names: Optional[list[str]] = None) -> list[str]:
    """The agents (of ``names``, default all) that can play ``env``."""
    return [n for n in (names or list(AGENTS)) if cannot_drive(n, env) is None]


def check_agent(name: str, env: Any, names: Optional[list[str]] = None) -> None:
    """Raise a ``ValueError`` saying which agents can play ``env`` if ``name`` cannot."""
    reason = cannot_drive(name, env)
    if reason is None:
        return
    able = agents_for(env, names)
    raise ValueError(
        f"The {name} agent cannot play this env: {reason}."
        + (f" Agents that can: {', '.join(able)}." if able else "")
    )


def make_agent(name: str, env: Any, **options: Any) -> Agent:
    """Build agent ``name`` for ``env`` (``options`` go to its constructor, e.g. ``model=...``)."""
    if name not in AGENTS:
        raise KeyError(f"Unknown agent {name!r}; choose one of: {', '.join(AGENTS)}.")
    return AGENTS[name].factory(env, **options)
