"""The former path of :mod:`gem.envs.single_turn` (the single-turn base); the same module."""

import sys

from gem.envs import single_turn

sys.modules[__name__] = single_turn
