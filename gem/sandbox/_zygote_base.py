# ruff: noqa: F401, F821 - imports for the other parts and the runs; names of the other parts
# (one namespace: tests/sandbox/test_worker_parts.py checks every name a part uses)
"""Part 2 of the sandbox worker's source. The worker (the "zygote", gem/sandbox/_zygote.py) runs
in a fresh interpreter from one code object, compiled from the parts that
gem/sandbox/_worker_source.py lists, concatenated in that fixed order into one source text: this
file is not a module of its own, and its names, and those of the other parts, share one
namespace. It imports nothing from ``gem`` (the runs must not see the library) and has no
``from __future__`` line (the assembled text starts with one).

This part: the pre-imported modules, the kernel's constants, libc, and the small system helpers
every other part uses (mount, unshare, id maps, /proc reads, descriptor passing, uids).
"""

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
