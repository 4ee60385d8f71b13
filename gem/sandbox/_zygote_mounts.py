# ruff: noqa: F821 - names of the other parts (one namespace: tests/sandbox/test_worker_parts.py
# checks every name a part uses)
"""Part 4 of the sandbox worker's source. The worker (the "zygote", gem/sandbox/_zygote.py) runs
in a fresh interpreter from one code object, compiled from the parts that
gem/sandbox/_worker_source.py lists, concatenated in that fixed order into one source text: this
file is not a module of its own, and its names, and those of the other parts, share one
namespace. It imports nothing from ``gem`` (the runs must not see the library) and has no
``from __future__`` line (the assembled text starts with one).

This part: namespaces and mounts. The worker's own view of the host (:func:`_host_view`: every
mount read-only, the hidden paths covered by empty tmpfs mounts with the interpreter's module
directories bound back, blocked parents made traversable), the unprivileged start in a user
namespace of its own (:func:`_enter_user_namespace`), and the pooled network and IPC namespaces a
run's process enters (:func:`_enter_pooled`, with the count that tells a clean one). A run's own
mounts (``/tmp``, ``/proc``, ptys) are made in its process (``RunChild.confine``).
"""


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
