"""The former path of :mod:`gem.grading.math_pool` (the math-verify worker pool); the same module."""

import sys

from gem.grading import math_pool as _module

sys.modules[__name__] = _module
