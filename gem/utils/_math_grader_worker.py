"""The former path of :mod:`gem.grading._math_worker` (the math-verify zygote); the same module,
and ``python -m gem.utils._math_grader_worker`` still starts the zygote."""

import sys

from gem.grading import _math_worker as _module

if __name__ == "__main__":
    _module.main()
else:
    sys.modules[__name__] = _module
