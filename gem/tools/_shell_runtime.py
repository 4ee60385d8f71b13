"""The shell runtime's original module path: the same module as :mod:`gem.sandbox._shell_runtime`."""

import sys

from gem.sandbox import _shell_runtime

sys.modules[__name__] = _shell_runtime
