"""The former path of :mod:`gem.services.search.google_search_server`; the same module."""

import sys

from gem.services.search import google_search_server as _module

if __name__ == "__main__":  # python -m gem.tools.search_engine.google_search_server
    raise SystemExit(_module.main())
sys.modules[__name__] = _module
