"""The sandbox worker's original module path: the same module as :mod:`gem.sandbox._zygote`."""

import sys

from gem.sandbox import _zygote

sys.modules[__name__] = _zygote
