"""The sandbox's original module path (it lives in :mod:`gem.sandbox` now).

Everything public of :mod:`gem.sandbox.sandbox` is here, and the original GEM's calls
(``run_python(code, sandbox_type, stdin, timeout)``, ``subprocess_run``,
``check_forbidden_imports``; :mod:`gem.compat.sandbox`). ``python -m gem.utils.sandbox --check``
works as ``python -m gem.sandbox --check``.
"""

import sys

from gem.sandbox.sandbox import *  # noqa: F401,F403  (first: its run_python is replaced below)
from gem.sandbox.host import _main, check_host  # noqa: F401
from gem.compat.sandbox import (  # noqa: F401
    BASE_IMPORTS,
    ERROR_MSG_PREFIX,
    SANDBOX_TYPES,
    check_forbidden_imports,
    run_python,
    subprocess_run,
)

if __name__ == "__main__":
    sys.exit(_main())
