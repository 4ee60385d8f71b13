"""The sandbox's warm worker ("zygote"): a pre-imported Python that keeps children forked.

Started by :mod:`gem.utils.sandbox` as ``python -I -S _sandbox_zygote.py <life fd> <work fd>
<config>`` with a scrubbed environment; ``config["site_dirs"]`` are the caller's site-packages. It
imports nothing from ``gem`` (the children must not see the library). The worker keeps
``prefork`` children waiting on the shared ``SOCK_SEQPACKET`` work socket; the kernel hands each
request to exactly one of them, so neither a fork nor the worker is on a run's critical path:

* a request is one message, a fixed header (:data:`HEADER`: kind, limits), with descriptors
  attached: ``[control, input, stdout, stderr, status]`` (plus ``[session]`` for a session);
* the child passes ``control`` to the worker (it must not keep it), applies the limits, drops to
  the run's uid, reads ``<8-byte length><code>`` from ``input`` (the rest is the program's stdin),
  runs the code and writes ``b"<exit status> <cpu seconds>\n"`` to ``status`` just before exiting;
* on ``control`` the caller may send ``b"kill"``; the worker answers with ``{"status": wait status,
  ...}`` (JSON) when the child has been reaped. When the caller closes ``control`` the run and
  everything it started are killed. When the life socket closes (the caller's process ended) the
  worker exits.

As root the worker enters a new network namespace (no interface is up, so even 127.0.0.1 is
unreachable) and a new mount namespace where every mount is read-only except a private tmpfs on
``/tmp`` that holds the per-run directories. Each concurrent run gets its own uid from the worker's
range, so its process limit is its own and "kill everything it started" is ``kill(-1)`` as that uid.

Speed: a run's cost is mostly page faults, each page the child (or the worker, after a fork)
writes being copied. So the worker keeps its heap and mappings small (``-S``, no ``shutil``),
forks without Python's after-fork hooks (:data:`_raw_fork`), and a waiting child does all it can
before its request arrives (:meth:`Zygote.child`).
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

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 32, 4096, 8192, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 38, 36
_MOUNT_FLAGS = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
}
# Mounts left writable: kernel interfaces (root-only writes) and devices (/dev/null must work).
_KEEP_WRITABLE = ("/proc", "/sys", "/dev/pts", "/tmp")
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


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _enc(s):
    return None if s is None else s.encode()


def _mount(src, target, fstype, flags, data=None) -> None:
    _check(_libc.mount(_enc(src), _enc(target), _enc(fstype), flags, _enc(data)), f"mount {target}")


def _isolate(privileged: bool, want_network_isolation: bool, tmp_mb: int) -> dict:
    """Enter new namespaces where possible; return what was achieved."""
    info = {"privileged": privileged, "network_isolated": False, "readonly_fs": False, "notes": []}
    if not privileged:
        # An unprivileged user namespace still gives an empty network namespace on most kernels.
        if want_network_isolation:
            if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0:
                info["network_isolated"] = True
            else:
                info["notes"].append(
                    f"unshare(CLONE_NEWUSER|CLONE_NEWNET) failed: {os.strerror(ctypes.get_errno())}"
                )
        return info
    flags = CLONE_NEWNS | (CLONE_NEWNET if want_network_isolation else 0)
    if _libc.unshare(flags) != 0:
        info["notes"].append(f"unshare failed: {os.strerror(ctypes.get_errno())}")
        if want_network_isolation and _libc.unshare(CLONE_NEWNET) == 0:
            info["network_isolated"] = True
        return info
    info["network_isolated"] = want_network_isolation
    try:
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        # Module directories under WORK_ROOT (a venv in /tmp, as CI clones make) would vanish under
        # the private tmpfs: keep a handle on each, then bind it back, read-only, at its own path.
        under = sorted({r for r in map(os.path.realpath, filter(None, sys.path))
                        if r.startswith(WORK_ROOT + "/") and os.path.isdir(r)})
        handles = [(path, os.open(path, os.O_PATH | os.O_DIRECTORY)) for path in under]
        _mount("gem-sandbox", WORK_ROOT, "tmpfs", MS_NOSUID | MS_NODEV, f"size={tmp_mb}m,mode=0711")
        for path, handle in handles:
            os.makedirs(path, 0o755, exist_ok=True)
            _mount(f"/proc/self/fd/{handle}", path, None, MS_BIND | MS_REC)
            _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
            os.close(handle)
        if under:
            info["notes"].append("module directories kept visible, read-only: " + ", ".join(under))
        exposed = _expose(sys.path)
        if exposed:
            info["notes"].append("made traversable for the runs: " + ", ".join(exposed))
        failed = []
        with open("/proc/self/mountinfo") as fh:
            mounts = [line.split() for line in fh]
        for fields in mounts:
            target, opts = fields[4].replace("\\040", " "), fields[5].split(",")
            if any(target == k or target.startswith(k + "/") for k in _KEEP_WRITABLE) or target == "/dev":
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
    except OSError as exc:
        info["notes"].append(f"mount namespace setup failed: {exc}")
    return info


def _rmtree(top: str) -> None:
    """Remove a run's directory (what it left behind); errors are ignored.

    Not shutil.rmtree: shutil loads zlib, bz2 and lzma, 30 more mappings that every fork copies.
    The run's processes are dead when this runs, so nothing changes the tree meanwhile; links are
    removed, never followed.
    """
    for root, dirs, files in os.walk(top, topdown=False):
        for name in files:
            try:
                os.unlink(os.path.join(root, name))
            except OSError:
                pass
        for name in dirs:
            path = os.path.join(root, name)
            try:
                if os.path.islink(path):
                    os.unlink(path)
                else:
                    os.rmdir(path)
            except OSError:
                pass
    try:
        os.rmdir(top)
    except OSError:
        pass


def _expose(paths: list[str]) -> list[str]:
    """Let unprivileged runs reach the interpreter's modules (``/root/.pyenv/...``).

    A directory on the way that others may not traverse (``/root``, mode 0700) is covered, in this
    mount namespace only, by an empty tmpfs of mode 0755 into which just the needed entries are
    bind-mounted back. Nothing else of it becomes visible.
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


