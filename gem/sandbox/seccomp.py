"""The sandbox's seccomp filter, built on the host side and handed to the worker.

The worker (gem/sandbox/_zygote.py) installs the filter in every run's process; it does not build
it. This module computes the filter's bytes (a classic-BPF program, ``struct sock_filter[]``) in
the caller's process, where it is ordinary, importable and unit-tested Python, and
:func:`worker_settings` puts them, hex-encoded, into the worker's configuration (sent on its life
socket at start, see ``Sandbox._ensure_started``), together with the ``capset`` system call number
the worker needs to drop capabilities. The worker and the caller are the same interpreter on the
same machine, so the architecture is the caller's.

What the filter decides, per system call of a run:

* :data:`DENIED_SYSCALLS`: refused with EPERM (namespaces, mounts, ptrace, keyrings, bpf, modules,
  System V IPC, ...); ``clone3`` with ENOSYS (libc falls back to ``clone``), ``clone`` refused
  with EPERM when its flags ask for a new namespace;
* ``socket``/``socketpair``: only the families given (:data:`ISOLATED_FAMILIES` without the
  network, :data:`NETWORK_FAMILIES` with it); others get EAFNOSUPPORT;
* :data:`NO_OP_SYSCALLS` and the lock commands of ``fcntl`` (:data:`NO_OP_FCNTL`) succeed without
  doing anything; ``F_NOTIFY`` gets EINVAL; :data:`UNSUPPORTED_SYSCALLS` get ENOSYS;
* another ABI (i386 calls from a 64-bit process, x32) is refused as a whole;
* everything else is allowed.
"""

from __future__ import annotations

import errno
import platform
import struct
from typing import Any

# The namespace flags of clone(2) (a run may create none).
CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x02000000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000

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
SYSCALLS: dict[str, tuple[int, dict[str, int]]] = {
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


def build_filter(machine: str | None = None, families: tuple[int, ...] = ISOLATED_FAMILIES) -> bytes | None:
    """The classic-BPF filter (``struct sock_filter[]``, 8 bytes an instruction) for ``machine``
    (this one's by default), or ``None`` for an unknown architecture.

    ``families``: the socket families ``socket`` and ``socketpair`` may create (see
    :data:`ISOLATED_FAMILIES`); others get EAFNOSUPPORT.

    Other ABIs (i386 system calls from a 64-bit process, x32) are refused as a whole: their
    numbers differ and would slip past the table.
    """
    arch_table = SYSCALLS.get(machine or platform.machine())
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


def syscall_number(name: str, machine: str | None = None) -> int | None:
    """The number of system call ``name`` on ``machine`` (this one's by default); ``None`` where
    the table does not know the architecture or the call."""
    arch_table = SYSCALLS.get(machine or platform.machine())
    return None if arch_table is None else arch_table[1].get(name)


def worker_settings(network_isolated: bool, machine: str | None = None) -> dict[str, Any]:
    """What the worker's configuration carries for its runs' filter: ``seccomp``, the filter
    (hex; ``None`` for an unknown architecture, where the worker notes that runs have none), for
    runs without the network (``network_isolated``: only unix sockets) or with the host's, and
    ``capset``, the number of the system call that drops a run's capabilities (``None`` where
    unknown: without root, the worker's check of a confined child then fails, and it refuses to
    start)."""
    program = build_filter(machine, ISOLATED_FAMILIES if network_isolated else NETWORK_FAMILIES)
    capset = syscall_number("capset", machine)
    return {"seccomp": None if program is None else program.hex(), "capset": capset}


# The names this filter had when the worker built it (gem.sandbox._zygote re-exports them).
_SYSCALLS = SYSCALLS
_seccomp_program = build_filter
