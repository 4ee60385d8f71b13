"""The sandbox's warm worker ("zygote"): a pre-imported Python that keeps children forked.

Started by :mod:`gem.sandbox` as ``python -I -S -c <boot> <life fd> <work fd>`` with a scrubbed
environment, its code arriving compiled through a descriptor; its configuration (JSON) is the
first message on the life socket (``config["site_dirs"]`` are the caller's site-packages,
``config["seccomp"]`` the runs' filter, built by the caller). It imports nothing from ``gem``
(the children must not see the library). The worker keeps
``prefork`` children waiting on the shared ``SOCK_SEQPACKET`` work socket; the kernel hands each
request to exactly one of them, so neither a fork nor the worker is on a run's critical path:

* a request is one message, a fixed header (:data:`HEADER`: kind, limits), with descriptors
  attached: ``[control, input, stdout, stderr, status]`` (plus ``[session]`` for a session);
* the child passes ``control`` to the worker (it must not keep it), applies the limits (hard
  limits: the run cannot raise them), reads ``<8-byte length><code>`` from ``input`` (the rest is
  the program's stdin), runs the code and writes ``b"<exit status> <cpu seconds>\\n"`` to
  ``status`` just before exiting;
* on ``control`` the caller may send ``b"kill"`` (and, for a session, ``b"cell <cpu>"`` before a
  cell and ``b"stop"`` after it); the worker answers with ``{"status": wait status, ...}`` (JSON)
  when the child has been reaped. When the caller closes ``control`` the run and everything it
  started are killed. When the life socket closes (the caller's process ended) the worker exits.

Confinement. The worker enters a mount namespace of its own where every mount is read-only and
the hidden paths (``config["hidden"]``: GEM's package, its checkout, home directories, Hugging Face
caches, ...) are covered by empty read-only tmpfs mounts, into which only the interpreter's module
directories are bound back. Each waiting child is then, ahead of its request, the first process
(pid 1) of new PID, mount and cgroup namespaces, in its slot's pooled network and IPC namespaces
(see :meth:`Zygote.slot_ns`: the filter leaves a run nothing to change in them) and the worker's
UTS namespace, and, as root, in its slot's memory, pids and freezer cgroups (:class:`Cgroups`:
limits over the whole run): it mounts a fresh ``/proc`` (it sees
only its own processes) and a private ``/tmp`` (a tmpfs with byte and inode quotas), switches to
an unprivileged identity, sets no-new-privileges and the seccomp filter the caller built
(:mod:`gem.sandbox.seccomp`).
The worker never shares a uid with a run: it kills a run from outside with ``SIGKILL`` to the run's
pid 1, which takes the whole PID namespace with it (daemons included), and the kernel frees the
run's tmpfs when its mount namespace ends (no walk over what it left).

* As root each concurrent run has a host uid of its own (``uid_base + pid * 256 + slot``).
* Without root the worker first enters a user namespace where it is root (its uid mapped to 0),
  and each run gets a nested user namespace of its own (uid 1000 there, no capabilities), so its
  process limit is its own. Where user namespaces are not available the worker refuses to start
  (its hello carries ``error``) unless ``config["unsafe"]`` asks for a run without namespaces.

Speed: a run's cost is mostly page faults, each page the child (or the worker, after a fork)
writes being copied. So the worker keeps its heap and mappings small (``-S``, no ``shutil``),
forks without Python's after-fork hooks (:data:`_raw_fork`), and a waiting child does all it can
(namespaces, mounts, identity, filter, a warmed-up run path) before its request arrives
(:meth:`RunChild.child`, which the worker's class inherits).

Where it is written. This file holds no code of the worker's own: the worker's source is seven
files of ``gem/sandbox/``, the parts, which :mod:`gem.sandbox._worker_source` concatenates in a
fixed order into one source text and compiles to one code object; the worker runs that one code
object in a fresh interpreter, and importing this module runs it here, in this module's namespace
(with ``__name__`` not ``"__main__"``: it defines, it starts nothing), so ``gem.sandbox._zygote``
keeps every name it had when it was one file. In order:

1. ``wire.py``: the framing both sides use, defined once (the caller imports it as
   :mod:`gem.sandbox.wire`): the request header, the code's length prefix, descriptor counts;
2. ``_zygote_base.py``: the pre-imported modules, kernel constants, libc, small system helpers
   (mount, unshare, id maps, /proc reads, descriptor passing, per-run uids);
3. ``_zygote_seccomp.py``: attaching the filter the caller built (:mod:`gem.sandbox.seccomp`
   builds it and documents what it refuses), dropping capabilities;
4. ``_zygote_mounts.py``: the worker's view of the host (read-only mounts, hidden paths), its
   user namespace without root, the pooled network and IPC namespaces;
5. ``_zygote_cgroups.py``: memory, pids and freezer cgroups per slot (as root);
6. ``_zygote_child.py``: a run's process: its confinement, the request, running the program,
   the session kernel;
7. ``_zygote_loop.py``: the worker: slots, waiting children, its ``epoll`` loop, kills, start-up
   and ``main()``.

The seccomp filter's tables and builder (``DENIED_SYSCALLS``, ``_SYSCALLS``,
``_seccomp_program``, ...) are importable from here too, as before.
"""

import linecache

from gem.sandbox._worker_source import FILENAME, worker_code, worker_source
from gem.sandbox.seccomp import (  # noqa: F401 - the filter's names, here since they were built here
    _NEW_NAMESPACES,
    _SECCOMP_RET_ALLOW,
    _SECCOMP_RET_ERRNO,
    _SYSCALLS,
    AF_INET,
    AF_INET6,
    AF_NETLINK,
    AF_UNIX,
    DENIED_SYSCALLS,
    F_NOTIFY,
    F_OFD_SETLK,
    F_OFD_SETLKW,
    F_SETLK,
    F_SETLKW,
    ISOLATED_FAMILIES,
    NETWORK_FAMILIES,
    NO_OP_FCNTL,
    NO_OP_SYSCALLS,
    UNSUPPORTED_SYSCALLS,
    _seccomp_program,
)

exec(worker_code(), globals())  # noqa: S102 - the worker's one code object (see above)
# Tracebacks through the worker's functions in this process show their source lines.
_source = worker_source()
linecache.cache[FILENAME] = (len(_source), None, _source.splitlines(True), FILENAME)
del _source
