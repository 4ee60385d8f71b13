"""The former path of :mod:`gem.services.search.retrieval_server`; the same module."""

import sys

from gem.services.search import retrieval_server as _module

if __name__ == "__main__":  # python -m gem.tools.search_engine.retrieval_server
    raise SystemExit(_module.main())
sys.modules[__name__] = _module
