"""``gem.utils.sandbox``, the original GEM's sandbox module (this module is what that path imports,
see :mod:`gem.compat.aliases`): everything public of :mod:`gem.sandbox.sandbox`, ``check_host``, and
the original's calls.

``run_python(code, sandbox_type, stdin, timeout)`` returns the original's tuple ``(success,
stdout, stderr)``; ``subprocess_run`` and ``check_forbidden_imports`` behave as there. The code
always runs in GEM's sandbox (:mod:`gem.sandbox`): the original's ``sandbox_type`` chose between
no confinement and bubblewrap; here every run is confined, so nothing is screened.
``python -m gem.utils.sandbox --check`` works as ``python -m gem.sandbox --check``.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from gem.sandbox.sandbox import *  # noqa: F401,F403  (first: this module's run_python replaces its)
from gem.sandbox.host import _main, check_host  # noqa: F401
from gem.sandbox.sandbox import DEFAULT_TIMEOUT, SandboxResult, default_sandbox
from gem.sandbox.sandbox import run_python as _run_python

SANDBOX_TYPES = ("none", "bwrap", "auto")  # the original's values; our confinement always applies
ERROR_MSG_PREFIX = "Failed to execute program: "
# Prepended to a program that failed on an undefined name, as the original's run_python retried.
BASE_IMPORTS = "\n".join(
    [
        "import sys, os, re, math, heapq, bisect, string, random, itertools, functools, collections",
        "from math import *",
        "from heapq import *",
        "from bisect import *",
        "from itertools import *",
        "from functools import *",
        "from collections import *",
        "from typing import *",
        "sys.setrecursionlimit(1 << 16)",
    ]
)
_FORBIDDEN_MODULES = ("subprocess", "multiprocessing", "threading", "socket", "psutil", "resource", "ctypes")
_FORBIDDEN_CALLS = (
    "os.system", "os.popen", "os.spawn", "os.fork", "os.exec", "sys.exit", "os._exit", "os.kill"
)


def check_forbidden_imports(code: str) -> bool:
    """Whether ``code`` imports or calls something the original GEM screened out (a plain text
    check, as there). The sandbox does not need it; it is kept for callers that screen code."""
    if any(f"import {m}" in code or f"from {m}" in code for m in _FORBIDDEN_MODULES):
        return True
    return any(call in code for call in _FORBIDDEN_CALLS)


def _legacy_run(code: str, stdin: str | None, timeout: float) -> SandboxResult:
    if code == "...":  # the original answered this one without running it
        return SandboxResult("", "SyntaxError: invalid syntax", 1, "error", 0.0)
    return default_sandbox().run(code, stdin, timeout=timeout)


def subprocess_run(
    code: str,
    cmd_list: list[str] | None = None,
    sandbox_type: str = "none",
    stdin: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> tuple[bool, str, str]:
    """The original GEM's single run: ``(success, stdout, stderr stripped)``.

    ``cmd_list`` (the original's confinement command prefix) is not needed: the code runs in the
    shared sandbox. As there, a run past ``timeout`` raises :class:`subprocess.TimeoutExpired`.
    """
    result = _legacy_run(code, stdin, timeout)
    if result.reason == "timeout":  # (its CPU-time limit is the wall time: the original's only limit)
        raise subprocess.TimeoutExpired(cmd_list or ["python"], timeout, result.stdout, result.stderr)
    return result.exit_code == 0, result.stdout, result.stderr.strip()


def _legacy_run_python(
    code: str, sandbox_type: str, stdin: str | None, timeout: float
) -> tuple[bool, str, str]:
    if sandbox_type not in SANDBOX_TYPES:
        raise ValueError(
            f"sandbox_type must be one of {SANDBOX_TYPES}, got {sandbox_type!r} "
            "(for today's API pass stdin as a keyword: run_python(code, stdin=...))."
        )
    try:
        ok, out, err = subprocess_run(code, None, sandbox_type, stdin, timeout)
        if not ok and "is not defined" in err:
            ok, out, err = subprocess_run(BASE_IMPORTS + "\n" + code, None, sandbox_type, stdin, timeout)
    except subprocess.TimeoutExpired:
        return False, "", f"\nExecution timed out after {timeout} seconds."
    return ok, out, err


def run_python(
    code: str,
    sandbox_type: str | None = None,
    stdin: str | bytes | None = None,
    timeout: float | None = None,
    **limits: Any,
) -> Any:
    """Run untrusted Python ``code`` with ``stdin`` in the shared sandbox.

    Called as today (keyword arguments), it is :func:`gem.sandbox.run_python` and returns a
    :class:`~gem.sandbox.SandboxResult`. The original GEM's call passes ``sandbox_type``
    (``"none"``, ``"bwrap"`` or ``"auto"``), as the second positional argument or by name:
    ``run_python(code, "none", stdin, timeout)``. It returns the original's tuple ``(success,
    stdout, stderr)`` (``stderr`` stripped; on timeout ``(False, "", "\\nExecution timed out after
    T seconds.")``), and a program that fails on an undefined name is run once more with common
    imports prepended (:data:`BASE_IMPORTS`), as there. Either way the code runs in the sandbox
    (the original's ``"none"`` ran it unconfined after :func:`check_forbidden_imports`; here it is
    always confined, so nothing is screened).
    """
    if sandbox_type is None:
        return _run_python(code, stdin=stdin, timeout=timeout, **limits)
    if limits:
        raise ValueError(f"the original-style call takes stdin and timeout only, got {sorted(limits)}.")
    text_in = stdin.decode("utf-8", "replace") if isinstance(stdin, bytes) else stdin
    seconds = DEFAULT_TIMEOUT if timeout is None else timeout
    return _legacy_run_python(code, sandbox_type, text_in, seconds)


if __name__ == "__main__":
    sys.exit(_main())