class Run:
    """A child of the zygote: idle (pre-forked, waiting for work) or running a request."""

    __slots__ = ("chan", "ctl", "killed", "pid", "slot", "workdir")

    def __init__(self, pid: int, chan, slot: int, workdir: str) -> None:
        self.pid, self.chan, self.ctl, self.slot, self.workdir, self.killed = (
            pid,
            chan,
            None,
            slot,
            workdir,
            False,
        )


class Zygote:
    def __init__(self, sock: socket.socket, work: socket.socket, config: dict) -> None:
        self.sock = sock
        self.work = work  # requests queue here; idle children take them directly
        self.config = config
        self.privileged = os.geteuid() == 0 and config.get("drop_privileges", True)
        slots = int(config.get("slots", 256))
        # Every live worker gets its own uid range (pids are unique), so two sandboxes (in one
        # process or in several) never share a uid: kill(-1) as a run's uid reaches only that run.
        self.uid_base = int(config.get("uid_base", 1_000_000)) + os.getpid() * slots
        self.free_slots = list(range(slots - 1, -1, -1))
        self.prefork = max(1, int(config.get("prefork", 4)))
        self.runs: dict[int, Run] = {}
        self.idle: list[Run] = []
        # One epoll set; fd -> (what, run). Plain epoll keeps the loop short: every page the worker
        # writes between two forks is copied once more (it shares them all with its children).
        self.ep = select.epoll()
        self.watched: dict[int, tuple] = {}
        self.info = _isolate(os.geteuid() == 0, config.get("network", True), int(config.get("tmp_mb", 1024)))
        self.info["drop_privileges"] = self.privileged
        self.info["uid_range"] = [self.uid_base, self.uid_base + slots]
        if not self.privileged:
            import tempfile

            self.work_root = tempfile.mkdtemp(prefix="gem-sandbox-")
        else:
            self.work_root = WORK_ROOT
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
        """SIGKILL the run and everything it started."""
        run.killed = True
        if self.privileged:
            uid = self.uid_base + run.slot
            # As real and effective uid U (saved uid stays 0), kill(-1) reaches exactly the
            # processes of U; the kernel takes the task list lock, so no fork escapes it.
            os.setresuid(uid, uid, 0)
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                pass  # nothing of U was left
            finally:
                os.setresuid(0, 0, 0)
        try:  # the child itself and its process group
            os.killpg(run.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def finish(self, run: Run, status: int, usage) -> None:
        ctl = run.ctl
        if ctl is not None:
            killed = "true" if run.killed else "false"
            cpu = usage.ru_utime + usage.ru_stime
            msg = (
                f'{{"status": {status}, "cpu": {cpu!r}, "maxrss_kb": {usage.ru_maxrss}, "killed": {killed}}}'
            )
            try:
                ctl.send(msg.encode())
            except OSError:
                pass
        if not run.killed:
            # Anything left behind (daemons, orphans). After one kill(-1) as its uid nothing of it
            # can be left: no fork escapes that kill and nothing else becomes that uid until its
            # slot is free again (below), so a run killed already is not killed twice.
            self.kill_run(run)
        try:
            os.rmdir(run.workdir)  # the usual case: it wrote nothing
        except OSError:
            _rmtree(run.workdir)
        if ctl is not None:
            self.unwatch(ctl.fileno())
            ctl.close()
            run.ctl = None
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
        self.free_slots.append(run.slot)

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
        """Fork a child that confines what it can in advance and waits for a request."""
        slot = self.free_slots.pop()
        workdir = f"{self.work_root}/run{slot}"
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = self.fork()
        if pid == 0:
            try:
                self.child(theirs, slot, workdir)  # (it closes ``ours`` by number)
            except BaseException:  # noqa: BLE001 - shown with GEM_SANDBOX_DEBUG=1
                if self.config.get("debug"):
                    traceback.print_exc()
            finally:
                os._exit(70)
        theirs.close()
        run = Run(pid, ours, slot, workdir)
        self.runs[pid] = run
        self.idle.append(run)
        self.watch(ours.fileno(), "chan", run)

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
            _msg, fds = _recv_fds(chan.fileno(), 64, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return  # nothing there after all
        except OSError:
            fds = []
        self.unwatch(chan.fileno())
        chan.close()
        run.chan = None
        self.idle.remove(run)
        if not fds:
            return  # the child died while idle; reap() cleans up
        for fd in fds[1:]:
            os.close(fd)
        ctl = socket.socket(fileno=fds[0])
        run.ctl = ctl
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
        if not data:
            self.unwatch(ctl.fileno())  # closed by the caller: stop polling it; finish() cleans up

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
        # Objects that exist now are never collected: a child's GC pass then does not write to
        # (and copy) every page it inherited.
        gc.freeze()
        self.fill_pool()
        self.sock.send(json.dumps(self.info).encode())
        poll, watched = self.ep.poll, self.watched
        while True:
            waiting = len(self.idle) < self.prefork and self.free_slots
            events = poll(0 if waiting else -1)
            # Handlers are looked up before any runs: one may close a descriptor whose number a
            # later one reuses, and its stale event must not reach the new owner.
            for what, run in [watched.get(fd, (None, None)) for fd, _ in events]:
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
                elif what == "main":
                    self.shutdown()  # the parent process is gone (the socket only ever closes)
                    return
            if not events:
                self.fill_pool()  # only when nothing else is waiting: kills and reaping come first

    def shutdown(self) -> None:
        for run in list(self.runs.values()):
            self.kill_run(run)
        if not self.privileged:
            _rmtree(self.work_root)

    # --------------------------------------------------------------- the child
    def child(self, chan: socket.socket, slot: int, workdir: str) -> None:
        """Runs in the forked child: confine, wait for a request, apply its limits, run the code.

        What does not depend on the request (no new privileges, its directory, a warmed-up
        interpreter) is done while waiting, off the run's critical path. It stays root until it
        has a request, so a waiting child is never one of a run's uid.
        """
        # The worker's other descriptors (its sockets, other runs' channels) are closed below by
        # number. Their objects are left alone, never closed or freed (this process ends with
        # os._exit): they would close whatever reuses the number. Nothing here runs a Python-level
        # wrapper it can avoid (signal.signal converts to enums): every object touched is a page
        # copied into this process.
        zygote = os.getppid()
        _signal.set_wakeup_fd(-1)
        _signal.signal(_SIGCHLD, _SIG_DFL)
        _signal.signal(_SIGINT, _signal.default_int_handler)
        os.setsid()
        # The hand-over channel goes to 5, the work socket to 6; 0, 1, 3 and 4 hold /dev/null while
        # waiting (2 stays the worker's stderr), so the descriptors of the request land above 6.
        chan_fd = fcntl.fcntl(chan.fileno(), fcntl.F_DUPFD, 10)
        work_fd = fcntl.fcntl(self.work.fileno(), fcntl.F_DUPFD, 10)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 3, 4):
            os.dup2(null, fd)
        os.dup2(chan_fd, 5)
        os.dup2(work_fd, 6)
        os.closerange(7, 1 << 16)
        uid = self.uid_base + slot
        os.mkdir(workdir, 0o700)
        if self.privileged:
            os.chown(workdir, uid, uid)
        # The worker's environment is already the scrubbed one (see BASE_ENV); only these differ.
        os.environ["HOME"] = os.environ["TMPDIR"] = workdir
        sys.argv = ["main.py"]
        sys.path.insert(0, workdir)
        main = types.ModuleType("__main__")
        main.__dict__.update({"__file__": f"{workdir}/main.py", "__builtins__": __builtins__})
        sys.modules["__main__"] = main
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
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
        # fds: control, input, stdout, stderr, status, [session]. The worker keeps the control
        # socket (for kills and the final status); this process must not hold it.
        try:
            _send_fd(5, b"took", fds[0])
        except OSError:
            pass  # the worker is gone; its death signal follows
        os.close(5)
        os.close(fds[0])
        kind, mem, cpu, fsize, nproc = HEADER.unpack(msg)
        session = kind == 1 and len(fds) > 5
        for i, fd in enumerate(fds[1:4]):
            os.dup2(fd, i)
        os.dup2(fds[4], 4)
        if session:
            os.dup2(fds[5], 3)
        else:
            os.close(3)
        for fd in fds[1:]:
            os.close(fd)
        if mem >= 0:
            resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        if cpu > 0:
            soft = max(1, int(cpu + 0.999))
            resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.RLIM_INFINITY if session else soft + 1))
        if fsize >= 0:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        if self.privileged:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        # After the uid change (a credential change clears it): die with the worker.
        _libc.prctl(PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
        if os.getppid() != zygote:
            os._exit(0)
        if session:
            _session_loop(3, main.__dict__, cpu)
        status = _run_cell(_read_code(0), main.__dict__, "main.py")
        _report(4, status)
        # The caller was woken (onto this CPU, as pipe writes hint) by the output: let it take the
        # result now rather than after this process's teardown.
        os.sched_yield()
        os._exit(status)


# The request header: kind (0 run, 1 session), address-space bytes, CPU seconds, file-size bytes,
# processes (-1: no limit). Packed by gem.utils.sandbox with the same format.
HEADER = struct.Struct("<Bqdqq")
MAX_HEADER = 64


def _recv_fds(fd: int, size: int, flags: int) -> tuple[bytes, list[int]]:
    """One message and the descriptors that came with it (``socket.recv_fds`` on a raw fd)."""
    sock = socket.socket(fileno=fd)
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
    sock = socket.socket(fileno=fd)
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


def _report(fd: int, status: int) -> None:
    """Tell the caller the exit status before exiting (saves waiting for the process teardown)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    try:
        os.write(fd, b"%d %r\n" % (status, usage.ru_utime + usage.ru_stime))
    except OSError:
        pass


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


def _session_loop(sock_fd: int, namespace: dict, cpu_per_cell) -> None:
    """A notebook kernel: run cells one after another in one namespace.

    Each cell arrives on the session socket as four descriptors (input, stdout, stderr, status);
    the cell's exit status is written to the status pipe, as a one-shot run does.
    """
    devnull = os.open(os.devnull, os.O_RDWR)
    os.close(4)
    cell_no = 0
    while True:
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        try:
            msg, fds = _recv_fds(sock_fd, 1024, 0)
        except OSError:
            os._exit(0)
        if not msg or len(fds) != 4:
            os._exit(0)
        for i, fd in enumerate(fds[:3]):
            os.dup2(fd, i)
            os.close(fd)
        status_fd = fds[3]
        if cpu_per_cell:
            used = resource.getrusage(resource.RUSAGE_SELF)
            spent = used.ru_utime + used.ru_stime
            resource.setrlimit(resource.RLIMIT_CPU, (int(spent + cpu_per_cell + 1), resource.RLIM_INFINITY))
        cell_no += 1
        code = _read_code(0)
        sys.stdin = open(0, "r", encoding="utf-8", closefd=False)  # no read-ahead from the last cell
        status = _run_cell(code, namespace, f"cell{cell_no}.py")
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)  # the caller sees end-of-file on the cell's pipes
        _report(status_fd, status)
        os.close(status_fd)


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


def main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    work = socket.socket(fileno=int(sys.argv[2]))
    config = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    _add_site_dirs(config.get("site_dirs", []))
    try:
        Zygote(sock, work, config).serve()
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise


if __name__ == "__main__":
    main()
