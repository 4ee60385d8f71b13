"""The former path of :mod:`gem.services.search.corpus`; the same module."""

import sys

from gem.services.search import corpus as _module

sys.modules[__name__] = _module
