"""The former path of :mod:`gem.services.search.serp_search_server`; the same module."""

import sys

from gem.services.search import serp_search_server as _module

if __name__ == "__main__":  # python -m gem.tools.search_engine.serp_search_server
    raise SystemExit(_module.main())
sys.modules[__name__] = _module
