"""The sandbox worker's source: the files it is made of, their order, and its one code object.

The worker (the "zygote", see :mod:`gem.sandbox._zygote`) runs in a fresh interpreter
(``python -I -S -c <boot>``) from one code object, which :mod:`gem.sandbox.sandbox` compiles once
per process and hands over marshalled, through a descriptor. Its source is kept as parts, one
file of ``gem/sandbox/`` per seam, so that each can be read on its own: :data:`PARTS`
concatenated in that fixed order, after a ``from __future__ import annotations`` line, with a
comment naming each part before it, is the one source text (:func:`worker_source`), compiled as
one module (:func:`worker_code`). Every part sees every other part's names, as the sections of
one file would; a part is therefore not a module of its own. The parts import nothing from
``gem`` (the runs must not see the library), and none has a ``from __future__`` line of its own
(it would fall in the middle of the text).

Importing :mod:`gem.sandbox._zygote` runs the same code object in that module's namespace, so the
worker's names (``Cgroups``, ``HEADER``, ``spin_until``, ...) can be imported and tested in the
caller's process.
"""

from __future__ import annotations

import functools
import os
import re
import types

# In order: a later part may use an earlier part's names at import time (a base class, a
# default argument); at call time every name is there.
PARTS = (
    "wire.py",  # the framing both sides use (the caller imports it as gem.sandbox.wire)
    "_zygote_base.py",  # pre-imported modules, kernel constants, libc, small system helpers
    "_zygote_seccomp.py",  # installing the filter the caller built; dropping capabilities
    "_zygote_mounts.py",  # the worker's view of the host, its user namespace, pooled namespaces
    "_zygote_cgroups.py",  # memory, pids and freezer cgroups per slot
    "_zygote_child.py",  # a run's process: confinement, the request, the program, sessions
    "_zygote_loop.py",  # the worker: slots, waiting children, its epoll loop, start-up, main()
)
# The code object's file name: shown in the worker's tracebacks (never a path: a run must not
# learn where GEM's package is).
FILENAME = "<gem-sandbox-worker>"
_HERE = os.path.dirname(os.path.abspath(__file__))
_FUTURE = re.compile(r"^\s*from\s+__future__\s+import", re.MULTILINE)


def _assemble() -> tuple[str, list[tuple[str, int, int]]]:
    """The source text, and for each part its path, the source's line before its first line, and
    its number of lines."""
    chunks = ["from __future__ import annotations\n"]
    spans = []
    line = 1
    for name in PARTS:
        with open(os.path.join(_HERE, name), encoding="utf-8") as fh:
            text = fh.read()
        if _FUTURE.search(text):
            raise ValueError(f"gem/sandbox/{name}: a part of the worker has no __future__ import of its own")
        if not text.endswith("\n"):
            text += "\n"
        chunks.append(f"\n# {'=' * 30} gem/sandbox/{name}\n")
        line += 2
        spans.append((f"gem/sandbox/{name}", line, text.count("\n")))
        chunks.append(text)
        line += text.count("\n")
    return "".join(chunks), spans


def worker_source() -> str:
    """The worker's whole source text: the parts, in order, behind one ``__future__`` line."""
    return _assemble()[0]


@functools.lru_cache(maxsize=1)
def worker_code() -> types.CodeType:
    """The worker's one code object (compiled once per process; run with ``__name__`` set to
    ``"__main__"``, it ends by calling ``main()``)."""
    return compile(worker_source(), FILENAME, "exec", dont_inherit=True)


def part_of_line(lineno: int) -> tuple[str, int]:
    """Where line ``lineno`` of the worker's source (a line of a worker traceback, shown with
    ``GEM_SANDBOX_DEBUG=1``) is written: the part's path and the line in it."""
    for path, before, count in _assemble()[1]:
        if before < lineno <= before + count:
            return path, lineno - before
    raise ValueError(f"line {lineno} of the worker's source is in no part (a part's marker line)")
