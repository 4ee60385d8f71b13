"""The former path of :mod:`gem.services.search.web`; the same module."""

import sys

from gem.services.search import web as _module

sys.modules[__name__] = _module
