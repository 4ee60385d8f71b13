"""The sandbox's warm worker ("zygote"): a pre-imported Python that keeps children forked.

Started by :mod:`gem.sandbox` as ``python -I -S _zygote.py <life fd> <work fd>``
with a scrubbed environment; its configuration (JSON) is the first message on the life socket
(``config["site_dirs"]`` are the caller's site-packages). It
imports nothing from ``gem`` (the children must not see the library). The worker keeps
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
an unprivileged identity, sets no-new-privileges and a seccomp filter (:func:`_seccomp_program`).
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
(:meth:`Zygote.child`).
"""

from __future__ import annotations

# Pre-imported so that a snippet's imports cost nothing in the child.
import _signal
import bisect  # noqa: F401
import collections  # noqa: F401
import copy  # noqa: F401
import ctypes
import decimal  # noqa: F401
import errno
import fcntl
import fractions  # noqa: F401
import functools  # noqa: F401
import gc
import heapq  # noqa: F401
import io  # noqa: F401
import itertools  # noqa: F401
import json
import linecache
import math  # noqa: F401
import operator  # noqa: F401
import os
import platform
import random
import re  # noqa: F401
import resource
import select
import signal
import socket
import statistics  # noqa: F401
import string  # noqa: F401
import struct
import sys
import threading
import time  # noqa: F401
import traceback
import types
import typing  # noqa: F401

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x02000000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 32, 4096, 8192, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER, PR_SET_SECCOMP = 1, 38, 36, 22
_MOUNT_FLAGS = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
}
# Mounts left as they are: /proc (each run mounts its own), devices (/dev/null must work) and /tmp
# (each run mounts its own). /sys becomes read-only like the rest.
_KEEP_WRITABLE = ("/proc", "/dev", "/tmp")
MAX_FDS = 8
# The whole environment a run sees (plus HOME and TMPDIR, its directory).
BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
WORK_ROOT = "/tmp"
RUN_UID = 1000  # a run's uid inside its own user namespace (non-root hosts)
RUN_PTYS = 64  # pseudo-terminals a run may hold at once (a devpts instance of its own)
# A session's CPU budget on a non-root host, in cells' worth: there the worker can lower a
# session's CPU limit but not raise its hard limit again, so the hard limit is set once.
SESSION_CPU_CELLS = 100
CPU_CHECK_S = 0.05  # how often a session's cell's CPU time is checked where its limit cannot move
_CAP_SYS_RESOURCE = 24


def spin_until(done: typing.Callable[[], bool], wait: float) -> bool:
    """Wait up to ``wait`` seconds for ``done()`` (a task entering the freezer or a stop: it takes
    a moment, usually a few yields, so yield first, then sleep briefly); whether it came true."""
    end = time.monotonic() + wait
    spins = 0
    while not done():
        if time.monotonic() > end:
            return False
        spins += 1
        if spins < 100:
            os.sched_yield()
        else:
            time.sleep(0.0002)
    return True


