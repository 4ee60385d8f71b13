"""The former path of :mod:`gem.services.search.service`; the same module."""

import sys

from gem.services.search import service as _module

sys.modules[__name__] = _module
