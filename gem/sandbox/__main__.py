"""``python -m gem.sandbox --check``: which protections a sandboxed run gets on this host."""

import sys

from gem.sandbox.host import _main

sys.exit(_main())
