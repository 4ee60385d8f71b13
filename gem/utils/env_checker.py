"""The env contract checker's original path: it lives in :mod:`gem.checks.env_checker` (re-exported here)."""

from gem.checks.env_checker import *  # noqa: F401,F403
from gem.checks.env_checker import __all__  # noqa: F401
