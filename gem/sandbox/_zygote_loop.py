# ruff: noqa: F821 - names of the other parts (one namespace: tests/sandbox/test_worker_parts.py
# checks every name a part uses)
"""Part 7 of the sandbox worker's source. The worker (the "zygote", gem/sandbox/_zygote.py) runs
in a fresh interpreter from one code object, compiled from the parts that
gem/sandbox/_worker_source.py lists, concatenated in that fixed order into one source text: this
file is not a module of its own, and its names, and those of the other parts, share one
namespace. It imports nothing from ``gem`` (the runs must not see the library) and has no
``from __future__`` line (the assembled text starts with one).

This part: the worker itself. :class:`Zygote` keeps each slot's pooled namespaces and cgroups,
``prefork`` children waiting on the work socket, and one ``epoll`` loop (:meth:`Zygote.serve`)
that hands out slots, reaps runs and reports their end on their control sockets, kills runs
(on request, at a cgroup OOM kill, at a session's CPU allowance) and freezes sessions between
cells. :func:`_start` chooses how runs are confined on this host and checks it with one
confined child; :func:`main` is the entry point, run last.
"""


class Run:
    """A child of the zygote: idle (pre-forked, waiting for work) or running a request."""

    __slots__ = (
        "chan", "cpu_deadline", "cpu_killed", "ctl", "direct", "killed", "oom", "pid", "session", "slot", "workdir"
    )

    def __init__(self, pid: int, chan, slot: int, workdir: str) -> None:
        self.pid, self.chan, self.ctl, self.slot, self.workdir = pid, chan, None, slot, workdir
        self.killed = self.session = self.oom = self.cpu_killed = self.direct = False
        self.cpu_deadline = 0.0  # a session's CPU seconds at which its cell's allowance is used up


class Zygote(RunChild):
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
        # The runs' filter, built by the caller for this configuration (gem/sandbox/seccomp.py:
        # only unix sockets where ``network`` isolates runs), and the number of capset.
        # Taken out of the configuration (which every run inherits): a run's code reading its memory
        # finds the filter only as the bytes the kernel was given, not as text.
        program = config.pop("seccomp", None)
        self.seccomp = bytes.fromhex(program) if isinstance(program, str) else None
        del program
        self.seccomp_fprog = _seccomp_fprog(self.seccomp) if self.namespaces else None
        self.capset_nr = config.get("capset")
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
