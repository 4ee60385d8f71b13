"""The former path of :mod:`gem.compat.math_grader` (the original GEM's math grader names); the
same module."""

import sys

from gem.compat import math_grader as _module

sys.modules[__name__] = _module
