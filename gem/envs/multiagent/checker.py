"""The multi-agent env contract checker's original path: it lives in :mod:`gem.checks.multiagent_checker` (re-exported here)."""

from gem.checks.multiagent_checker import *  # noqa: F401,F403
from gem.checks.multiagent_checker import __all__  # noqa: F401
