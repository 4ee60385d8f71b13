"""The former path of :mod:`gem.services.search.build_index`; the same module."""

import sys

from gem.services.search import build_index as _module

if __name__ == "__main__":  # python -m gem.tools.search_engine.build_index
    raise SystemExit(_module.main())
sys.modules[__name__] = _module
