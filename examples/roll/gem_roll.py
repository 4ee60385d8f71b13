"""GEM envs in ROLL's agentic pipeline.

ROLL builds its agentic envs with ``gem.make(env_id=env_type, **env_config)`` (ROLL adopted GEM's env
API), and its env managers call ``reset(seed=...)`` / ``step(action=...)``. So the extension point is
ROLL's ``custom_envs`` config: any GEM id is a valid ``env_type`` once this package is importable.
This module builds that config block (:func:`custom_envs_config`) and checks each id resolves and
plays in the current process (:func:`check_env_types`); ``gem_guess_the_number.yaml`` is a ready
config fragment. Written against ROLL 0.3.0 (see the README).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gem

DEFAULT_ENV_MANAGER = "roll.pipeline.agentic.env_manager.traj_env_manager.TrajEnvManager"
# ROLL's TrajEnvManager reads both templates from every custom_envs entry (a KeyError without them):
# the system message of the first turn, and each user turn rendered with ``str.format(observation=...)``.
AGENT_SYSTEM_TEMPLATE = "You are a helpful assistant who plays the game to win."
AGENT_TEMPLATE = "{observation}"


def custom_envs_config(env_ids: Sequence[str], max_steps: int = 20, max_tokens_per_step: int = 256,
                       env_manager_cls: str = DEFAULT_ENV_MANAGER,
                       agent_system_template: str = AGENT_SYSTEM_TEMPLATE,
                       agent_template: str = AGENT_TEMPLATE) -> dict[str, Any]:
    """ROLL ``custom_envs`` entries (tag -> settings) for GEM ids."""
    if "{observation}" not in agent_template:
        raise ValueError("agent_template must contain '{observation}' (ROLL formats each turn with it)")
    out: dict[str, Any] = {}
    for env_id in env_ids:
        tag = env_id.replace(":", "_").replace("-", "_")
        out[tag] = {"env_type": env_id, "max_steps": max_steps, "max_tokens_per_step": max_tokens_per_step,
                    "env_manager_cls": env_manager_cls, "agent_system_template": agent_system_template,
                    "agent_template": agent_template, "env_config": {}}
    return out


def check_env_types(config: dict[str, Any], seed: int = 0) -> None:
    """Make, reset and step every ``env_type`` of a ``custom_envs`` block the way ROLL's env manager
    does (raises on an unknown id)."""
    for entry in config.values():
        env = gem.make(env_id=entry["env_type"], **entry.get("env_config", {}))
        try:
            env.reset(seed=seed)
            env.step(action="")
        finally:
            env.close()
