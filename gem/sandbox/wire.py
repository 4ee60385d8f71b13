"""The framing between the sandbox's caller (gem/sandbox/sandbox.py) and its worker, defined once.

Part 1 of the worker's source, and an ordinary module. The worker (gem/sandbox/_zygote.py) runs
in a fresh interpreter from one code object compiled from its parts, the files that
gem/sandbox/_worker_source.py lists, concatenated in that fixed order (one namespace: each part
sees the names of the others). The caller imports this file as ``gem.sandbox.wire``. So it stays
self-contained: the standard library only, nothing from ``gem`` (the runs must not see the
library) and no ``from __future__`` line (the assembled text has its own, first).

What goes over the wire:

* a request: one message on the shared ``AF_UNIX``/``SOCK_SEQPACKET`` work socket, :data:`HEADER`
  (kind, limits), with at most :data:`MAX_FDS` descriptors attached: ``[control, input, stdout,
  stderr, status]``, plus ``[session]`` for a session; the waiting child reads it with a buffer of
  :data:`MAX_HEADER` bytes;
* the ``input`` pipe: :data:`CODE_LENGTH` (the code's length in bytes), the code (UTF-8), then the
  program's stdin; a session's cells come the same way, one input pipe each;
* the ``status`` pipe: ``b"<exit status> <cpu seconds>\\n"`` (a session's cell adds ``" <busy>"``,
  0 or 1), written by the run just before it exits;
* the ``control`` socket: ``kill``, and for a session ``cell <cpu>``, ``cpu <cpu>``, ``stop``,
  ``direct`` from the caller; the worker's JSON report (``{"status": wait status, ...}``) when the
  run has been reaped.
"""

import struct

# The request header: kind (REQUEST_RUN or REQUEST_SESSION), address-space bytes, CPU seconds,
# file-size bytes, processes (-1: no limit).
HEADER = struct.Struct("<Bqdqq")
REQUEST_RUN, REQUEST_SESSION = 0, 1
MAX_HEADER = 64  # what a waiting child reads of a request (at least HEADER.size)
MAX_FDS = 8  # descriptors a request may carry
CODE_LENGTH = struct.Struct("<Q")  # before the code on a run's (or cell's) input pipe