def _has_capability(cap: int) -> bool:
    """Whether this process has capability ``cap`` in effect (``CapEff`` of /proc/self/status)."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"CapEff:"):
                    return bool(int(line.split()[1], 16) >> cap & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False

_libc = ctypes.CDLL(None, use_errno=True)
_SIGCHLD, _SIGINT, _SIGKILL, _SIG_DFL = (
    int(s) for s in (signal.SIGCHLD, signal.SIGINT, signal.SIGKILL, signal.SIG_DFL)
)
# libc's fork() called with the GIL held. Python's os.fork() also runs its after-fork hooks in the
# child (threading's bookkeeping, random's reseed, ...): in this single-threaded worker they only
# rebuild what is already right, and their writes are copied page by page into every child (about
# 180 page faults, a third of a run's). The child reseeds random itself.
_raw_fork = ctypes.PyDLL(None, use_errno=True).fork
_raw_fork.argtypes = []
_raw_fork.restype = ctypes.c_int
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_libc.eventfd.argtypes = [ctypes.c_uint, ctypes.c_int]


MAX_SLOTS = 256  # (gem.sandbox checks ``slots`` against the same bound)


def run_uid_base(uid_base: int, pid: int) -> int:
    """The first uid of the worker with ``pid`` (root): its slot ``n`` runs as this plus ``n``.

    Every live worker gets its own range (pids are unique), so two sandboxes (in one process or
    in several) never share a uid. The stride is the most slots any worker may have, not this
    worker's: with its own count, a worker of 2 slots with pid 300 and one of 3 slots with pid
    200 would both have uid ``uid_base + 600``.
    """
    return uid_base + pid * MAX_SLOTS


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _enc(s):
    return None if s is None else s.encode()


def _mount(src, target, fstype, flags, data=None) -> None:
    _check(_libc.mount(_enc(src), _enc(target), _enc(fstype), flags, _enc(data)), f"mount {target}")


def _unshare(flags: int, what: str = "unshare") -> None:
    _check(_libc.unshare(flags), what)


def _write(path: str, data: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, data.encode())
    finally:
        os.close(fd)


def _map_ids(inside: int, outside_uid: int, outside_gid: int) -> None:
    """Map one uid and gid of the parent user namespace into the one just entered."""
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{inside} {outside_uid} 1")
    _write("/proc/self/gid_map", f"{inside} {outside_gid} 1")


# ------------------------------------------------------------------ the seccomp filter
# What sandboxed code never needs. Each is refused with EPERM (clone3 with ENOSYS, so that libc
# falls back to clone, whose flags the filter can read: no new namespaces).
DENIED_SYSCALLS = (
    "unshare setns mount umount2 pivot_root chroot open_tree move_mount fsopen fsconfig fsmount "
    "fspick mount_setattr ptrace process_vm_readv process_vm_writev kcmp pidfd_getfd keyctl add_key "
    "request_key bpf perf_event_open userfaultfd io_uring_setup io_uring_enter io_uring_register "
    "kexec_load kexec_file_load init_module finit_module delete_module reboot swapon swapoff acct "
    "quotactl syslog settimeofday clock_settime adjtimex clock_adjtime sethostname setdomainname "
    "vhangup open_by_handle_at name_to_handle_at iopl ioperm uselib lookup_dcookie mq_open mq_unlink "
    "mq_timedsend mq_timedreceive mq_notify mq_getsetattr "
    # System V IPC: its objects and id counters live in the (pooled) IPC namespace, and would
    # carry data from one run to the next. No Python program needs it (multiprocessing uses
    # POSIX semaphores and pipes).
    "shmget shmat shmdt shmctl semget semop semtimedop semctl msgget msgsnd msgrcv msgctl"
).split()
# Socket families a run may create (``socket``, ``socketpair``); any other is refused with
# EAFNOSUPPORT, as by a kernel built without it. Without the network (the default) only AF_UNIX:
# an isolated run has no interface up, so IP sockets could only leave state in its (pooled)
# network namespace (IPv6 flow labels, protocol counters), and AF_VSOCK (the host's hypervisor),
# AF_NETLINK (kernel interfaces), AF_PACKET, AF_BLUETOOTH, AF_ALG, AF_KEY, AF_XDP, ... are kernel
# surface no program needs. With ``network=True`` runs share the host's network: IPv4, IPv6 and
# netlink's routing protocol only (NETLINK_ROUTE: the queries libc's getaddrinfo makes) are
# allowed too.
# Locks and change notifications on a file live in the kernel with the file, and every run can
# open the host's (read-only) files: a run holding ``flock`` or a POSIX/OFD lock on, say, a stdlib
# module would be seen by a concurrent run that tests the lock (a blocked ``LOCK_NB``, ``F_GETLK``),
# and a run watching a host directory (inotify, fanotify, dnotify) would see another run's reads.
# So lock requests succeed without locking anything (a run's locks could only have guarded against
# its own processes; nothing of one run reaches another), ``F_GETLK`` reports the truth, which is
# that no run holds a lock, and the watches are refused as by a kernel built without them.
NO_OP_SYSCALLS = ("flock",)
UNSUPPORTED_SYSCALLS = ("inotify_init", "inotify_init1", "fanotify_init")  # ENOSYS
F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW, F_NOTIFY = 6, 7, 37, 38, 1026
NO_OP_FCNTL = (F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW)  # (64-bit ABIs have no F_SETLK64 of their own)
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
ISOLATED_FAMILIES = (AF_UNIX,)
NETWORK_FAMILIES = (AF_UNIX, AF_INET, AF_INET6, AF_NETLINK)
# Syscall numbers per architecture (the audit arch value seccomp reports, and the table).
_SYSCALLS = {
    "x86_64": (0xC000003E, {
        "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
        "fspick": 433, "mount_setattr": 442, "ptrace": 101, "process_vm_readv": 310,
        "process_vm_writev": 311, "kcmp": 312, "pidfd_getfd": 438, "keyctl": 250, "add_key": 248,
        "request_key": 249, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "kexec_load": 246,
        "kexec_file_load": 320, "init_module": 175, "finit_module": 313, "delete_module": 176,
        "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163, "quotactl": 179, "syslog": 103,
        "settimeofday": 164, "clock_settime": 227, "adjtimex": 159, "clock_adjtime": 305,
        "sethostname": 170, "setdomainname": 171, "vhangup": 153, "open_by_handle_at": 304,
        "name_to_handle_at": 303, "iopl": 172, "ioperm": 173, "uselib": 134, "lookup_dcookie": 212,
        "clone": 56, "clone3": 435, "capset": 126, "mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242,
        "mq_timedreceive": 243, "mq_notify": 244, "mq_getsetattr": 245,
        "shmget": 29, "shmat": 30, "shmctl": 31, "semget": 64, "semop": 65, "semctl": 66, "shmdt": 67,
        "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71, "semtimedop": 220, "socket": 41,
        "socketpair": 53, "fcntl": 72, "flock": 73, "inotify_init": 253, "inotify_init1": 294,
        "fanotify_init": 300,
    }),
    "aarch64": (0xC00000B7, {
        "unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
        "fspick": 433, "mount_setattr": 442, "ptrace": 117, "process_vm_readv": 270,
        "process_vm_writev": 271, "kcmp": 272, "pidfd_getfd": 438, "keyctl": 219, "add_key": 217,
        "request_key": 218, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "kexec_load": 104,
        "kexec_file_load": 294, "init_module": 105, "finit_module": 273, "delete_module": 106,
        "reboot": 142, "swapon": 224, "swapoff": 225, "acct": 89, "quotactl": 60, "syslog": 116,
        "settimeofday": 170, "clock_settime": 112, "adjtimex": 171, "clock_adjtime": 266,
        "sethostname": 161, "setdomainname": 162, "vhangup": 58, "open_by_handle_at": 265,
        "name_to_handle_at": 264, "lookup_dcookie": 18, "clone": 220, "clone3": 435, "capset": 91,
        "mq_open": 180, "mq_unlink": 181, "mq_timedsend": 182, "mq_timedreceive": 183, "mq_notify": 184,
        "mq_getsetattr": 185, "msgget": 186, "msgctl": 187, "msgrcv": 188, "msgsnd": 189, "semget": 190,
        "semctl": 191, "semtimedop": 192, "semop": 193, "shmget": 194, "shmctl": 195, "shmat": 196,
        "shmdt": 197, "socket": 198, "socketpair": 199, "fcntl": 25, "inotify_init1": 26, "flock": 32,
        "fanotify_init": 262,
    }),
}
_NEW_NAMESPACES = (
    CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET
)
_SECCOMP_RET_ALLOW, _SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000  # (ERRNO with 0: returns 0, runs nothing)


def _seccomp_program(machine: str | None = None, families: tuple[int, ...] = ISOLATED_FAMILIES) -> bytes | None:
    """The classic-BPF filter (``struct sock_filter[]``), or ``None`` for an unknown architecture.

    ``families``: the socket families ``socket`` and ``socketpair`` may create (see
    :data:`ISOLATED_FAMILIES`); others get EAFNOSUPPORT.

    Other ABIs (i386 system calls from a 64-bit process, x32) are refused as a whole: their
    numbers differ and would slip past the table.
    """
    arch_table = _SYSCALLS.get(machine or platform.machine())
    if arch_table is None:
        return None
    arch, table = arch_table
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    # The numbers form segments, each with one verdict: allowed, denied, clone3 (ENOSYS) or clone
    # (its flags decide); ``starts[i]`` begins segment ``i``. The x32 numbers (bit 30 set) are one
    # denied segment at the top.
    verdict = {table[name]: "eperm" for name in DENIED_SYSCALLS if name in table}
    verdict.update({table["clone3"]: "enosys", table["clone"]: "clone"})
    verdict.update({table["socket"]: "socket", table["socketpair"]: "socket", table["fcntl"]: "fcntl"})
    verdict.update({table[name]: "no-op" for name in NO_OP_SYSCALLS})
    verdict.update({table[name]: "enosys" for name in UNSUPPORTED_SYSCALLS if name in table})
    starts, verdicts = [0], ["allow"]
    for nr in sorted(verdict):
        for start, what in ((nr, verdict[nr]), (nr + 1, "allow")):
            if starts[-1] == start:  # (the "allow" after nr - 1)
                starts.pop()
                verdicts.pop()
            if verdicts[-1] != what:
                starts.append(start)
                verdicts.append(what)
    if arch == 0xC000003E and verdicts[-1] != "eperm":
        starts.append(0x40000000)  # x32 system calls
        verdicts.append("eperm")
    # (code, jump-true label, jump-false label, k); labels resolved below. The segment is found by
    # a binary search whose jumps land on the shared verdicts: the kernel runs the filter once per
    # system call number when it is attached (to cache the allowed ones) and compiles it, so a
    # short path and a short program keep that cost, paid by every run, low.
    prog: list[list] = [[ld, None, None, 4], [jeq, None, "eperm", arch], [ld, None, None, 0]]
    counter = iter(range(1 << 16))

    def search(lo: int, hi: int) -> str:
        """Code for the segments ``lo`` to ``hi - 1``; returns the label it starts at."""
        if hi - lo == 1:
            return verdicts[lo]
        mid, label = (lo + hi) // 2, f"n{next(counter)}"
        node = [jge, None, None, starts[mid]]
        prog.extend(([label], node))
        node[2] = search(lo, mid)
        node[1] = search(mid, hi)
        return label

    search(0, len(starts))
    prog += [
        ["clone"], [ld, None, None, 16],  # clone's flags (low half of args[0])
        [jset, "eperm", "allow", _NEW_NAMESPACES & 0xFFFFFFFF],
        ["socket"], [ld, None, None, 16],  # the family (args[0])
    ]
    for fam in families:
        prog.append([jeq, "netlink" if fam == AF_NETLINK else "allow", None, fam])
    prog += [
        [ret, None, None, _SECCOMP_RET_ERRNO | errno.EAFNOSUPPORT],
        ["netlink"], [ld, None, None, 32],  # the protocol (args[2]): NETLINK_ROUTE (0) only
        [jeq, "allow", None, 0],
        [ret, None, None, _SECCOMP_RET_ERRNO | errno.EAFNOSUPPORT],
        ["fcntl"], [ld, None, None, 24],  # the command (args[1]; the kernel reads it as 32 bits too)
    ]
    for cmd in NO_OP_FCNTL:
        prog.append([jeq, "no-op", None, cmd])
    prog += [
        [jeq, None, "allow", F_NOTIFY],
        [ret, None, None, _SECCOMP_RET_ERRNO | errno.EINVAL],  # as a kernel without dnotify
        ["no-op"], [ret, None, None, _SECCOMP_RET_ERRNO | 0],
        ["allow"], [ret, None, None, _SECCOMP_RET_ALLOW],
        ["eperm"], [ret, None, None, _SECCOMP_RET_ERRNO | errno.EPERM],
        ["enosys"], [ret, None, None, _SECCOMP_RET_ERRNO | errno.ENOSYS],
    ]
    labels, code = {}, []
    for ins in prog:
        if len(ins) == 1:
            labels[ins[0]] = len(code)
        else:
            code.append(ins)
    out = bytearray()
    for i, (op, jt, jf, k) in enumerate(code):
        rel = [0 if j is None else labels[j] - i - 1 for j in (jt, jf)]
        if not all(0 <= r < 256 for r in rel):  # (cBPF jumps go forward, at most 255 places)
            raise ValueError("seccomp filter too long")
        out += struct.pack("<HBBI", op, rel[0], rel[1], k)
    return bytes(out)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


def _install_seccomp(fprog: _SockFprog) -> None:
    """Attach the filter (``_SockFprog(len(program) // 8, program)``, built once in the worker: a
    child only passes its address) to this process (needs no-new-privileges set first)."""
    _check(_libc.prctl(PR_SET_SECCOMP, 2, ctypes.addressof(fprog), 0, 0), "seccomp")


def _drop_capabilities() -> None:
    """Empty this process's capability sets (a run in its own user namespace starts with all)."""
    header = struct.pack("<Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = bytes(24)
    nr = _SYSCALLS.get(platform.machine(), (0, {}))[1].get("capset")
    if nr is None:
        raise OSError(errno.ENOSYS, "capset: unknown architecture")
    _libc.syscall.restype = ctypes.c_long
    _check(_libc.syscall(ctypes.c_long(nr), header, data), "capset")


# ------------------------------------------------------------------ the worker's view of the host
def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def _keep_paths() -> list[str]:
    """What runs need to see: the interpreter, its standard library and site-packages."""
    keep = {os.path.realpath(p) for p in sys.path if p}
    keep.add(os.path.dirname(os.path.realpath(sys.executable)))
    keep.add(os.path.dirname(os.path.abspath(sys.executable)))  # a venv's bin/ (programs run sys.executable)
    if sys.prefix != sys.base_prefix:  # a venv: bin/, lib/ and pyvenv.cfg, which its python needs to start
        keep.add(os.path.realpath(sys.prefix))
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        lib = os.path.join(os.path.realpath(prefix), "lib")
        if os.path.isdir(lib):
            keep.add(lib)
    keep = {k for k in keep if os.path.isdir(k)}
    return sorted(k for k in keep if not any(o != k and _under(k, o) for o in keep))


def _cover(path: str, keep: list[str], writable: bool = False) -> list[str]:
    """Cover ``path`` with an empty tmpfs (a file with ``/dev/null``) in this mount namespace;
    the ``keep`` directories inside it are bound back, read-only (a hidden path inside one of them
    is covered afterwards: covers go from the shortest path to the longest)."""
    if not os.path.isdir(path):
        _mount("/dev/null", path, None, MS_BIND)
        _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
        return []
    back = [k for k in keep if _under(k, path) and k != path]
    handles = [(k, os.open(k, os.O_PATH | os.O_DIRECTORY)) for k in back]
    _mount("gem-hidden", path, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=1024,mode=0755")
    for k, handle in handles:
        os.makedirs(k, 0o755, exist_ok=True)
        _mount(f"/proc/self/fd/{handle}", k, None, MS_BIND | MS_REC)
        _mount(None, k, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.close(handle)
    if not writable:
        _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    return back


def _host_view(hidden: list[str], tmp_keep: list[str], info: dict) -> None:
    """In this (new) mount namespace: hide ``hidden``, make every other mount read-only."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    keep = _keep_paths()
    # /tmp: a small private tmpfs (staging for the covers below; every run mounts its own over
    # it); module directories that live under /tmp (a CI checkout's venv) are bound back.
    _cover(WORK_ROOT, keep, writable=True)
    tmp_keep.extend(k for k in keep if _under(k, WORK_ROOT) and k != WORK_ROOT)
    covered = []
    for path in sorted({os.path.realpath(h) for h in hidden if h}, key=len):
        if path in ("/", WORK_ROOT) or not os.path.lexists(path):
            continue
        try:
            _cover(path, keep)
            covered.append(path)
        except OSError as exc:
            info["notes"].append(f"could not hide {path}: {exc.strerror}")
    info["hidden"] = covered
    try:
        _cover("/dev/shm", [])  # the host's POSIX shared memory
    except OSError:
        pass
    exposed = _expose(keep)
    if exposed:
        info["notes"].append("made traversable for the runs: " + ", ".join(exposed))
    failed = []
    with open("/proc/self/mountinfo") as fh:
        mounts = [line.split() for line in fh]
    for fields in mounts:
        target, opts = fields[4].replace("\\040", " "), fields[5].split(",")
        if any(_under(target, k) for k in _KEEP_WRITABLE) or "ro" in opts:
            continue
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY
        for opt in opts:
            flags |= _MOUNT_FLAGS.get(opt, 0)
        try:
            _mount(None, target, None, flags)
        except OSError as exc:
            failed.append(f"{target}: {exc.strerror}")
    info["readonly_fs"] = not any(f.startswith("/: ") for f in failed)
    if failed:
        info["notes"].append("could not make read-only: " + "; ".join(failed[:5]))


_NS_NAMES = {CLONE_NEWNET: "net", CLONE_NEWIPC: "ipc"}
_IPC_TABLES = ("/proc/sysvipc/shm", "/proc/sysvipc/msg", "/proc/sysvipc/sem")
# A network namespace's count of sockets, of every family (its first line, "sockets: used N", is
# kept per namespace): one short read, where the unix socket table (the fallback) walks hash
# buckets. A socket a run leaves behind (kept alive in flight: passed in a message nobody
# received) is counted until the kernel frees it.
_SOCKSTAT = "/proc/self/net/sockstat"
_SOCKET_TABLES = ("/proc/self/net/unix",)


def _read_proc(path: str) -> bytes | None:
    """A whole /proc file (os-level calls: no file objects, fewer pages touched in a child)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except OSError:
        pass
    finally:
        os.close(fd)
    return b"".join(chunks)


def _ns_contents(kind: int) -> int:
    """How much the current network (sockets) or IPC (System V objects) namespace holds: the same
    number means nothing was added."""
    if kind == CLONE_NEWNET:
        first = (_read_proc(_SOCKSTAT) or b"").split(b"\n", 1)[0].split()
        if first[:2] == [b"sockets:", b"used"] and len(first) == 3 and first[2].isdigit():
            return int(first[2])
    n = 0
    for path in _SOCKET_TABLES if kind == CLONE_NEWNET else _IPC_TABLES:
        n += (_read_proc(path) or b"").count(b"\n")  # lines of its tables, headers included
    return n


def _enter_pooled(enter: list) -> int:
    """In a new child: enter the slot's pooled namespaces; where the network one holds more
    sockets than it did when new (one an earlier run left alive in flight), make a fresh one
    instead. Returns the kinds replaced. (A run can change nothing in the IPC one: System V IPC
    and POSIX queues are refused, /proc/sys is read-only; it is not counted.)"""
    dirty = 0
    for fd, kind, baseline in enter:
        _check(_libc.setns(fd, kind), "setns")
        if kind == CLONE_NEWNET and _ns_contents(kind) != baseline:
            _unshare(kind)
            dirty |= kind
    return dirty


def _detach(path: str) -> None:
    if os.path.ismount(path):
        _libc.umount2(path.encode(), 2)  # MNT_DETACH; locked mounts (without root) stay


def _rmtree(top: str) -> None:
    """Remove a directory tree without recursion (any depth) and without following links."""
    stack = [top]
    while stack:
        path = stack[-1]
        try:
            entries = list(os.scandir(path))
        except OSError:
            entries = []
        pushed = False
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                    pushed = True
                else:
                    os.unlink(entry.path)
            except OSError:
                pass
        if not pushed:
            stack.pop()
            try:
                os.rmdir(path)
            except OSError:
                pass


def _expose(paths: list[str]) -> list[str]:
    """Let unprivileged runs reach the interpreter's modules (``/opt/x/...`` under a 0700 parent).

    A directory on the way that others may not traverse is covered, in this mount namespace only,
    by an empty tmpfs of mode 0755 into which just the needed entries are bind-mounted back.
    Nothing else of it becomes visible.
    """
    done: list[str] = []
    for _ in range(8):  # one blocked level per pass
        blocked: dict[str, set[str]] = {}
        for path in paths:
            real = os.path.realpath(path) if path else ""
            if not real or not os.path.isdir(real):
                continue
            cur = "/"
            for part in real.strip("/").split("/"):
                if not os.stat(cur).st_mode & 0o001:
                    blocked.setdefault(cur, set()).add(part)
                    break
                cur = os.path.join(cur, part)
        if not blocked:
            return done
        for n, (parent, names) in enumerate(sorted(blocked.items())):
            staged = []
            for k, name in enumerate(sorted(names)):
                stage = os.path.join(WORK_ROOT, f".expose{len(done)}-{n}-{k}")
                os.mkdir(stage, 0o700)
                _mount(os.path.join(parent, name), stage, None, MS_BIND | MS_REC)
                staged.append((name, stage))
            _mount("gem-expose", parent, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755")
            for name, stage in staged:
                os.mkdir(os.path.join(parent, name), 0o755)
                _mount(stage, os.path.join(parent, name), None, MS_MOVE)
                os.rmdir(stage)
            done.append(parent)
    return done


def _enter_user_namespace() -> None:
    """Non-root: become root of a new user namespace (this uid mapped to 0) with new mount and
    PID namespaces; the worker goes on in a child, pid 1 there, with its own ``/proc``. The
    original process only waits for it and exits as it does."""
    uid, gid = os.geteuid(), os.getegid()
    _unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID, "unshare(CLONE_NEWUSER)")
    _map_ids(0, uid, gid)
    pid = os.fork()
    if pid:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _, status = os.waitpid(pid, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    _libc.prctl(PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def _userns_help(exc: OSError) -> str:
    return (
        f"the sandbox needs root or unprivileged user namespaces, and {exc}. Enable them "
        "(`sysctl -w kernel.unprivileged_userns_clone=1` on Debian/Ubuntu kernels, "
        "`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` on Ubuntu 23.10+, "
        "`sysctl -w user.max_user_namespaces=10000` where it is 0), run as root, or opt in to "
        "running untrusted code without isolation with GEM_SANDBOX_UNSAFE=1 / Sandbox(unsafe=True) "
        "(not recommended)"
    )


# ------------------------------------------------------------------ cgroups: limits for the whole run
_CG_CONTROLLERS = ("memory", "pids", "freezer")
_EFD_CLOEXEC = 0o2000000


def _own_cgroups() -> tuple[dict[str, str], str | None]:
    """This process's cgroup per v1 controller, and its cgroup v2 path (``None`` without one)."""
    v1: dict[str, str] = {}
    v2 = None
    with open("/proc/self/cgroup") as fh:
        for line in fh:
            hid, ctrls, path = line.rstrip("\n").split(":", 2)
            if hid == "0" and not ctrls:
                v2 = path
            for c in ctrls.split(","):
                v1[c] = path
    return v1, v2


def _cgroup_mounts() -> tuple[dict[str, tuple[str, str]], tuple[str, str] | None]:
    """Where the hierarchies are mounted: v1 controller -> (mount point, its root in the
    hierarchy), and the same for the cgroup2 hierarchy."""
    v1: dict[str, tuple[str, str]] = {}
    v2 = None
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            fields = line.split()
            tail = fields[fields.index("-") + 1 :]
            root, target = fields[3].replace("\\040", " "), fields[4].replace("\\040", " ")
            if tail[0] == "cgroup2" and v2 is None:
                v2 = (target, root)
            elif tail[0] == "cgroup":
                for opt in tail[2].split(","):
                    if opt in _CG_CONTROLLERS and opt not in v1:
                        v1[opt] = (target, root)
    return v1, v2


def _cg_dir(mount: tuple[str, str], path: str) -> str:
    target, root = mount
    if root != "/" and _under(path, root):
        path = path[len(root.rstrip("/")) :] or "/"
    return os.path.join(target, path.lstrip("/")).rstrip("/") or "/"


def _read_int_field(fd: int, key: bytes) -> int:
    """``key N`` in a flat-keyed cgroup file (``memory.events``, ``memory.oom_control``)."""
    for line in os.pread(fd, 4096, 0).split(b"\n"):
        parts = line.split()
        if len(parts) == 2 and parts[0] == key:
            return int(parts[1])
    return 0


class CgSlot:
    """One slot's cgroups (created once, reused by the slot's runs: between two runs it holds no
    process, is thawed, and its limits are rewritten by each run before its code starts)."""

    __slots__ = ("procs", "limits", "oom", "oom_seen", "efd", "freeze", "frozen", "frozen_check", "names")

    def __init__(self) -> None:
        self.procs: list[int] = []  # where the child moves itself, per hierarchy (it writes "0")
        self.limits: list[int] = []  # memory limit, process limit[, v1 socket-buffer limit]
        self.oom = -1  # where the OOM-kill count is read
        self.oom_seen = 0
        self.efd = -1  # v1: an eventfd the kernel signals on OOM
        self.freeze = -1
        self.frozen = False  # (as last asked)
        self.frozen_check = -1  # v2: cgroup.events
        self.names: list[tuple[int, str]] = []  # (base dir fd, name): removed at shutdown


class Cgroups:
    """Memory, process and freezer cgroups for the runs, one set per slot.

    cgroup v2 (``memory.max``, which counts socket buffers and kernel memory, ``pids.max``,
    ``memory.oom.group``, ``cgroup.freeze``) where its memory and pids controllers are available,
    else v1 (``memory.limit_in_bytes``, ``memory.kmem.tcp.limit_in_bytes`` where present,
    ``pids.max``, ``freezer.state``). Needs root; ``version`` is 0 where none is usable (``why``
    says what is missing). The slots' cgroups live in ``gem-sandbox-<worker pid>`` directories
    under the worker's own cgroup (v1) or beside it (v2: a cgroup with processes may not hand
    controllers to its children); they are removed at shutdown, and ones left by a worker that was
    killed are removed by the next.
    """

    def __init__(self, off: str | None = None, tcp: bool = False) -> None:
        """``off``: why there are none here (no detection then). ``tcp``: runs may have TCP
        sockets (they share the host's network), whose buffers v1 counts only with
        ``memory.kmem.tcp.limit_in_bytes`` set (unix sockets' count as kernel memory anyway)."""
        self.want_tcp = tcp
        self.version = 0
        self.why = off or ""
        self.bases: dict[str, int] = {}  # controller ("" for v2) -> its gem-sandbox-<pid> dir fd
        self.parents: list[tuple[int, str]] = []  # (parent dir fd, base name)
        self.freezer = False
        self.tcp = False
        self.slots: dict[int, CgSlot] = {}
        if off is not None:
            return
        if os.geteuid() != 0:
            self.why = "cgroups need root"
            return
        try:
            own_v1, own_v2 = _own_cgroups()
            mounts_v1, mount_v2 = _cgroup_mounts()
            if mount_v2 is not None and own_v2 is not None and self._setup_v2(mount_v2, own_v2):
                self.version = 2
            elif all(c in mounts_v1 and c in own_v1 for c in ("memory", "pids")):
                self._setup_v1(mounts_v1, own_v1)
                self.version = 1
            else:
                self.why = "no cgroup hierarchy with the memory and pids controllers is mounted"
        except OSError as exc:
            self.close()
            self.version = 0
            self.why = f"cgroups unusable: {exc}"

    def _base(self, key: str, parent: str) -> None:
        name = f"gem-sandbox-{os.getpid()}"
        _remove_stale(parent)
        pfd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.mkdir(name, 0o700, dir_fd=pfd)
        except FileExistsError:
            pass
        except OSError:
            os.close(pfd)
            raise
        self.parents.append((pfd, name))
        self.bases[key] = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=pfd)

    def _setup_v2(self, mount: tuple[str, str], own: str) -> bool:
        here = _cg_dir(mount, own)
        top = here == mount[0]
        parent = here if top else os.path.dirname(here)
        try:
            with open(os.path.join(parent, "cgroup.controllers")) as fh:
                available = fh.read().split()
        except OSError:
            return False
        if not {"memory", "pids"} <= set(available):
            return False
        if top:  # the root cgroup may hand controllers down while it holds processes
            with open(os.path.join(parent, "cgroup.subtree_control"), "w") as fh:
                fh.write("+memory +pids")
        self._base("", parent)
        _write_at(self.bases[""], "cgroup.subtree_control", "+memory +pids")
        self.freezer = True
        return True

    def _setup_v1(self, mounts: dict, own: dict) -> None:
        for c in _CG_CONTROLLERS:
            if c in mounts and c in own:
                self._base(c, _cg_dir(mounts[c], own[c]))
        self.freezer = "freezer" in self.bases
        self.tcp = False
        if self.want_tcp:
            try:
                os.close(os.open("memory.kmem.tcp.limit_in_bytes", os.O_RDONLY, dir_fd=self.bases["memory"]))
                self.tcp = True
            except OSError:
                pass

    def slot(self, n: int) -> CgSlot:
        """The slot's cgroups (made on first use)."""
        got = self.slots.get(n)
        if got is not None:
            return got
        s = CgSlot()
        name = f"s{n}"
        try:
            for key, base in self.bases.items():
                try:
                    os.mkdir(name, 0o700, dir_fd=base)
                except FileExistsError:
                    pass
                s.names.append((base, name))
                # v1: the child moves itself by writing "0" to ``tasks`` (its only thread: the
                # whole process). Moving the calling thread is the one migration the kernel does
                # without its global threadgroup lock; ``cgroup.procs`` takes it for writing (and
                # waits out an RCU grace period when the lock was idle), holding back every fork
                # and exit on the host meanwhile: the worker's next fork among them. v2 allows
                # thread moves only inside threaded subtrees, so ``cgroup.procs`` it is there.
                entry = "cgroup.procs" if self.version == 2 else "tasks"
                s.procs.append(os.open(f"{name}/{entry}", os.O_WRONLY, dir_fd=base))
            if self.version == 2:
                base = self.bases[""]
                s.limits = [os.open(f"{name}/{f}", os.O_WRONLY, dir_fd=base) for f in ("memory.max", "pids.max")]
                _write_at(base, f"{name}/memory.oom.group", "1")  # an OOM kill takes the whole run
                try:
                    _write_at(base, f"{name}/memory.swap.max", "0")
                except OSError:
                    pass  # no swap accounting
                s.oom = os.open(f"{name}/memory.events", os.O_RDONLY, dir_fd=base)
                s.freeze = os.open(f"{name}/cgroup.freeze", os.O_WRONLY, dir_fd=base)
                s.frozen_check = os.open(f"{name}/cgroup.events", os.O_RDONLY, dir_fd=base)
                os.write(s.freeze, b"0")
            else:
                mem, pids = self.bases["memory"], self.bases["pids"]
                s.limits = [
                    os.open(f"{name}/memory.limit_in_bytes", os.O_WRONLY, dir_fd=mem),
                    os.open(f"{name}/pids.max", os.O_WRONLY, dir_fd=pids),
                ]
                if self.tcp:
                    s.limits.append(os.open(f"{name}/memory.kmem.tcp.limit_in_bytes", os.O_WRONLY, dir_fd=mem))
                try:  # no swapping the run's memory out instead of limiting it
                    _write_at(mem, f"{name}/memory.swappiness", "0")
                except OSError:
                    pass
                s.oom = os.open(f"{name}/memory.oom_control", os.O_RDONLY, dir_fd=mem)
                s.efd = _libc.eventfd(0, _EFD_CLOEXEC)
                if s.efd < 0:
                    raise OSError(ctypes.get_errno(), "eventfd")
                _write_at(mem, f"{name}/cgroup.event_control", f"{s.efd} {s.oom}")
                if self.freezer:
                    s.freeze = os.open(f"{name}/freezer.state", os.O_RDWR, dir_fd=self.bases["freezer"])
                    os.write(s.freeze, b"THAWED")
            s.oom_seen = self.oom_kills(s)
        except OSError:
            self._close_slot(s)
            raise
        self.slots[n] = s
        return s

    def oom_kills(self, s: CgSlot) -> int:
        """How many processes the kernel killed in the slot for want of memory, so far."""
        try:
            return _read_int_field(s.oom, b"oom_kill")
        except OSError:
            return 0

    def limit_values(self, mem: int, nproc: int) -> list[bytes]:
        """What a run's child writes to ``CgSlot.limits`` (the run's memory and process limits)."""
        unlimited = b"max" if self.version == 2 else b"-1"
        mem_b = b"%d" % mem if mem >= 0 else unlimited
        values = [mem_b, b"%d" % nproc if nproc > 0 else b"max"]
        if self.version == 1 and self.tcp:
            values.append(mem_b)
        return values

    def set_frozen(self, s: CgSlot, frozen: bool, wait: float = 2.0) -> bool:
        """Freeze (or thaw) every process of the slot; when freezing, wait until all are frozen."""
        if s.freeze < 0:
            return False
        s.frozen = frozen
        if self.version == 2:
            os.write(s.freeze, b"1" if frozen else b"0")
            done = lambda: b"frozen 1" in os.pread(s.frozen_check, 256, 0)  # noqa: E731
        else:
            os.write(s.freeze, b"FROZEN" if frozen else b"THAWED")
            done = lambda: os.pread(s.freeze, 64, 0).startswith(b"FROZEN")  # noqa: E731
        if not frozen:
            return True
        return spin_until(done, wait)

    def freezer_fds(self, n: int, s: CgSlot) -> list[int]:
        """New descriptors of slot ``n``'s freeze file, the file that says whether it is frozen,
        its ``cgroup.procs`` and its ``pids.current`` (see :meth:`Zygote.hand_over_freezer`)."""
        key = "" if self.version == 2 else "pids"
        fds = [os.dup(s.freeze), os.dup(s.frozen_check if self.version == 2 else s.freeze)]
        try:
            for name in ("cgroup.procs", "pids.current"):
                fds.append(os.open(f"s{n}/{name}", os.O_RDONLY | os.O_CLOEXEC, dir_fd=self.bases[key]))
        except OSError:
            for fd in fds:
                os.close(fd)
            raise
        return fds

    def kill_all_but(self, n: int, pid: int) -> None:
        """SIGKILL every process of slot ``n`` but ``pid`` (host pids, from ``cgroup.procs``)."""
        key = "" if self.version == 2 else "pids"
        fd = os.open(f"s{n}/cgroup.procs", os.O_RDONLY, dir_fd=self.bases[key])
        try:
            pids = os.read(fd, 1 << 16).split()
        finally:
            os.close(fd)
        for p in pids:
            if int(p) != pid:
                try:
                    os.kill(int(p), signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def _close_slot(self, s: CgSlot) -> None:
        for fd in [*s.procs, *s.limits, s.oom, s.efd, s.freeze, s.frozen_check]:
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass

    def close(self) -> None:
        """Remove the slots' cgroups (their processes must be gone) and the base directories."""
        for s in self.slots.values():
            self._close_slot(s)
            for base, name in s.names:
                try:
                    os.rmdir(name, dir_fd=base)
                except OSError:
                    pass
        self.slots = {}
        for fd in self.bases.values():
            os.close(fd)
        self.bases = {}
        for pfd, name in self.parents:
            try:
                os.rmdir(name, dir_fd=pfd)
            except OSError:
                pass
            os.close(pfd)
        self.parents = []


def _write_at(dir_fd: int, name: str, value: str) -> None:
    fd = os.open(name, os.O_WRONLY, dir_fd=dir_fd)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _remove_stale(parent: str) -> None:
    """Remove ``gem-sandbox-<pid>`` cgroups of workers that are gone (killed before cleaning up)."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        pid = name[len("gem-sandbox-") :]
        if not name.startswith("gem-sandbox-") or not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # alive
        except ProcessLookupError:
            pass
        except OSError:
            continue
        top = os.path.join(parent, name)
        try:
            subs = [sub for sub in os.listdir(top) if sub.startswith("s") and sub[1:].isdigit()]
        except OSError:
            continue
        for sub in subs:
            # A session frozen when its worker was killed: thawed, its processes can die (the
            # worker's death sent them SIGKILL); a later worker removes what is still there.
            for state, value in (("freezer.state", "THAWED"), ("cgroup.freeze", "0")):
                try:
                    with open(os.path.join(top, sub, state), "w") as fh:
                        fh.write(value)
                except OSError:
                    pass
            try:
                os.rmdir(os.path.join(top, sub))
            except OSError:
                pass
        try:
            os.rmdir(top)
        except OSError:
            pass


class Run:
    """A child of the zygote: idle (pre-forked, waiting for work) or running a request."""

    __slots__ = (
        "chan", "cpu_deadline", "cpu_killed", "ctl", "direct", "killed", "oom", "pid", "session", "slot", "workdir"
    )

    def __init__(self, pid: int, chan, slot: int, workdir: str) -> None:
        self.pid, self.chan, self.ctl, self.slot, self.workdir = pid, chan, None, slot, workdir
        self.killed = self.session = self.oom = self.cpu_killed = self.direct = False
        self.cpu_deadline = 0.0  # a session's CPU seconds at which its cell's allowance is used up


class Zygote:
    def __init__(self, sock: socket.socket, work: socket.socket, config: dict, mode: str) -> None:
        """``mode``: ``root`` (per-run host uids), ``userns`` (non-root, a user namespace per run),
        ``keep_uid`` (root asked not to drop privileges: runs keep uid 0 without capabilities) or
        ``unsafe`` (no namespaces at all: limits only)."""
        self.sock = sock
        self.work = work  # requests queue here; idle children take them directly
        self.config = config
        self.mode = mode
        self.privileged = mode == "root"
        # Raising another uid's CPU limit (a session's, for each cell) needs CAP_SYS_RESOURCE,
        # which a container's root may lack, and a session's kernel (pid 1 of its namespace)
        # ignores the SIGXCPU of a soft limit. Where the hard limit cannot move, the session's
        # hard limit is SESSION_CPU_CELLS cells' worth and this worker checks each cell's CPU time
        # every CPU_CHECK_S seconds, ending the session when it has used its cell's allowance.
        self.moves_cpu_limits = self.privileged and _has_capability(_CAP_SYS_RESOURCE)
        self.cpu_watched: dict[int, Run] = {}
        self.next_cpu_check = 0.0
        self.namespaces = mode != "unsafe"
        slots = int(config.get("slots", 256))
        self.uid_base = run_uid_base(int(config.get("uid_base", 1_000_000)), os.getpid())
        self.free_slots = list(range(slots - 1, -1, -1))
        self.prefork = max(1, int(config.get("prefork", 4)))
        self.net = bool(config.get("network", True))
        tmp_mb, tmp_inodes = int(config.get("tmp_mb", 64)), int(config.get("tmp_inodes", 4096))
        self.tmp_opts = f"size={tmp_mb}m,nr_inodes={tmp_inodes},mode=1777"
        self.runs: dict[int, Run] = {}
        self.idle: list[Run] = []
        # One epoll set; fd -> (what, run). Plain epoll keeps the loop short: every page the worker
        # writes between two forks is copied once more (it shares them all with its children).
        self.ep = select.epoll()
        self.watched: dict[int, tuple] = {}
        self.info: dict = {"mode": mode, "privileged": self.privileged, "notes": [], "hidden": []}
        self.tmp_keep: list[str] = []
        self.seccomp = _seccomp_program(families=ISOLATED_FAMILIES if self.net else NETWORK_FAMILIES)
        self.seccomp_fprog = None if self.seccomp is None else _SockFprog(len(self.seccomp) // 8, self.seccomp)
        # A run's own /tmp and /proc, as mount(2) arguments (encoded once, here). Its /proc is
        # read-only (no sysctl, no /proc/self writes), except where the run's user namespace map
        # is still to be written through it (its owner there is not root anyway).
        proc_ro = 0 if mode == "userns" else MS_RDONLY
        self.run_tmp = (b"gem-run", WORK_ROOT.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, self.tmp_opts.encode())
        self.run_proc = (b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | proc_ro, None)
        # Its own pseudo-terminals: a devpts instance of its own, of at most RUN_PTYS, reached
        # through /dev/ptmx. The host's /dev/pts would let a run take every pty of the machine
        # (kernel.pty.max, for the host and the other runs too) and see other runs' ptys.
        self.run_pts = (
            b"devpts", b"/dev/pts", b"devpts", MS_NOSUID | MS_NOEXEC,
            b"newinstance,ptmxmode=0666,mode=0600,max=%d" % RUN_PTYS,
        )
        self.pts_dir = os.path.isdir("/dev/pts")
        self.ptmx_bind = os.path.exists("/dev/ptmx") and not os.path.islink("/dev/ptmx")
        # Network and IPC namespaces of runs, per slot: kind -> slot -> (namespace fd, what it
        # held when new): creating and destroying them costs the kernel more CPU than a whole
        # run. A run can change nothing in them but its own sockets: it may create only unix
        # sockets (no IPv6 flow labels, protocol counters, routes), System V IPC and POSIX
        # message queues are refused, /proc/sys is read-only and it has no capabilities. One is
        # reused by the slot's next run only if no socket of the last run is left in it (one kept
        # alive in flight). A UTS namespace (hostname) is shared: runs cannot change it.
        # tests/security/test_sandbox_whole_run.py enumerates them after a run that tries.
        self.pools: dict[int, dict[int, tuple[int, int]]] = {CLONE_NEWNET: {}, CLONE_NEWIPC: {}}
        self.cg = Cgroups("no namespaces (unsafe mode)" if mode == "unsafe" else "cgroups need root")
        self.slot_run: dict[int, Run] = {}  # slot -> its run (for the cgroup OOM events)
        self.own_ns: dict[int, int] = {}
        if self.namespaces:
            # The worker's own namespaces (it needs no network); owned by its user namespace
            # without root, so it can come back to them after visiting a run's.
            net = CLONE_NEWNET if self.net else 0  # (network=True: runs share the host's)
            _unshare(net | CLONE_NEWIPC | CLONE_NEWUTS | (0 if mode == "userns" else CLONE_NEWNS))
            self.own_ns = {
                CLONE_NEWNET: os.open("/proc/self/ns/net", os.O_RDONLY),
                CLONE_NEWIPC: os.open("/proc/self/ns/ipc", os.O_RDONLY),
            }
            _libc.sethostname(b"gem-sandbox", 11)
            # The cgroups are made (and their directories opened) before /sys/fs/cgroup goes.
            if mode in ("root", "keep_uid"):
                self.cg = Cgroups(
                    None if config.get("cgroups", True) else "turned off (Sandbox(cgroups=False))", tcp=not self.net
                )
            _detach("/sys/fs/cgroup")  # fewer mounts for each run's mount namespace to copy
            _host_view(list(config.get("hidden", ())), self.tmp_keep, self.info)
            self.pidns = os.open("/proc/self/ns/pid", os.O_RDONLY)
            self.work_root = WORK_ROOT
        else:
            import tempfile

            self.work_root = tempfile.mkdtemp(prefix="gem-sandbox-")
            self.info["readonly_fs"] = False
        self.info.update(
            drop_privileges=self.privileged,
            uid_separation=mode == "root",  # without root all runs share one host uid
            uid_range=[self.uid_base, self.uid_base + slots],
            network_isolated=self.namespaces and self.net,
            pid_namespace=self.namespaces,
            ipc_namespace=self.namespaces,
            mount_namespace=self.namespaces,
            seccomp=self.namespaces and self.seccomp is not None,
            tmp_quota=self.tmp_opts if self.namespaces else None,
            cgroups=self.cg.version,  # 0: none; memory and processes are then limited per process
            cgroup_freezer=self.cg.version > 0 and self.cg.freezer,
            # v2 counts every socket's buffers; v1 unix ones as kernel memory, TCP ones only with
            # memory.kmem.tcp (runs have TCP sockets only with network=True).
            cgroup_socket_memory=self.cg.version == 2 or (self.cg.version == 1 and (self.net or self.cg.tcp)),
        )
        if self.namespaces and self.seccomp is None:
            self.info["notes"].append(f"no seccomp filter for {platform.machine()}")
        if not self.cg.version:
            self.info["notes"].append(f"no cgroups: {self.cg.why}")
        _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        os.set_blocking(self.wake_r, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        self.watch(sock.fileno(), "main", None)
        self.watch(self.wake_r, "wake", None)

    def watch(self, fd: int, what: str, run) -> None:
        self.ep.register(fd, select.EPOLLIN)
        self.watched[fd] = (what, run)

    def unwatch(self, fd: int) -> None:
        if self.watched.pop(fd, None) is not None:
            try:
                self.ep.unregister(fd)
            except (OSError, ValueError):
                pass

    # --------------------------------------------------------------- kill & cleanup
    def kill_run(self, run: Run) -> None:
        """SIGKILL the run and everything it started.

        The run is pid 1 of its PID namespace: its death takes every process of the namespace
        with it, and the kernel lets no fork escape. The worker keeps its own uid throughout.
        """
        run.killed = True
        try:
            os.kill(run.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if run.session:
            self.thaw(run.slot)  # (a frozen process dies only when thawed)
        if not self.namespaces:  # best effort: its process group
            try:
                os.killpg(run.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def finish(self, run: Run, status: int, usage) -> None:
        ctl = run.ctl
        if ctl is not None:
            killed = "true" if run.killed else "false"
            cgs = self.cg.slots.get(run.slot)
            if cgs is not None:
                seen = self.cg.oom_kills(cgs)
                run.oom |= seen != cgs.oom_seen
                cgs.oom_seen = seen
            oom = "true" if run.oom else "false"
            cpu_limit = "true" if run.cpu_killed else "false"
            cpu = usage.ru_utime + usage.ru_stime
            msg = (
                f'{{"status": {status}, "cpu": {cpu!r}, "maxrss_kb": {usage.ru_maxrss}, "killed": {killed}, '
                f'"oom": {oom}, "cpu_limit": {cpu_limit}}}'
            )
            try:
                ctl.send(msg.encode())
            except OSError:
                pass
            self.unwatch(ctl.fileno())
            if run.direct:
                # The caller holds the slot's freezer until it closes this socket: the slot waits
                # for that (``release``), or a late freeze of the caller's could stop its next run.
                self.watch(ctl.fileno(), "held", run)
            else:
                ctl.close()
                run.ctl = None
        if not self.namespaces:
            # No PID namespace, no tmpfs of its own: kill its group, remove its directory in a
            # process of its own (never on this loop, whatever the run left there).
            self.kill_run(run)
            if self.fork() == 0:
                try:
                    _rmtree(run.workdir)
                finally:
                    os._exit(0)
        if run.chan is not None:
            # It exited before its hand-over was read: take the control socket (if any) and
            # close it, so the caller sees the end, then forget the channel.
            if run in self.idle:
                self.idle.remove(run)
            try:
                _msg, fds = _recv_fds(run.chan.fileno(), 64, socket.MSG_DONTWAIT)
                for fd in fds:
                    os.close(fd)
            except OSError:
                pass
            self.unwatch(run.chan.fileno())
            run.chan.close()
            run.chan = None
        if run.session:
            self.thaw(run.slot)
        if self.slot_run.get(run.slot) is run:
            del self.slot_run[run.slot]
        if run.ctl is None:
            self.free_slots.append(run.slot)

    def release(self, run: Run) -> None:
        """A session that held its slot's freezer has ended and its caller has closed its control
        socket (it holds the freezer no longer): thaw the slot and let the next run have it."""
        ctl = run.ctl
        if ctl is None:
            return
        try:
            if ctl.recv(64, socket.MSG_DONTWAIT):
                return  # (a message sent before the caller heard of the end: not the close)
        except BlockingIOError:
            return
        except OSError:
            pass
        self.unwatch(ctl.fileno())
        ctl.close()
        run.ctl = None
        cgs = self.cg.slots.get(run.slot)
        if cgs is not None:
            try:
                self.cg.set_frozen(cgs, False)
            except OSError:
                pass
        self.free_slots.append(run.slot)

    def slot_ns(self, kind: int, slot: int) -> int:
        """The network or IPC namespace for the slot's next run (a new one if it has none)."""
        pool = self.pools[kind]
        if slot not in pool:
            _unshare(kind)
            try:
                fd = os.open(f"/proc/self/ns/{_NS_NAMES[kind]}", os.O_RDONLY)
                pool[slot] = (fd, _ns_contents(kind))
            finally:
                _check(_libc.setns(self.own_ns[kind], kind), "setns")
        return pool[slot][0]

    def slot_namespaces(self, slot: int) -> list[tuple[int, int, int]]:
        """(fd, kind, contents when new) of the pooled namespaces a child of this slot enters."""
        if not self.namespaces:
            return []
        kinds = [CLONE_NEWIPC] + ([CLONE_NEWNET] if self.net else [])
        return [(self.slot_ns(kind, slot), kind, self.pools[kind][slot][1]) for kind in kinds]

    def drop_pooled(self, slot: int, kinds: int) -> None:
        """A child found the slot's pooled namespaces of ``kinds`` holding something of an earlier
        run (it made fresh ones): the slot's next child gets new ones too."""
        for kind, pool in self.pools.items():
            if kind & kinds and slot in pool:
                os.close(pool.pop(slot)[0])

    def reap(self) -> None:
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            run = self.runs.pop(pid, None)
            if run is not None:
                self.finish(run, status, usage)

    # --------------------------------------------------------------- pre-forked children
    def spawn_idle(self) -> None:
        """Fork a child, pid 1 of a new PID namespace, that confines itself and waits for a request."""
        slot = self.free_slots.pop()
        workdir = WORK_ROOT if self.namespaces else f"{self.work_root}/run{slot}"
        enter = self.slot_namespaces(slot)
        cgs = self.cg_slot(slot)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = self.fork_pid1()
        if pid == 0:
            try:
                self.child(theirs, slot, workdir, enter, cgs)  # (it closes ``ours`` by number)
            except BaseException:  # noqa: BLE001 - shown with GEM_SANDBOX_DEBUG=1
                if self.config.get("debug"):
                    traceback.print_exc()
            finally:
                os._exit(70)
        theirs.close()
        run = Run(pid, ours, slot, workdir)
        self.runs[pid] = run
        self.slot_run[slot] = run
        self.idle.append(run)
        self.watch(ours.fileno(), "chan", run)

    def cg_slot(self, slot: int) -> CgSlot | None:
        """The slot's cgroups (``None`` without cgroups); the first time, watch its OOM events."""
        if not self.cg.version:
            return None
        new = slot not in self.cg.slots
        cgs = self.cg.slot(slot)
        if new:
            if cgs.efd >= 0:
                self.watch(cgs.efd, "oom", slot)
            else:  # v2: memory.events changes (POLLPRI) when it counts an OOM kill
                self.ep.register(cgs.oom, select.EPOLLPRI)
                self.watched[cgs.oom] = ("oom", slot)
        return cgs

    def handle_oom(self, slot: int) -> None:
        """The kernel killed a process of the slot's run for want of memory: end the whole run
        (with cgroup v1 the kernel kills one process; v2's ``memory.oom.group`` kills them all)."""
        cgs = self.cg.slots.get(slot)
        if cgs is None:
            return
        if cgs.efd >= 0:
            try:
                os.read(cgs.efd, 8)
            except BlockingIOError:
                pass
        kills = self.cg.oom_kills(cgs)  # (v2: reading it is what re-arms the poll)
        run = self.slot_run.get(slot)
        if run is not None and run.chan is None and kills != cgs.oom_seen:
            run.oom = True
            self.kill_run(run)

    def thaw(self, slot: int) -> None:
        cgs = self.cg.slots.get(slot)
        if cgs is not None and cgs.frozen:
            try:
                self.cg.set_frozen(cgs, False)
            except OSError:
                pass

    def fork_pid1(self) -> int:
        """Fork a child that is pid 1 of a new PID namespace (a plain child without namespaces)."""
        if not self.namespaces:
            return self.fork()
        _unshare(CLONE_NEWPID)  # for the next child only; setns() below restores ours
        pid = -1
        try:
            pid = self.fork()
        finally:
            if pid != 0:
                _check(_libc.setns(self.pidns, CLONE_NEWPID), "setns")
        return pid

    def fork(self) -> int:
        """``os.fork()``, without its hooks where they are known to be no-ops (see ``_raw_fork``)."""
        if self.config.get("preload") or threading.active_count() != 1:
            return os.fork()  # a preloaded module may need its own after-fork hooks
        pid = _raw_fork()
        if pid < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"fork: {os.strerror(err)}")
        return pid

    def fill_pool(self) -> None:
        while len(self.idle) < self.prefork and self.free_slots:
            self.spawn_idle()

    # --------------------------------------------------------------- requests
    def handle_chan(self, run: Run) -> None:
        """An idle child took a request: it hands over the run's control socket."""
        chan = run.chan
        if chan is None:
            return  # closed earlier in this batch of events
        try:
            msg, fds = _recv_fds(chan.fileno(), 64, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return  # nothing there after all
        except OSError:
            msg, fds = b"", []
        if msg.startswith(b"dirty ") and not fds:
            self.drop_pooled(run.slot, int(msg[6:]))
            return
        self.unwatch(chan.fileno())
        chan.close()
        run.chan = None
        self.idle.remove(run)
        if not fds:
            return  # the child died while idle; reap() cleans up
        for fd in fds[1:]:
            os.close(fd)
        ctl = _seqpacket(fds[0])
        run.ctl = ctl
        run.session = msg == b"session"
        self.watch(ctl.fileno(), "ctl", run)

    def handle_ctl(self, run: Run) -> None:
        ctl = run.ctl
        if ctl is None:
            return  # closed earlier in this batch of events
        try:
            data = ctl.recv(64, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data == b"kill" or not data:
            self.kill_run(run)
        elif run.session and data == b"stop":
            # Between cells nothing of the session runs: with a freezer, every process of it
            # (threads of the kernel, processes they started after the cell's end) is frozen
            # before the caller hears "stopped"; without one, the kernel process is stopped.
            cgs = self.cg.slots.get(run.slot)
            if cgs is not None and self.cg.freezer:
                try:
                    frozen = self.cg.set_frozen(cgs, True)
                    if frozen:  # what the cell's end could not kill dies (when thawed)
                        self.cg.kill_all_but(run.slot, run.pid)
                except OSError:
                    frozen = False
                if not frozen:
                    # Fail closed: a session that cannot be frozen ends (stopping its kernel
                    # alone would leave its other processes running). The caller hears the
                    # run's end instead of "stopped".
                    self.kill_run(run)
                    return
            else:
                self.signal(run, signal.SIGSTOP)
            try:
                ctl.send(b"stopped")
            except OSError:
                pass
        elif run.session and data.startswith(b"cpu "):  # (the caller holds the freezer)
            self.set_cell_cpu(run, float(data[4:]))
        elif run.session and data == b"direct":
            self.hand_over_freezer(run, ctl)
        elif run.session and data.startswith(b"cell "):
            self.set_cell_cpu(run, float(data[5:]))
            self.thaw(run.slot)
            self.signal(run, signal.SIGCONT)
        if not data:
            self.unwatch(ctl.fileno())  # closed by the caller: stop polling it; finish() cleans up

    def hand_over_freezer(self, run: Run, ctl: socket.socket) -> None:
        """Give the caller the session's freezer, so that it freezes the session after each cell
        and thaws it before the next one itself: a cell then costs no round trip through this
        worker. The caller gets the slot's freeze file (and, with cgroup v2, its events file), its
        ``cgroup.procs`` and ``pids.current``, and the session's pid (``direct <pid> <version>``),
        and whether it may move the session's CPU limit (``direct <pid> <version> <0|1>``), or
        ``no`` where this worker must stay in between (no freezer, no root)."""
        cgs = self.cg.slots.get(run.slot)
        fds: list[int] = []
        if cgs is not None and self.cg.freezer and self.privileged and cgs.freeze >= 0:
            try:
                fds = self.cg.freezer_fds(run.slot, cgs)
            except OSError:
                fds = []
        try:
            if not fds:
                ctl.send(b"no")
                return
            cgs.frozen = True  # the caller may have frozen it: every thaw here writes
            run.direct = True  # the slot is reused only once the caller has let go (see finish)
            message = b"direct %d %d %d" % (run.pid, self.cg.version, self.moves_cpu_limits)
            socket.send_fds(ctl, [message], fds)
        except OSError:
            pass
        finally:
            for fd in fds:
                os.close(fd)

    def signal(self, run: Run, sig: int) -> None:
        try:
            os.kill(run.pid, sig)
        except ProcessLookupError:
            pass

    def set_cell_cpu(self, run: Run, cpu: float) -> None:
        """A session's CPU limit for its next cell: what it has used plus the cell's allowance.

        Where this worker can raise it (root with CAP_SYS_RESOURCE), the session's hard limit
        moves with it (the session cannot raise it); elsewhere the cell's CPU time is checked from
        here (:meth:`check_cpu`), under the session's hard limit (its budget).
        """
        if cpu <= 0:
            return
        try:
            with open(f"/proc/{run.pid}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            spent = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            limit = int(spent + cpu + 0.999)
            if self.moves_cpu_limits:
                resource.prlimit(run.pid, resource.RLIMIT_CPU, (limit, limit))
                return
        except (OSError, ValueError, IndexError):
            return  # it is gone (its end is being reaped)
        run.cpu_deadline = spent + cpu
        self.cpu_watched[run.pid] = run

    def check_cpu(self) -> None:
        """End the sessions whose cell has used its CPU allowance (see ``moves_cpu_limits``)."""
        now = time.monotonic()
        if now < self.next_cpu_check:
            return
        self.next_cpu_check = now + CPU_CHECK_S
        tick = os.sysconf("SC_CLK_TCK")
        for pid, run in list(self.cpu_watched.items()):
            if run.killed or self.runs.get(pid) is not run:
                del self.cpu_watched[pid]
                continue
            try:
                with open(f"/proc/{pid}/stat", "rb") as fh:
                    fields = fh.read().rsplit(b")", 1)[1].split()
                spent = (int(fields[11]) + int(fields[12])) / tick
            except (OSError, ValueError, IndexError):
                continue  # it is ending: reaped soon
            if spent >= run.cpu_deadline:
                del self.cpu_watched[pid]
                run.cpu_killed = True
                self.kill_run(run)

    def probe(self) -> str | None:
        """Confine one child as a run would be; ``None`` if it worked, else what failed."""
        if not self.namespaces:
            return None
        r, w = os.pipe()
        enter = self.slot_namespaces(0)
        pid = self.fork_pid1()
        if pid == 0:
            os.close(r)
            try:
                _enter_pooled(enter)
                self.confine(0)
            except BaseException as exc:  # noqa: BLE001 - reported to the caller
                os.write(w, str(exc).encode()[:500] or b"failed")
                os._exit(1)
            os._exit(0)
        os.close(w)
        _, status = os.waitpid(pid, 0)
        why = os.read(r, 1000).decode(errors="replace")
        os.close(r)
        return None if status == 0 else (why or f"the confined child ended with status {status}")

    def serve(self) -> None:
        os.environ.clear()
        os.environ.update(BASE_ENV)
        for name in self.config.get("preload", ()):
            try:
                __import__(name)
            except Exception as exc:  # noqa: BLE001 - a missing optional module is only noted
                self.info["notes"].append(f"preload {name!r} failed: {exc}")
        null = os.open(os.devnull, os.O_WRONLY)
        _warm_up(null)  # the run path's bytecode is specialised once, here, not in every child
        os.close(null)
        if self.namespaces:
            _run_globals(WORK_ROOT)  # the same for every run: set once, here, not in each child
        # Objects that exist now are never collected: a child's GC pass then does not write to
        # (and copy) every page it inherited.
        gc.freeze()
        self.fill_pool()
        self.sock.send(json.dumps(self.info).encode())
        poll, watched = self.ep.poll, self.watched
        while True:
            waiting = len(self.idle) < self.prefork and self.free_slots
            events = poll(0 if waiting else CPU_CHECK_S if self.cpu_watched else -1)
            # Handlers are looked up before any runs: one may close a descriptor whose number a
            # later one reuses, and its stale event must not reach the new owner.
            for what, run in [watched.get(fd, (None, None)) for fd, _ in events]:
                try:
                    if what == "chan":
                        self.handle_chan(run)
                    elif what == "wake":
                        try:
                            os.read(self.wake_r, 4096)
                        except BlockingIOError:
                            pass
                        self.reap()
                    elif what == "ctl":
                        self.handle_ctl(run)
                    elif what == "held":
                        self.release(run)
                    elif what == "oom":
                        self.handle_oom(run)
                    elif what == "main":
                        self.shutdown()  # the parent process is gone (the socket only ever closes)
                        return
                except Exception:  # noqa: BLE001 - one run's trouble never stops the others'
                    if self.config.get("debug"):
                        traceback.print_exc()
            if self.cpu_watched:
                self.check_cpu()
            if not events:
                try:
                    self.fill_pool()  # only when nothing else is waiting: kills and reaping come first
                except OSError:
                    if self.config.get("debug"):
                        traceback.print_exc()
                    time.sleep(0.01)  # out of processes for now

    def shutdown(self) -> None:
        for run in list(self.runs.values()):
            self.kill_run(run)
        if self.cg.version:
            for run in list(self.runs.values()):
                self.thaw(run.slot)
                try:
                    os.waitpid(run.pid, 0)  # (a cgroup is removed only once its processes are gone)
                except ChildProcessError:
                    pass
            self.cg.close()
        if not self.namespaces:
            _rmtree(self.work_root)

    # --------------------------------------------------------------- the child
    def confine(self, slot: int, cg_procs: typing.Iterable[int] = ()) -> None:
        """Namespaces, mounts, cgroups (``cg_procs``: the slot's ``CgSlot.procs`` files, closed
        here), identity and filter of a run (in the child, pid 1 of its PID namespace)."""
        if self.namespaces:
            _unshare(CLONE_NEWNS)
            handles = [(k, os.open(k, os.O_PATH | os.O_DIRECTORY)) for k in self.tmp_keep]
            _check(_libc.mount(*self.run_tmp), "mount /tmp")
            for k, handle in handles:
                os.makedirs(k, 0o755, exist_ok=True)
                _mount(f"/proc/self/fd/{handle}", k, None, MS_BIND | MS_REC)
                _mount(None, k, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
                os.close(handle)
            _check(_libc.mount(*self.run_proc), "mount /proc")
            self.own_ptys()
            if self.mode == "userns":
                # Its /proc stays writable (for its user namespace map), but not /proc/sys: the
                # run's uid maps to the worker's, which owns the sysctls of the pooled network
                # and IPC namespaces (a value set there would reach the slot's next run).
                _mount("/proc/sys", "/proc/sys", None, MS_BIND | MS_REC)
                _mount(None, "/proc/sys", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
        # Into the slot's cgroups, after the mounts (the kernel objects of the set-up are the
        # worker's to pay, as before: kept out of the slot's memory cgroup, they cost less).
        for fd in cg_procs:
            os.write(fd, b"0")
            os.close(fd)
        if self.namespaces:
            _unshare(CLONE_NEWCGROUP)  # its /proc/self/cgroup shows "/", not the host's layout
        if self.mode == "root":
            uid = self.uid_base + slot
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        elif self.mode == "userns":
            _unshare(CLONE_NEWUSER)  # its own: its process count (RLIMIT_NPROC) is its own
            _map_ids(RUN_UID, 0, 0)
            _drop_capabilities()
        elif self.mode == "keep_uid":
            _drop_capabilities()
        _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        if self.namespaces and self.seccomp_fprog is not None:
            _install_seccomp(self.seccomp_fprog)

    def own_ptys(self) -> None:
        """Give the run a devpts instance of its own (see ``run_pts``); where the kernel refuses
        one, /dev/ptmx becomes /dev/null: no pty at all rather than the host's."""
        if self.pts_dir and _libc.mount(*self.run_pts) == 0:
            if self.ptmx_bind:
                _mount("/dev/pts/ptmx", "/dev/ptmx", None, MS_BIND)
        elif self.ptmx_bind:
            _mount("/dev/null", "/dev/ptmx", None, MS_BIND)

    def child(self, chan: socket.socket, slot: int, workdir: str, enter: list, cgs: CgSlot | None = None) -> None:
        """Runs in the forked child: confine, wait for a request, apply its limits, run the code.

        Everything that does not depend on the request (namespaces, mounts, the uid, the filter,
        a warmed-up interpreter) is done while waiting, off the run's critical path.
        """
        # The worker's other descriptors (its sockets, other runs' channels) are closed below by
        # number. Their objects are left alone, never closed or freed (this process ends with
        # os._exit): they would close whatever reuses the number. Nothing here runs a Python-level
        # wrapper it can avoid (signal.signal converts to enums): every object touched is a page
        # copied into this process.
        _signal.set_wakeup_fd(-1)
        _signal.signal(_SIGCHLD, _SIG_DFL)
        _signal.signal(_SIGINT, _signal.default_int_handler)
        os.setsid()  # its own process group: kill(0) must not reach the worker's
        # The hand-over channel goes to 5, the work socket to 6; 0, 1, 3 and 4 hold /dev/null while
        # waiting (2 stays the worker's stderr), so the descriptors of the request land above 6.
        chan_fd = fcntl.fcntl(chan.fileno(), fcntl.F_DUPFD, 10)
        work_fd = fcntl.fcntl(self.work.fileno(), fcntl.F_DUPFD, 10)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 3, 4):
            os.dup2(null, fd)
        os.dup2(chan_fd, 5)
        os.dup2(work_fd, 6)
        dirty = _enter_pooled(enter)  # (the pooled namespaces' descriptors are still open here)
        # The slot's limit files go to 7, 8[, 9]: opened by the worker (root), they stay writable
        # after the identity change, until the run's limits are written (then closed, before any
        # of the run's code).
        limit_fds = [] if cgs is None else [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in cgs.limits]
        for i, fd in enumerate(limit_fds):
            os.dup2(fd, 7 + i)
        procs = [] if cgs is None else [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in cgs.procs]
        for i, fd in enumerate(procs):
            os.dup2(fd, 7 + len(limit_fds) + i)
        os.closerange(7 + len(limit_fds) + len(procs), 1 << 16)
        if dirty:
            os.write(5, b"dirty %d" % dirty)
        if not self.namespaces:
            os.mkdir(workdir, 0o700)
        self.confine(slot, range(7 + len(limit_fds), 7 + len(limit_fds) + len(procs)))
        # After the identity change (a credential change clears it): die with the worker. The
        # worker is outside this PID namespace (getppid() says 0): its end shows on the channel.
        _libc.prctl(PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
        alive = select.poll()
        alive.register(5, select.POLLIN)
        if alive.poll(0):
            os._exit(0)
        if not self.namespaces:  # (with namespaces the worker did it: every run's directory is /tmp)
            _run_globals(workdir)
        main = types.ModuleType("__main__")
        main.__dict__.update({"__file__": f"{workdir}/main.py", "__builtins__": __builtins__})
        sys.modules["__main__"] = main
        os.chdir(workdir)
        random.seed()  # (os.fork() would have; each run gets its own random state)
        _warm_up(4)

        try:
            msg, fds = _recv_fds(6, MAX_HEADER, 0)
        except OSError:
            os._exit(0)
        if not msg or len(fds) < 5:
            os._exit(0)
        os.close(6)
        kind, mem, cpu, fsize, nproc = HEADER.unpack(msg)
        session = kind == 1 and len(fds) > 5
        # The whole run's memory (sockets' buffers and kernel memory included) and processes.
        if limit_fds:
            try:
                for i, value in enumerate(self.cg.limit_values(mem, nproc)):
                    os.write(7 + i, value)
            except OSError:
                os._exit(70)  # never run without the limits asked for
            for i in range(len(limit_fds)):
                os.close(7 + i)
        # fds: control, input, stdout, stderr, status, [session]. The worker keeps the control
        # socket (for kills and the final status); this process must not hold it.
        try:
            _send_fd(5, b"session" if session else b"took", fds[0])
        except OSError:
            os._exit(0)  # the worker is gone
        os.close(5)
        os.close(fds[0])
        for i, fd in enumerate(fds[1:4]):
            os.dup2(fd, i)
        os.dup2(fds[4], 4)
        if session:
            os.dup2(fds[5], 3)
        else:
            os.close(3)
        for fd in fds[1:]:
            os.close(fd)
        # Hard limits, equal to the soft ones: the run cannot raise them.
        if mem >= 0:
            resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        if cpu > 0:
            limit = max(1, int(cpu + 0.999))
            hard = limit * SESSION_CPU_CELLS if session and not self.moves_cpu_limits else limit
            resource.setrlimit(resource.RLIMIT_CPU, (limit, hard))
        if fsize >= 0:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        if self.namespaces and nproc > 0:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        if session:
            _session_loop(3, main.__dict__)
        status = _run_cell(_read_code(0), main.__dict__, "main.py")
        _report(4, status)
        # The caller was woken (onto this CPU, as pipe writes hint) by the output: let it take the
        # result now rather than after this process's teardown.
        os.sched_yield()
        os._exit(status)


def _run_globals(workdir: str) -> None:
    """What a run's process differs in from the worker, apart from its ``__main__``. The worker's
    environment is already the scrubbed one (see BASE_ENV); a run's core limit is 0 (hard)."""
    os.environ["HOME"] = os.environ["TMPDIR"] = workdir
    sys.argv = ["main.py"]
    sys.path.insert(0, workdir)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


# The request header: kind (0 run, 1 session), address-space bytes, CPU seconds, file-size bytes,
# processes (-1: no limit). Packed by gem.sandbox with the same format.
HEADER = struct.Struct("<Bqdqq")
MAX_HEADER = 64


def _seqpacket(fd: int) -> socket.socket:
    """A socket object for ``fd``, one of the sandbox's ``AF_UNIX``/``SOCK_SEQPACKET`` sockets (its
    family and type given: no system calls to find them out)."""
    return socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, 0, fd)


def _recv_fds(fd: int, size: int, flags: int) -> tuple[bytes, list[int]]:
    """One message and the descriptors that came with it (``socket.recv_fds`` on a raw fd)."""
    sock = _seqpacket(fd)
    try:
        msg, anc, _flags, _addr = sock.recvmsg(size, _FD_SPACE, flags)
    finally:
        sock.detach()
    fds: list[int] = []
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.extend(struct.unpack(f"{len(data) // 4}i", data[: len(data) // 4 * 4]))
    return msg, fds


_FD_SPACE = socket.CMSG_SPACE(MAX_FDS * 4)


def _send_fd(fd: int, msg: bytes, passed: int) -> None:
    """Send ``msg`` with the descriptor ``passed`` on the socket ``fd``."""
    sock = _seqpacket(fd)
    try:
        sock.sendmsg([msg], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", passed))])
    finally:
        sock.detach()


def _warm_up(out_fd: int) -> None:
    """Walk the run path once with output to /dev/null.

    In the worker, this specialises the bytecode of the path before any fork; in a waiting child,
    it takes the copy-on-write faults of that path before the request arrives instead of after.
    Nothing of it stays: a scratch namespace, no threads joined.
    """
    saved = os.dup(1)
    os.dup2(out_fd, 1)
    try:
        _run_cell("print(1+1)\n", {"__builtins__": __builtins__, "__name__": "__main__"}, "<warm-up>", False)
        _report(out_fd, 0)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        linecache.cache.pop("<warm-up>", None)


def _report(fd: int, status: int, busy: int = -1) -> None:
    """Tell the caller the exit status before exiting (saves waiting for the process teardown).
    A session's cell adds ``busy``: 1 if anything of the session could still run (see
    :func:`_session_loop`)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    line = b"%d %r" % (status, usage.ru_utime + usage.ru_stime)
    if busy >= 0:
        line += b" %d" % busy
    try:
        os.write(fd, line + b"\n")
    except OSError:
        pass


def _num_threads() -> int:
    """Threads of this process (``/proc/self/stat``; any thread, not only Python's)."""
    stat = _read_proc("/proc/self/stat") or b""
    try:
        return int(stat.rsplit(b")", 1)[1].split()[17])
    except (IndexError, ValueError):
        return 2  # unknown: assume another


_ALL_SIGNALS = tuple(sorted(set(range(1, signal.NSIG)) - {int(signal.SIGKILL), int(signal.SIGSTOP)}))
_SIG_BLOCK, _SIG_SETMASK = int(signal.SIG_BLOCK), int(signal.SIG_SETMASK)


def _read_code(fd: int) -> str:
    head = _read_exact(fd, 8)
    (n,) = struct.unpack("<Q", head)
    return _read_exact(fd, n).decode("utf-8", "surrogateescape")


def _read_exact(fd: int, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def _run_cell(code: str, namespace: dict, filename: str, join_threads: bool = True) -> int:
    """Run ``code`` as Python runs a script; return its exit status."""
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    status = 0
    try:
        exec(compile(code, filename, "exec"), namespace)
    except SystemExit as exc:
        status = _exit_status(exc)
    except BaseException as exc:  # noqa: BLE001 - print it as Python would
        tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
        if isinstance(exc, SyntaxError):
            tb = None
        exc.__traceback__ = tb
        try:
            sys.excepthook(type(exc), exc, tb)
        except BaseException:  # noqa: BLE001
            pass
        status = 1
    if join_threads and _threads_started():
        try:
            threading._shutdown()  # join non-daemon threads, as the interpreter does at exit
        except BaseException:  # noqa: BLE001
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001
            status = status or 120
    return status


def _threads_started() -> bool:
    """Whether the program left anything for ``threading._shutdown()`` to do (threads, hooks).

    A non-daemon thread that still runs is in ``_active``; with none, the call only touches pages.
    """
    try:
        return bool(
            len(threading._active) > 1  # type: ignore[attr-defined]
            or threading._limbo  # type: ignore[attr-defined]
            or threading._threading_atexits  # type: ignore[attr-defined]
        )
    except AttributeError:  # another Python's internals: always call it
        return True


def _exit_status(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except BaseException:  # noqa: BLE001
        pass
    return 1


def _session_loop(sock_fd: int, namespace: dict) -> None:
    """A notebook kernel: run cells one after another in one namespace.

    Each cell arrives on the session socket as four descriptors (input, stdout, stderr, status);
    the cell's exit status is written to the status pipe, as a one-shot run does. Processes a cell
    started are killed when it ends (this process is pid 1 of the session's PID namespace:
    ``kill(-1)`` reaches every other process in it). Between cells it waits with every signal
    blocked (no handler a cell installed, no timer, can run code then). The cell's report says
    whether anything else could run (``busy``), for information only: the cell's code can write
    the status pipe itself, so the caller has the worker freeze the whole session (its cgroup)
    after every cell before it returns the cell's result.
    """
    devnull = os.open(os.devnull, os.O_RDWR)
    os.close(4)
    cell_no = 0
    while True:
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        mask = _signal.pthread_sigmask(_SIG_BLOCK, _ALL_SIGNALS)  # (_signal: no enum objects)
        try:
            msg, fds = _recv_fds(sock_fd, 1024, 0)
        except OSError:
            os._exit(0)
        if not msg or len(fds) != 4:
            os._exit(0)
        _signal.pthread_sigmask(_SIG_SETMASK, mask)
        for i, fd in enumerate(fds[:3]):
            os.dup2(fd, i)
            os.close(fd)
        status_fd = fds[3]
        cell_no += 1
        code = _read_code(0)
        sys.stdin = open(0, "r", encoding="utf-8", closefd=False)  # no read-ahead from the last cell
        status = _run_cell(code, namespace, f"cell{cell_no}.py")
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)  # the caller sees end-of-file on the cell's pipes
        alone = _kill_others()
        _report(status_fd, status, 0 if alone and _num_threads() == 1 else 1)
        os.close(status_fd)


def _kill_others(budget: float = 0.05) -> bool:
    """As pid 1 of a PID namespace: kill every other process in it and reap them all. A thread
    of this process may keep starting more meanwhile: after ``budget`` seconds it gives up and
    returns False (the worker then freezes the session and kills what is left)."""
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True  # it never had a child
    end = time.monotonic() + budget
    while True:
        try:
            os.kill(-1, signal.SIGKILL)  # again before every wait: new ones die too
        except OSError:
            pass
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        except InterruptedError:
            continue
        if pid == 0:
            if time.monotonic() > end:
                return False
            time.sleep(0.0002)


def _add_site_dirs(dirs: list[str]) -> None:
    """Make the caller's site-packages importable (the worker runs with ``-S``).

    Directories named by ``.pth`` files are added too, but their ``import`` lines are not run:
    start-up hooks (editable-install finders, this library's included) stay out of the sandbox,
    and the worker's heap stays small (every page of it is copied into a run that touches it).
    """
    for site_dir in dirs:
        if not os.path.isdir(site_dir) or site_dir in sys.path:
            continue
        sys.path.append(site_dir)
        try:
            names = sorted(os.listdir(site_dir))
        except OSError:
            continue
        for name in names:
            if not name.endswith(".pth") or name.startswith("."):
                continue
            try:
                with open(os.path.join(site_dir, name), encoding="utf-8") as fh:
                    lines = fh.read().splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            for line in lines:
                line = line.strip()
                if not line or line.startswith(("#", "import ", "import\t")):
                    continue
                path = os.path.join(site_dir, line)
                if os.path.isdir(path) and path not in sys.path:
                    sys.path.append(path)


def _start(sock: socket.socket, work: socket.socket, config: dict) -> Zygote | None:
    """Choose how to confine runs on this host, build the worker and check that a run can be
    confined; on failure tell the caller why (the hello's ``error``) and return ``None``."""
    unsafe = bool(config.get("unsafe"))
    if os.geteuid() == 0:
        mode = "root" if config.get("drop_privileges", True) else "keep_uid"
    else:
        mode = "userns"
        try:
            _enter_user_namespace()
        except OSError as exc:
            if not unsafe:
                sock.send(json.dumps({"error": _userns_help(exc)}).encode())
                return None
            mode = "unsafe"
    try:
        zygote = Zygote(sock, work, config, mode)
        problem = zygote.probe()
    except OSError as exc:
        problem = str(exc)
    if problem is None:
        return zygote
    if unsafe:
        zygote = Zygote(sock, work, config, "unsafe")
        zygote.info["notes"].append(f"namespaces unavailable: {problem}")
        return zygote
    sock.send(json.dumps({"error": _userns_help(OSError(problem))}).encode())
    return None


def main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    work = socket.socket(fileno=int(sys.argv[2]))
    config = json.loads(sock.recv(1 << 20) or b"{}")
    _add_site_dirs(config.get("site_dirs", []))
    zygote = _start(sock, work, config)
    if zygote is None:
        return
    try:
        zygote.serve()
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise


if __name__ == "__main__":
    main()
