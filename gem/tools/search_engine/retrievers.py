"""The former path of :mod:`gem.services.search.retrievers`; the same module."""

import sys

from gem.services.search import retrievers as _module

sys.modules[__name__] = _module
