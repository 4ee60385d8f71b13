"""The env's two checks: ``check_env`` (the contract) and ``validate`` (the adversarial prober).

``validate(env_id_or_env)`` plays the cheapest ways to reward against an env and returns a
:class:`Report` (``.ok``, ``.findings``); see docs/validate.md. ``check_env`` is the contract
checker of :mod:`gem.checks.env_checker` (``check_multiagent_env``, of
:mod:`gem.checks.multiagent_checker`, for multi-agent envs); both load when asked for.
"""

from __future__ import annotations

from typing import Any

from gem.checks.strategies import STRATEGIES, STRATEGY_NAMES, Strategy
from gem.checks.validate import CONTROLS, Finding, Report, validate

__all__ = [
    "CONTROLS",
    "STRATEGIES",
    "STRATEGY_NAMES",
    "Finding",
    "Report",
    "Strategy",
    "check_env",
    "check_multiagent_env",
    "validate",
]


def __getattr__(name: str) -> Any:  # the contract checkers load when asked for
    if name == "check_env":
        from gem.checks.env_checker import check_env

        return check_env
    if name == "check_multiagent_env":
        from gem.checks.multiagent_checker import check_multiagent_env

        return check_multiagent_env
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
