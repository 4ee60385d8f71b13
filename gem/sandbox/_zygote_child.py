# ruff: noqa: F821 - names of the other parts (one namespace: tests/sandbox/test_worker_parts.py
# checks every name a part uses)
"""Part 6 of the sandbox worker's source. The worker (the "zygote", gem/sandbox/_zygote.py) runs
in a fresh interpreter from one code object, compiled from the parts that
gem/sandbox/_worker_source.py lists, concatenated in that fixed order into one source text: this
file is not a module of its own, and its names, and those of the other parts, share one
namespace. It imports nothing from ``gem`` (the runs must not see the library) and has no
``from __future__`` line (the assembled text starts with one).

This part: a run's process, from its fork to its exit. :class:`RunChild` holds the
:class:`Zygote` methods that run in a forked child (the worker's class inherits them):
:meth:`RunChild.child` confines the waiting child, takes a request off the work socket, applies
its limits and runs the code; :meth:`RunChild.confine` gives it its namespaces, mounts, cgroups,
identity, no-new-privileges and the seccomp filter. The functions below run the program as
Python runs a script, report its status, and make a session a notebook kernel.
"""


class RunChild:
    """The part of :class:`Zygote` that runs in its forked children (pid 1 of their PID namespace)."""

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
            _drop_capabilities(self.capset_nr)
        elif self.mode == "keep_uid":
            _drop_capabilities(self.capset_nr)
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
        session = kind == REQUEST_SESSION and len(fds) > 5
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
    head = _read_exact(fd, CODE_LENGTH.size)
    (n,) = CODE_LENGTH.unpack(head)
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
