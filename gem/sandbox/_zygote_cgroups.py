# ruff: noqa: F821 - names of the other parts (one namespace: tests/sandbox/test_worker_parts.py
# checks every name a part uses)
"""Part 5 of the sandbox worker's source. The worker (the "zygote", gem/sandbox/_zygote.py) runs
in a fresh interpreter from one code object, compiled from the parts that
gem/sandbox/_worker_source.py lists, concatenated in that fixed order into one source text: this
file is not a module of its own, and its names, and those of the other parts, share one
namespace. It imports nothing from ``gem`` (the runs must not see the library) and has no
``from __future__`` line (the assembled text starts with one).

This part: cgroups, limits over a whole run (as root). :class:`Cgroups` finds a usable hierarchy
(v2, else v1 memory, pids and freezer controllers) and keeps one set of cgroups per slot
(:class:`CgSlot`): the memory and process limits a run's process writes before its code starts,
the OOM-kill count, and the freezer that stops a session between cells.
"""


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
