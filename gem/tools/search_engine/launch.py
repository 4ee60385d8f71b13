"""The former path of :mod:`gem.services.search.launch`; the same module."""

import sys

from gem.services.search import launch as _module

sys.modules[__name__] = _module
