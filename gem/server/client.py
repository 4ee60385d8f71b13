"""The former path of :mod:`gem.http.client` (GEM's HTTP wire lives in :mod:`gem.http`): the same module."""

import sys

from gem.http import client as _module

sys.modules[__name__] = _module
