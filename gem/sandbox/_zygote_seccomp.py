# ruff: noqa: F821 - names of the other parts (one namespace: tests/sandbox/test_worker_parts.py
# checks every name a part uses)
"""Part 3 of the sandbox worker's source. The worker (the "zygote", gem/sandbox/_zygote.py) runs
in a fresh interpreter from one code object, compiled from the parts that
gem/sandbox/_worker_source.py lists, concatenated in that fixed order into one source text: this
file is not a module of its own, and its names, and those of the other parts, share one
namespace. It imports nothing from ``gem`` (the runs must not see the library) and has no
``from __future__`` line (the assembled text starts with one).

This part: the seccomp filter and the capabilities, in a run's process. The filter is not built
here: the caller builds it (gem/sandbox/seccomp.py, where it is documented and unit-tested) and
sends its bytes in the worker's configuration (``config["seccomp"]``, hex), with the number of
``capset`` (``config["capset"]``). The worker wraps the bytes once (:class:`_SockFprog`); each
run's process attaches them after setting no-new-privileges (``RunChild.confine``).
"""


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


def _seccomp_fprog(program: bytes | None) -> _SockFprog | None:
    """The ``struct sock_fprog`` of a filter (``None`` for none). ``program`` must stay alive as
    long as the result: the structure points into it."""
    if program is None:
        return None
    if not program or len(program) % 8:
        raise OSError(errno.EINVAL, f"a seccomp filter is 8-byte instructions, got {len(program)} bytes")
    return _SockFprog(len(program) // 8, program)


def _install_seccomp(fprog: _SockFprog) -> None:
    """Attach the filter (:func:`_seccomp_fprog`, made once in the worker: a child only passes its
    address) to this process (needs no-new-privileges set first)."""
    _check(_libc.prctl(PR_SET_SECCOMP, 2, ctypes.addressof(fprog), 0, 0), "seccomp")


def _drop_capabilities(capset_nr: int | None) -> None:
    """Empty this process's capability sets (a run in its own user namespace starts with all);
    ``capset_nr``: the system call's number here (``config["capset"]``)."""
    header = struct.pack("<Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = bytes(24)
    if capset_nr is None:
        raise OSError(errno.ENOSYS, "capset: unknown architecture")
    _libc.syscall.restype = ctypes.c_long
    _check(_libc.syscall(ctypes.c_long(capset_nr), header, data), "capset")
