"""Run untrusted Python with limits, fast, where it sees nothing but itself.

One entry point, :func:`run_python` (or :meth:`Sandbox.run` on a sandbox of your own), runs a
program with optional stdin and returns a :class:`SandboxResult`: stdout, stderr, exit status, wall
time and ``reason`` (``"ok"``, ``"error"``, ``"timeout"``, ``"memory"``, ``"output_limit"``).

How it is confined (see :mod:`gem.sandbox._zygote` for the mechanics, and the files its source is
made of):

* a warm worker (the "zygote", a Python with common modules imported) keeps children forked and
  confined ahead of time, so ``print(1+1)`` costs about a millisecond instead of starting an
  interpreter;
* each run is pid 1 of its own PID, mount and cgroup namespaces, in network and IPC namespaces no
  concurrent run shares: its ``/proc`` shows only its processes, abstract sockets die with it,
  there is no network (no interface is up, not even loopback; only unix sockets may be created), ``/tmp`` is a tmpfs of its own with byte and inode quotas,
  every other mount is read-only, and GEM's package, its checkout, home directories, Hugging Face
  caches and the ``hidden_paths`` you add are covered by empty directories;
* it runs under an identity of its own (as root a uid per concurrent run; otherwise a user
  namespace per run), with no capabilities, no new privileges and a seccomp filter that refuses
  what sandboxed code never needs (namespaces, mounts, ptrace, keyrings, bpf, modules, System V
  IPC, socket families other than AF_UNIX: AF_VSOCK, AF_PACKET, AF_NETLINK, ...);
* as root, where the host has cgroups (v2, or v1 memory, pids and freezer controllers), memory
  (socket buffers included) and processes are limited for the run as a whole, an out-of-memory
  kill ends the whole run (``reason="memory"``), and sessions are frozen whole between cells
  (``python -m gem.sandbox --check`` says what holds on a host without them);
* limits per run are hard rlimits (CPU time, address space, processes, file size) plus wall time
  and output size enforced here (the process limit, ``RLIMIT_NPROC``, is counted per uid by the
  kernel, so it caps each run only as root with ``drop_privileges=True``, where every run has a
  uid of its own; see docs/tools.md); when a run ends or is killed, its PID namespace ends with it:
  nothing it started survives, and the kernel frees its ``/tmp``;
* the environment is scrubbed: the worker starts with a minimal environment, never the parent's,
  and a run sees only ``PATH``, ``LANG``, ``LC_ALL``, ``PYTHONHASHSEED``, the three thread-count
  variables (``OPENBLAS``/``OMP``/``MKL_NUM_THREADS``), ``HOME`` and ``TMPDIR``.

Without root the sandbox needs unprivileged user namespaces; where the kernel refuses them it
refuses to run code (:class:`SandboxError` says how to enable them) unless you opt in to an unsafe
mode without isolation (``Sandbox(unsafe=True)`` or ``GEM_SANDBOX_UNSAFE=1``). ``python -m
gem.sandbox --check`` prints what this host provides. Thread-safe: many threads may call
:meth:`Sandbox.run` at once.

Calls written for the original GEM (``run_python(code, sandbox_type, stdin, timeout)`` returning
``(success, stdout, stderr)``, ``subprocess_run`` and ``check_forbidden_imports``) work as there
from the original's module path, ``gem.sandbox`` (see :mod:`gem.compat.sandbox`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import resource
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import types
import urllib.parse
from typing import Any, Callable, Iterable, Sequence


def _sibling(name: str) -> types.ModuleType:
    """``gem.sandbox.<name>`` (standard library only), loaded from its file beside this one: this
    module may itself have been loaded from its file alone, where ``gem`` is not importable (a
    host's own Python running it as another user)."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"{__name__}_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __package__ == "gem.sandbox":
    from gem.sandbox import _worker_source, seccomp, wire
else:
    _worker_source, seccomp, wire = _sibling("_worker_source"), _sibling("seccomp"), _sibling("wire")
worker_code = _worker_source.worker_code

logger = logging.getLogger(__name__)

# ------------------------------------------------------------------ defaults (one place)
DEFAULT_TIMEOUT = 10.0  # seconds of wall time
DEFAULT_MEMORY_MB = 1024  # the run's processes together (cgroup) and each one's address space
DEFAULT_MAX_PROCESSES = 16  # processes and threads of the run (cgroup; else of its uid)
DEFAULT_FILE_SIZE_MB = 16  # largest file it may write
DEFAULT_OUTPUT_BYTES = 1 << 20  # stdout + stderr kept; more kills the run
MAX_CODE_BYTES = 16 << 20
DEFAULT_TMP_MB = 64  # each run's /tmp (tmpfs: memory, outside RLIMIT_AS)
DEFAULT_TMP_INODES = 4096  # files and directories in each run's /tmp
UNSAFE_ENV = "GEM_SANDBOX_UNSAFE"
_ZYGOTE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_zygote.py")
# The worker runs its code from a marshalled code object (its parts' one code object, see
# gem/sandbox/_worker_source.py) rather than compiling a script: the compiler's scratch memory
# would stay in the worker's heap (about 4 MB), and every run is a fork of the worker, whose pages
# it maps and copies on write (about 8% of a run's CPU).
_WORKER_BOOT = "import marshal;f=open(%d,'rb');c=marshal.loads(f.read());f.close();del f;exec(c)"
_worker_code: bytes | None = None
_worker_code_lock = threading.Lock()


def _worker_code_fd() -> int:
    """A descriptor of an anonymous file holding the worker's code, marshalled (compiled once per
    process, by this interpreter, which also runs the worker)."""
    global _worker_code
    with _worker_code_lock:
        if _worker_code is None:
            import marshal

            _worker_code = marshal.dumps(worker_code())
        code = _worker_code
    try:
        fd = os.memfd_create("gem-sandbox-worker", os.MFD_CLOEXEC)
    except (AttributeError, OSError):  # no memfd: an unlinked temporary file
        import tempfile

        with tempfile.TemporaryFile() as tmp:
            fd = os.dup(tmp.fileno())
    try:
        view = memoryview(code)
        while view:
            view = view[os.write(fd, view):]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
_START_TIMEOUT = 30.0
_KILL_GRACE = 5.0  # after a kill, how long to wait for the worker's confirmation
_READ_CHUNK = 1 << 16
_PIPE_PREFILL = 1 << 16  # a pipe's default capacity

REASONS = ("ok", "error", "timeout", "memory", "output_limit")
_HEADER = wire.HEADER  # kind, address space bytes, CPU seconds, file size bytes, processes; -1: none


@dataclasses.dataclass(frozen=True)
class SandboxLimits:
    """Per-run limits. ``cpu_time`` defaults to the wall time; ``None`` disables a limit.

    ``memory_mb`` and ``max_processes`` cover the whole run (all its processes, its ``/tmp`` files
    and socket buffers) where the sandbox has cgroups, and each process otherwise (see
    ``Sandbox.isolation["cgroups"]`` and ``python -m gem.sandbox --check``).
    """

    timeout: float = DEFAULT_TIMEOUT
    cpu_time: float | None = None
    memory_mb: int | None = DEFAULT_MEMORY_MB
    max_processes: int = DEFAULT_MAX_PROCESSES
    file_size_mb: float | None = DEFAULT_FILE_SIZE_MB
    output_bytes: int = DEFAULT_OUTPUT_BYTES

    def __post_init__(self) -> None:
        if not self.timeout or self.timeout <= 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {self.timeout!r}.")
        if self.max_processes < 1:
            raise ValueError(f"max_processes must be at least 1, got {self.max_processes!r}.")
        if self.output_bytes < 1:
            raise ValueError(f"output_bytes must be positive, got {self.output_bytes!r}.")
        if self.memory_mb is not None and self.memory_mb < 32:
            raise ValueError(f"memory_mb must be at least 32 (Python needs it), got {self.memory_mb!r}.")

    def to_wire(self, session: bool = False) -> bytes:
        """The request header the worker's child reads (``gem.sandbox.wire.HEADER``)."""
        return _HEADER.pack(
            wire.REQUEST_SESSION if session else wire.REQUEST_RUN,
            -1 if self.memory_mb is None else int(self.memory_mb * 2**20),
            float(self.cpu_time if self.cpu_time is not None else self.timeout),
            -1 if self.file_size_mb is None else int(self.file_size_mb * 2**20),
            int(self.max_processes),
        )


@dataclasses.dataclass
class SandboxResult:
    """What a run did.

    Attributes:
        stdout, stderr: decoded output (invalid UTF-8 replaced), cut at the output limit.
        exit_code: the exit status, or ``-N`` when killed by signal ``N``; ``None`` if it never ran.
        reason: why it stopped: ``ok`` (exit 0), ``error`` (non-zero exit or a crash),
            ``timeout`` (wall or CPU time), ``memory`` (a MemoryError under the memory limit, or,
            with cgroups, the kernel killing a process of the run for want of memory),
            ``output_limit`` (killed for printing too much).
        wall_time, cpu_time: seconds.
        isolation: what confinement was in force (``network_isolated``, ``drop_privileges``, ...).
    """

    stdout: str
    stderr: str
    exit_code: int | None
    reason: str
    wall_time: float
    cpu_time: float = 0.0
    isolation: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.reason == "ok"

    @property
    def timed_out(self) -> bool:
        return self.reason == "timeout"


class SandboxError(RuntimeError):
    """The sandbox itself failed (the worker could not start or died)."""


def _scrubbed_env() -> dict[str, str]:
    """The worker's whole environment. ``LD_BIND_NOW``: the dynamic linker resolves every symbol
    once, in the worker, instead of in each child on first call (a lookup and a copied page each).
    The runs themselves get ``BASE_ENV`` of the worker, without it."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "LD_BIND_NOW": "1",
    }


def _site_dirs() -> list[str]:
    """This interpreter's site-packages directories (the worker imports from them)."""
    import site

    try:
        return list(site.getsitepackages())
    except AttributeError:  # a virtualenv's old site.py
        return [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _limits(limits: SandboxLimits | None, overrides: dict[str, Any]) -> SandboxLimits:
    base = limits or SandboxLimits()
    return dataclasses.replace(base, **overrides) if overrides else base


class _Pump:
    """Feeds a run's input and collects its output, in the calling thread."""

    def __init__(self, data: bytes, limits: SandboxLimits) -> None:
        self.in_r, self.in_w = os.pipe()
        self.out_r, self.out_w = os.pipe()
        self.err_r, self.err_w = os.pipe()
        self.st_r, self.st_w = os.pipe()  # the child writes its exit status here just before exiting
        for fd in (self.in_w, self.out_r, self.err_r, self.st_r):
            os.set_blocking(fd, False)
        self.data = memoryview(data)
        self.limits = limits
        self.out = bytearray()
        self.err = bytearray()
        self.over_limit = False
        # Most programs (with their input) fit the pipe: written now, before the request is sent,
        # the child never waits for them and the caller needs no extra wake-up to write.
        try:
            n = os.write(self.in_w, self.data[:_PIPE_PREFILL])
        except BlockingIOError:
            n = 0
        self.data = self.data[n:]
        if not self.data:
            os.close(self.in_w)
            self.in_w = -1

    def child_fds(self) -> list[int]:
        return [self.in_r, self.out_w, self.err_w, self.st_w]

    def close_child_ends(self) -> None:
        for fd in (self.in_r, self.out_w, self.err_w, self.st_w):
            os.close(fd)

    def close_own_ends(self) -> None:
        """Close this side's descriptors (``run`` does it; this is for a run that never started)."""
        for fd in (self.in_w, self.out_r, self.err_r, self.st_r):
            if fd >= 0:
                os.close(fd)
        self.in_w = self.out_r = self.err_r = self.st_r = -1

    def run(
        self, done: socket.socket, deadline: float, kill: Any, reports: bool = True
    ) -> tuple[dict | None, bool]:
        """Pump until ``done`` delivers a JSON message; kill on timeout or output flood.

        Returns ``(message or None, timed_out)``. Plain ``poll`` (no selector object, no epoll
        descriptor): a run's whole life is a handful of wake-ups. ``reports=False``: ``done`` is
        a session's own socket, on which nothing legitimate ever arrives (its end means the
        session ended): whatever the session's code sends there gets it killed, as does a
        report that is not one.
        """
        poller = select.poll()
        streams = {self.out_r: self.out, self.err_r: self.err}
        done_fd = done.fileno()
        try:
            if self.in_w >= 0:
                poller.register(self.in_w, select.POLLOUT)
            for fd in (self.out_r, self.err_r, self.st_r, done_fd):
                poller.register(fd, select.POLLIN)
            status_buf = b""
            timed_out = False
            kill_deadline: float | None = None
            while True:
                now = time.monotonic()
                if kill_deadline is None and now >= deadline:
                    timed_out = True
                    kill()
                    kill_deadline = now + _KILL_GRACE
                limit = (kill_deadline if kill_deadline is not None else deadline) - now
                if kill_deadline is not None and limit <= 0:
                    return None, timed_out
                for fd, _ev in poller.poll(max(int(limit * 1000) + 1, 0)):
                    if fd == self.in_w:
                        try:
                            n = os.write(fd, self.data[:_READ_CHUNK])
                        except (BrokenPipeError, BlockingIOError) as exc:
                            n = -1 if isinstance(exc, BrokenPipeError) else 0
                        if n < 0 or n >= len(self.data):
                            poller.unregister(fd)
                            os.close(fd)
                            self.in_w = -1
                            self.data = memoryview(b"")
                        else:
                            self.data = self.data[n:]
                    elif fd == self.st_r:
                        try:
                            chunk = os.read(fd, 4096)
                        except BlockingIOError:
                            continue
                        status_buf += chunk
                        if not chunk or len(status_buf) > 4096:
                            poller.unregister(fd)  # closed or junk: wait for the worker's report
                        elif status_buf.endswith(b"\n") and kill_deadline is None:
                            try:
                                exit_s, cpu_s, *busy = status_buf.split()
                                status = {"status": (int(exit_s) & 0xFF) << 8, "cpu": float(cpu_s)}
                                if not 0 <= status["cpu"] < float("inf"):
                                    raise ValueError(cpu_s)
                                if busy:  # a session's cell: could anything of it still run?
                                    status["busy"] = busy[0] != b"0"
                            except ValueError:
                                poller.unregister(fd)
                                continue
                            self._drain(streams)
                            return status, timed_out
                    elif fd in streams:
                        got = self._read(fd, streams[fd])
                        if got is False:
                            poller.unregister(fd)
                        elif self.over_limit and kill_deadline is None:
                            kill()
                            kill_deadline = time.monotonic() + _KILL_GRACE
                            for s in streams:
                                try:
                                    poller.unregister(s)
                                except KeyError:
                                    pass
                    elif fd == done_fd:
                        try:
                            msg = done.recv(1 << 16)
                        except OSError:
                            msg = b""
                        report = _worker_report(msg) if msg and reports else None
                        if report is None:
                            if msg and kill_deadline is None:
                                kill()  # (the caller then waits for the worker's own report)
                            return None, timed_out
                        if not self.over_limit:
                            self._drain(streams)
                        return report, timed_out
        finally:
            for fd in (self.in_w, self.out_r, self.err_r, self.st_r):
                if fd >= 0:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            self.in_w = self.out_r = self.err_r = self.st_r = -1

    def _read(self, fd: int, buf: bytearray) -> bool | None:
        """Read a chunk into ``buf`` up to the output limit: True (data), False (EOF), None (none yet)."""
        try:
            chunk = os.read(fd, _READ_CHUNK)
        except BlockingIOError:
            return None
        if not chunk:
            return False
        room = self.limits.output_bytes - len(self.out) - len(self.err)
        if len(chunk) > room:
            buf += chunk[: max(room, 0)]
            self.over_limit = True
        else:
            buf += chunk
        return True

    def _drain(self, streams: dict[int, bytearray]) -> None:
        """Output written before the exit is already in the pipes: take it without waiting."""
        for fd, buf in streams.items():
            while not self.over_limit and self._read(fd, buf):
                pass


def _worker_report(raw: bytes) -> dict | None:
    """A ``{"status": wait status, ...}`` report as a dict with the expected types, else ``None``."""
    try:
        msg = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(msg, dict):
        return None
    if "error" in msg:
        return {"error": str(msg["error"])}
    status, cpu = msg.get("status"), msg.get("cpu", 0.0)
    if not isinstance(status, int) or isinstance(status, bool) or not isinstance(cpu, (int, float)):
        return None
    if not 0 <= status < 1 << 16 or not 0 <= cpu < float("inf"):
        return None
    return msg


def _frame(code: str, stdin: str | bytes | None) -> bytes:
    body = code.encode("utf-8", "surrogatepass")
    if len(body) > MAX_CODE_BYTES:
        raise ValueError(f"code is {len(body)} bytes; the sandbox accepts at most {MAX_CODE_BYTES}.")
    if stdin is None:
        tail = b""
    elif isinstance(stdin, str):
        tail = stdin.encode("utf-8", "surrogatepass")
    else:
        tail = bytes(stdin)
    return wire.CODE_LENGTH.pack(len(body)) + body + tail


def _classify(
    status_msg: dict | None, timed_out: bool, over_limit: bool, stderr: str, cpu_limit: float = 0.0
) -> tuple[int | None, str]:
    if status_msg is None:
        return None, "timeout" if timed_out else "error"
    status = status_msg["status"]
    if os.WIFEXITED(status):
        code: int | None = os.WEXITSTATUS(status)
    elif os.WIFSIGNALED(status):
        code = -os.WTERMSIG(status)
    else:
        code = None
    if over_limit:
        return code, "output_limit"
    if status_msg.get("oom"):  # the run's cgroup ran out of memory: the worker ended the run
        return code, "memory"
    if status_msg.get("cpu_limit") is True:  # the worker ended a session's cell for its CPU time
        return code, "timeout"
    if timed_out or code == -signal.SIGXCPU:
        return code, "timeout"
    # A run is pid 1 of its PID namespace, which ignores SIGXCPU: its CPU limit is a hard one,
    # enforced with SIGKILL when used up.
    # (The CPU time reported may fall a little short of the limit: the kernel counts finer.)
    cpu = float(status_msg.get("cpu", 0.0))
    if code == -signal.SIGKILL and cpu_limit and not status_msg.get("killed") and cpu >= 0.8 * cpu_limit:
        return code, "timeout"
    if code == 0:
        return code, "ok"
    last = stderr.rstrip().rsplit("\n", 1)[-1]
    if last.startswith("MemoryError"):
        return code, "memory"
    return code, "error"


class Sandbox:
    """A warm worker that runs untrusted Python under limits. Start once, run many times.

    Args:
        limits: default per-run limits (each :meth:`run` may override fields).
        network: ``True`` leaves the host's network reachable (not recommended); by default each
            run has a network namespace of its own with no interface up.
        drop_privileges: as root, run each program as its own unprivileged uid (``False``: runs
            keep uid 0, without capabilities; not recommended).
        uid_base: where the uid pools start (root only). A worker with pid P uses
            ``uid_base + P * 256 .. + slots``, so live workers never share a uid; no real user
            may own uids in ``uid_base .. uid_base + pid_max * 256``.
        slots: the most runs at once (each has its own uid).
        tmp_mb, tmp_inodes: quotas of each run's private ``/tmp`` (bytes, files and directories).
        preload: modules the worker imports once (e.g. ``("numpy",)``), so runs import them for
            free; one that fails to import is noted in ``isolation["notes"]``.
        prefork: children kept forked, confined and waiting, so a run does not wait for a fork.
        hidden_paths: more files or directories runs must not see (a local dataset, answers), in
            addition to :func:`default_hidden_paths`.
        unsafe: on a host without root or user namespaces, run code anyway without isolation
            (limits only: the code can read and write what your user can). Also enabled by the
            environment variable ``GEM_SANDBOX_UNSAFE=1``. Without it such a host raises
            :class:`SandboxError` explaining how to enable user namespaces.
        cgroups: limit each run's memory and processes as a whole with a cgroup of its own (as
            root, where the host has cgroup v2 or v1 controllers; see ``isolation["cgroups"]``).
            ``False``: per-process limits only (rlimits), as on a host without cgroups.
    """

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        network: bool = False,
        drop_privileges: bool = True,
        uid_base: int = 1_000_000,
        slots: int = 256,
        tmp_mb: int = DEFAULT_TMP_MB,
        tmp_inodes: int = DEFAULT_TMP_INODES,
        preload: tuple[str, ...] = (),
        prefork: int = 4,
        hidden_paths: Iterable[str] = (),
        unsafe: bool = False,
        cgroups: bool = True,
    ) -> None:
        if not 1 <= slots <= 256:
            raise ValueError(f"slots must be between 1 and 256, got {slots}.")
        if not 1000 <= uid_base <= 1_000_000_000:
            raise ValueError(
                f"uid_base must be between 1000 and 10**9 (uids above it stay < 2**31), got {uid_base}."
            )
        if tmp_mb < 1 or tmp_inodes < 16:
            raise ValueError(f"tmp_mb must be >= 1 and tmp_inodes >= 16, got {tmp_mb} and {tmp_inodes}.")
        if isinstance(hidden_paths, (str, bytes)):
            raise ValueError("hidden_paths must be a list of paths, not one string.")
        self.limits = limits or SandboxLimits()
        self.hidden_paths = tuple(sorted({os.path.abspath(p) for p in hidden_paths}))
        self._config = {
            "network": not network,
            "drop_privileges": bool(drop_privileges),
            "uid_base": int(uid_base),
            "slots": int(slots),
            "tmp_mb": int(tmp_mb),
            "tmp_inodes": int(tmp_inodes),
            "preload": list(preload),
            "prefork": max(1, int(prefork)),
            "hidden_extra": list(self.hidden_paths),
            "unsafe": bool(unsafe),
            "cgroups": bool(cgroups),
        }
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._sock: socket.socket | None = None  # the worker's lifeline (closing it stops it)
        self._work: socket.socket | None = None  # requests, taken by idle children
        self._closed = False
        self._derived: dict[tuple[str, ...], Sandbox] = {}
        self.isolation: dict[str, Any] = {}

    # -------------------------------------------------------------- the worker
    def _ensure_started(self) -> socket.socket:
        with self._lock:
            if self._closed:
                raise SandboxError("This Sandbox was closed; create a new one.")
            if self._proc is not None and self._proc.poll() is None and self._work is not None:
                return self._work
            if self._proc is not None:
                logger.warning("sandbox worker exited (status %s); starting a new one", self._proc.returncode)
                self._stop_locked()
            parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            work_parent, work_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            # The worker's code arrives compiled, through a descriptor: its path (inside GEM's
            # package) stays out of the worker's command line, which a run's /proc/1 shows.
            script = _worker_code_fd()
            try:
                self._proc = subprocess.Popen(
                    [
                        sys.executable,
                        "-I",
                        "-S",  # its site-packages come from _site_dirs(), without start-up hooks
                        "-c",
                        _WORKER_BOOT % script,
                        str(child.fileno()),
                        str(work_child.fileno()),
                    ],
                    pass_fds=[child.fileno(), work_child.fileno(), script],
                    env=_scrubbed_env(),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=None if os.environ.get("GEM_SANDBOX_DEBUG") else subprocess.DEVNULL,
                    start_new_session=True,
                    cwd="/",
                )
            finally:
                child.close()
                work_child.close()
                os.close(script)
            parent.settimeout(_START_TIMEOUT)
            # The configuration goes over the socket, not the command line: a run's /proc/1 is a
            # fork of the worker and shows its command line.
            config = {
                **self._config,
                "unsafe": self._config["unsafe"] or _env_unsafe(),
                "hidden": [*default_hidden_paths(), *self._config["hidden_extra"]],
                "site_dirs": _site_dirs(),
                "debug": bool(os.environ.get("GEM_SANDBOX_DEBUG")),
                # The runs' seccomp filter (built here, where it is tested) and capset's number.
                **seccomp.worker_settings(network_isolated=self._config["network"]),
            }
            try:
                parent.send(json.dumps(config).encode())
                hello = parent.recv(1 << 16)
            except OSError as exc:
                self._proc.kill()
                raise SandboxError(f"The sandbox worker did not start: {exc}.") from exc
            if not hello:
                self._proc.wait()
                raise SandboxError(
                    f"The sandbox worker exited at start (status {self._proc.returncode}); "
                    f"try running {sys.executable} {_ZYGOTE} by hand to see why."
                )
            parent.settimeout(None)
            info = json.loads(hello)
            if "error" in info:
                self._proc.wait()
                parent.close()
                work_parent.close()
                self._proc = None
                raise SandboxError(f"Refusing to run untrusted code: {info['error']}.")
            self.isolation = info
            if info.get("mode") == "unsafe":
                logger.warning(
                    "sandbox: UNSAFE mode, runs are not isolated from this user's files and processes (%s)",
                    "; ".join(info.get("notes", [])),
                )
            self._sock = parent
            self._work = work_parent
            return work_parent

    def _stop_locked(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._work.close()  # type: ignore[union-attr]
            self._sock = self._work = None
        if self._proc is not None:
            try:
                self._proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None

    def close(self) -> None:
        """Stop the worker; running programs are killed."""
        with self._lock:
            self._closed = True
            self._stop_locked()
            derived, self._derived = list(self._derived.values()), {}
        for box in derived:
            box.close()

    def with_hidden_paths(self, paths: Iterable[str]) -> Sandbox:
        """This sandbox if it hides ``paths`` already, else a sandbox like it that also hides them
        (kept and reused: a worker's view of the files is fixed when it starts)."""
        extra = tuple(sorted({os.path.abspath(p) for p in paths} - set(self.hidden_paths)))
        if not extra:
            return self
        with self._lock:
            if self._closed:
                raise SandboxError("This Sandbox was closed; create a new one.")
            box = self._derived.get(extra)
            if box is None:
                box = _rebuild(self.limits, {**self._config, "hidden_extra": [*self.hidden_paths, *extra]})
                self._derived[extra] = box
            return box

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __deepcopy__(self, memo: dict[int, Any]) -> Sandbox:
        return self  # a handle on a shared service: copies of an env share it

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # Sent to another process (a process vector env), it becomes a new sandbox there.
        return _rebuild, (self.limits, self._config)

    def __del__(self) -> None:
        try:
            if self._proc is not None and self._proc.poll() is None:
                self._sock.close()  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def _launch(self, message: bytes, fds: list[int]) -> socket.socket:
        """Queue a request for the worker's waiting children; return the run's control socket."""
        ctl_parent, ctl_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            try:
                socket.send_fds(self._ensure_started(), [message], [ctl_child.fileno(), *fds])
            except OSError:  # the worker died between the check and the send: start a new one
                with self._lock:
                    if self._proc is not None:
                        self._proc.kill()
                try:
                    socket.send_fds(self._ensure_started(), [message], [ctl_child.fileno(), *fds])
                except OSError as exc:
                    raise SandboxError(f"The sandbox worker is not answering: {exc}.") from exc
            return ctl_parent
        except BaseException:
            ctl_parent.close()
            raise
        finally:
            ctl_child.close()

    # -------------------------------------------------------------- running
    def run(
        self,
        code: str,
        stdin: str | bytes | None = None,
        *,
        limits: SandboxLimits | None = None,
        hidden_paths: Sequence[str] = (),
        **overrides: Any,
    ) -> SandboxResult:
        """Run ``code`` as a Python script with ``stdin``; never raises for anything the code does.

        ``overrides`` are :class:`SandboxLimits` fields (``timeout=2``, ``memory_mb=256``, ...).
        ``hidden_paths``: more files or directories this run must not see (see
        :meth:`with_hidden_paths`).
        """
        if hidden_paths:
            box = self.with_hidden_paths(hidden_paths)
            if box is not self:
                return box.run(code, stdin, limits=limits, **overrides)
        lim = _limits(limits or self.limits, overrides)
        start = time.monotonic()
        payload = _frame(code, stdin)
        pump = _Pump(payload, lim)
        try:
            ctl = self._launch(lim.to_wire(), pump.child_fds())
        except BaseException:
            pump.close_own_ends()
            raise
        finally:
            pump.close_child_ends()
        with ctl:
            msg, timed_out = pump.run(ctl, start + lim.timeout, lambda: _send_kill(ctl))
        if msg is not None and "error" in msg:
            raise SandboxError(f"The sandbox refused the run: {msg['error']}.")
        return self._result(pump, msg, timed_out, start)

    def _result(self, pump: _Pump, msg: dict | None, timed_out: bool, start: float) -> SandboxResult:
        stdout, stderr = _decode(bytes(pump.out)), _decode(bytes(pump.err))
        lim = pump.limits
        cpu_limit = lim.cpu_time if lim.cpu_time is not None else lim.timeout
        code, reason = _classify(msg, timed_out, pump.over_limit, stderr, max(1, int(cpu_limit + 0.999)))
        if reason == "timeout" and timed_out:
            stderr += f"\nTimeoutError: the program ran longer than {pump.limits.timeout:g} s and was killed."
        elif reason == "timeout":
            stderr += "\nTimeoutError: the program used more than its CPU-time limit and was killed."
        elif reason == "output_limit":
            stderr += (
                f"\nOutputLimitExceeded: the program printed more than {pump.limits.output_bytes} bytes "
                "and was killed."
            )
        return SandboxResult(
            stdout=stdout,
            stderr=stderr,
            exit_code=code,
            reason=reason,
            wall_time=time.monotonic() - start,
            cpu_time=float(msg.get("cpu", 0.0)) if msg else 0.0,
            isolation=dict(self.isolation),
        )

    def session(self, limits: SandboxLimits | None = None, **overrides: Any) -> SandboxSession:
        """A persistent interpreter (a notebook kernel): variables survive from one cell to the next."""
        return SandboxSession(self, _limits(limits or self.limits, overrides))


def _rebuild(limits: SandboxLimits, config: dict[str, Any]) -> Sandbox:
    box = Sandbox(limits)
    box._config = dict(config)
    box.hidden_paths = tuple(config.get("hidden_extra", ()))
    return box


def _env_unsafe() -> bool:
    return os.environ.get(UNSAFE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def _checkout_of(package_dir: str) -> list[str]:
    """The project checkout holding a package directory (not a site-packages), if it is one."""
    parent = os.path.dirname(package_dir)
    if any(os.path.exists(os.path.join(parent, m)) for m in ("pyproject.toml", "setup.py", ".git")):
        return [parent]
    return []


_DIST_NAMES = ("gem_llm", "gem-llm")


def _installed_from(site_dir: str) -> list[str]:
    """Directories holding a copy of GEM's package (``<dir>/gem/__init__.py``) that ``site_dir``
    names: the source an install of ``gem-llm`` was made from (its ``direct_url.json``, a local
    checkout kept after ``pip install <dir>``), editable installs by path (``.pth`` lines,
    ``.egg-link`` files)."""
    found: list[str] = []
    try:
        names = os.listdir(site_dir)
    except OSError:
        return found
    candidates: list[str] = []
    for name in names:
        path = os.path.join(site_dir, name)
        try:
            if name.endswith(".dist-info") and name.lower().startswith(_DIST_NAMES):
                with open(os.path.join(path, "direct_url.json"), encoding="utf-8") as fh:
                    url = str(json.load(fh).get("url", ""))
                if url.startswith("file://"):
                    candidates.append(urllib.parse.unquote(url[len("file://"):]))
            elif name.endswith(".egg-link") and name.lower().startswith(_DIST_NAMES):
                with open(path, encoding="utf-8") as fh:
                    candidates.append(fh.readline().strip())
            elif name.endswith(".pth"):
                with open(path, encoding="utf-8") as fh:
                    candidates += [
                        line.strip() for line in fh if line.strip() and not line.startswith(("#", "import"))
                    ]
        except (OSError, ValueError, AttributeError):
            continue
    for top in candidates:
        if os.path.isabs(top) and os.path.isfile(os.path.join(top, "gem", "__init__.py")):
            found.append(top)
        elif os.path.isabs(top) and os.path.basename(top.rstrip("/")) == "gem" and os.path.isfile(
            os.path.join(top, "__init__.py")
        ):
            found.append(os.path.dirname(top.rstrip("/")))
    return found


def default_hidden_paths() -> list[str]:
    """What no run sees: GEM's package directory (its bundled data included), the project
    checkout that holds it, other copies of GEM installed beside it, home directories and the
    Hugging Face caches. Paths that do not exist are left out."""
    gem_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [gem_dir, *_checkout_of(gem_dir)]
    for site_dir in _site_dirs():
        if os.path.isfile(os.path.join(site_dir, "gem", "__init__.py")):
            paths.append(os.path.join(site_dir, "gem"))
        try:
            finders = [
                n for n in os.listdir(site_dir) if n.startswith("__editable__") and n.endswith("_finder.py")
            ]
        except OSError:
            finders = []
        for top in _installed_from(site_dir):  # where an install of GEM came from
            paths += [os.path.join(top, "gem"), top]
        for name in finders:  # an editable install elsewhere: its package and its checkout
            try:
                with open(os.path.join(site_dir, name), encoding="utf-8") as fh:
                    found = re.search(r"""['"]gem['"]\s*:\s*['"]([^'"]+)['"]""", fh.read())
            except OSError:
                continue
            if found and os.path.isfile(os.path.join(found.group(1), "__init__.py")):
                paths += [found.group(1), *_checkout_of(found.group(1))]
    home = os.path.expanduser("~")
    paths += ["/root", "/home", home, os.environ.get("HOME", "")]
    hf_vars = ("HF_HOME", "HF_DATASETS_CACHE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE")
    paths += [os.environ.get(var, "") for var in hf_vars]
    paths.append(os.path.join(home, ".cache", "huggingface"))
    out = []
    for p in paths:
        if p and os.path.isabs(p) and os.path.realpath(p) != "/" and os.path.lexists(p):
            real = os.path.realpath(p)
            if real not in out:
                out.append(real)
    return out


def _send_ctl(ctl: socket.socket, message: bytes) -> None:
    try:
        ctl.send(message)
    except OSError:
        pass


def _send_kill(ctl: socket.socket) -> None:
    _send_ctl(ctl, b"kill")


class _SessionFreezer:
    """The caller's hold on a session's cgroup freezer (root, with a freezer: see the worker's
    ``hand_over_freezer``). The caller stops the session after each cell and lets it go on before
    the next one itself, without a round trip through the worker.

    Stopping: the kernel process gets ``SIGSTOP`` (from outside its PID namespace, so it cannot
    refuse it); once it is stopped, if it is the slot's only task (``pids.current`` is 1: no thread
    and no other process), nothing of the session can run, and that is all (two system calls where
    the v1 freezer costs about 40 microseconds each way). Otherwise the whole slot is frozen with
    the cgroup freezer and every process but the kernel is killed (they die when it is thawed).
    """

    def __init__(self, pid: int, version: int, moves_cpu_limits: bool, fds: list[int]) -> None:
        self.pid, self.version, self.moves_cpu_limits = pid, version, moves_cpu_limits
        self.freeze_fd, self.state_fd, self.procs_fd, self.count_fd = fds
        self.stat_fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
        self.frozen = self.stopped = False

    def _is_frozen(self) -> bool:
        if self.version == 2:
            return b"frozen 1" in os.pread(self.state_fd, 256, 0)
        return os.pread(self.state_fd, 64, 0).startswith(b"FROZEN")

    def _is_stopped(self) -> bool:
        stat = os.pread(self.stat_fd, 512, 0)
        return stat.rsplit(b")", 1)[1][1:2] == b"T"

    @staticmethod
    def _wait(done: Callable[[], bool], wait: float) -> bool:
        from gem.sandbox._zygote import spin_until

        return spin_until(done, wait)

    def freeze(self, wait: float = 2.0) -> bool:
        """Stop every process of the session and wait until it is stopped; False if that could not
        be done in time (the caller then ends the session)."""
        try:
            os.kill(self.pid, signal.SIGSTOP)
            self.stopped = True
            if self._wait(self._is_stopped, wait) and int(os.pread(self.count_fd, 32, 0) or b"0") == 1:
                return True  # the kernel alone, stopped: it starts nothing until SIGCONT
            os.write(self.freeze_fd, b"1" if self.version == 2 else b"FROZEN")
            self.frozen = True
            if not self._wait(self._is_frozen, wait):
                return False
            for pid in os.pread(self.procs_fd, 1 << 16, 0).split():
                if int(pid) != self.pid:
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            return True
        except (OSError, ValueError, IndexError):
            return False

    def start_cell(self, cpu: float) -> None:
        """The kernel's CPU limit for the next cell (what it has used plus the cell's allowance,
        soft and hard, where this process may move it), then let the session go on. The kernel is
        stopped here (after its first cell), so its pid is still its own."""
        if cpu > 0 and self.moves_cpu_limits:  # (elsewhere the worker checks the cell's CPU time)
            with open(f"/proc/{self.pid}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            spent = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            limit = int(spent + cpu + 0.999)
            resource.prlimit(self.pid, resource.RLIMIT_CPU, (limit, limit))
        if self.frozen:
            os.write(self.freeze_fd, b"0" if self.version == 2 else b"THAWED")
            self.frozen = False
        if self.stopped:
            os.kill(self.pid, signal.SIGCONT)
            self.stopped = False

    def close(self) -> None:
        for fd in (self.freeze_fd, self.state_fd, self.procs_fd, self.count_fd, self.stat_fd):
            try:
                os.close(fd)
            except OSError:
                pass


def _ask_for_freezer(ctl: socket.socket, timeout: float) -> _SessionFreezer | None:
    """Ask the worker for the session's freezer; ``None`` where it keeps it (or the kernel is gone)."""
    try:
        ctl.settimeout(timeout)
        ctl.send(b"direct")
        msg, fds, _flags, _addr = socket.recv_fds(ctl, 64, 4, socket.MSG_CMSG_CLOEXEC)
    except OSError:
        return None
    finally:
        try:
            ctl.settimeout(None)
        except OSError:
            pass
    parts = msg.split()
    if len(parts) == 4 and parts[0] == b"direct" and len(fds) == 4:
        try:
            return _SessionFreezer(int(parts[1]), int(parts[2]), parts[3] == b"1", fds)
        except (ValueError, OSError):  # (its kernel is already gone: the cell finds that out)
            pass
    for fd in fds:
        os.close(fd)
    return None


class SandboxSession:
    """Cells run one after another in one confined process that keeps its variables.

    Limits apply per cell (wall and CPU time) and to the process (memory, processes). A cell that
    times out or crashes the process ends the session; the next cell starts a fresh one, and its
    result says so (``SandboxResult.isolation["restarted"]``).
    """

    def __init__(self, sandbox: Sandbox, limits: SandboxLimits) -> None:
        self.sandbox = sandbox
        self.limits = limits
        self._ctl: socket.socket | None = None
        self._chan: socket.socket | None = None
        self._lock = threading.Lock()
        self._ever_started = False
        self._freezer: _SessionFreezer | None = None
        self.cells_run = 0

    @property
    def alive(self) -> bool:
        return self._chan is not None

    def _start(self) -> None:
        chan_parent, chan_child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        devnull = [os.open(os.devnull, os.O_RDWR) for _ in range(4)]
        try:
            self._ctl = self.sandbox._launch(
                self.limits.to_wire(session=True), [*devnull, chan_child.fileno()]
            )
        except BaseException:
            chan_parent.close()
            raise
        finally:
            chan_child.close()
            for fd in devnull:
                os.close(fd)
        self._chan = chan_parent
        self.cells_run = 0
        if self.sandbox.isolation.get("cgroup_freezer") and self.sandbox.isolation.get("privileged"):
            self._freezer = _ask_for_freezer(self._ctl, max(self.limits.timeout, _KILL_GRACE))

    def run(
        self, code: str, stdin: str | bytes | None = None, *, timeout: float | None = None
    ) -> SandboxResult:
        """Run one cell; variables from earlier cells are visible."""
        with self._lock:
            restarted = False
            if self._chan is None:
                restarted = self._ever_started
                self._start()
                self._ever_started = True
            lim = self.limits if timeout is None else dataclasses.replace(self.limits, timeout=timeout)
            start = time.monotonic()
            pump = _Pump(_frame(code, stdin), lim)
            try:
                try:
                    self._send_cell(pump, lim)
                except OSError:  # the kernel is gone: a fresh one gets this cell
                    self._end()
                    self._start()
                    self._send_cell(pump, lim)
            except BaseException:
                pump.close_own_ends()
                raise
            finally:
                pump.close_child_ends()
            ctl = self._ctl
            assert ctl is not None and self._chan is not None
            msg, timed_out = pump.run(self._chan, start + lim.timeout, lambda: _send_kill(ctl), reports=False)
            died = msg is None
            if died or pump.over_limit:
                # The kernel was killed (timeout, output flood) or exited: report how, then forget it.
                if not died:
                    _send_kill(ctl)
                ctl.settimeout(_KILL_GRACE)
                try:
                    raw = ctl.recv(1 << 16)
                    status_msg: dict | None = _worker_report(raw) if raw else None
                except (OSError, ValueError):
                    status_msg = None
                self._end()
                if pump.over_limit:
                    status_msg = status_msg or {"status": 0}
            else:
                status_msg = msg
                self.cells_run += 1
                # Nothing of the session may run until the next cell: the worker freezes it whole
                # before this returns, always. The status line comes from the session's own
                # process, which the cell's code controls: its "nothing else runs" (busy 0) may be
                # written by the cell itself, which then goes on running after its result.
                if not self._stop():
                    self._end()
            result = self.sandbox._result(pump, status_msg, timed_out, start)
            result.isolation = {**result.isolation, "restarted": restarted, "session_alive": self.alive}
            return result

    def _stop(self) -> bool:
        """Have the worker freeze the session until the next cell; wait until it has (nothing of
        the session runs once the cell's result is returned). False if the session is gone."""
        if self._freezer is not None:
            return self._freezer.freeze()
        ctl = self._ctl
        assert ctl is not None
        try:
            ctl.send(b"stop")
            ctl.settimeout(_KILL_GRACE)
            reply = ctl.recv(1 << 16)
        except OSError:
            return False
        finally:
            try:
                ctl.settimeout(None)
            except OSError:
                pass
        return reply == b"stopped"

    def _send_cell(self, pump: _Pump, lim: SandboxLimits) -> None:
        """Ask the worker for the cell's CPU allowance and to let the session run, then send it."""
        cpu = lim.cpu_time if lim.cpu_time is not None else lim.timeout
        if self._freezer is not None:
            if not self._freezer.moves_cpu_limits:
                self._ctl.send(b"cpu %.3f" % cpu)  # type: ignore[union-attr]
            # The cell first, then the thaw: the kernel wakes once, with its cell already there.
            socket.send_fds(self._chan, [b"cell"], pump.child_fds())  # type: ignore[arg-type]
            self._freezer.start_cell(cpu)
            return
        self._ctl.send(b"cell %.3f" % cpu)  # type: ignore[union-attr]
        socket.send_fds(self._chan, [b"cell"], pump.child_fds())  # type: ignore[arg-type]

    def _end(self) -> None:
        if self._freezer is not None:
            self._freezer.close()
            self._freezer = None
        for s in (self._chan, self._ctl):
            if s is not None:
                s.close()
        self._chan = self._ctl = None

    def close(self) -> None:
        """End the session (its process is killed)."""
        with self._lock:
            self._end()

    def __enter__(self) -> SandboxSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ------------------------------------------------------------------ the shared default sandbox
_default: Sandbox | None = None
_default_lock = threading.Lock()


def default_sandbox() -> Sandbox:
    """The process-wide sandbox that :func:`run_python` uses (started on first use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Sandbox()
        return _default


def run_python(
    code: str, *, stdin: str | bytes | None = None, timeout: float | None = None, **limits: Any
) -> SandboxResult:
    """Run untrusted Python ``code`` with ``stdin`` in the shared sandbox (:func:`default_sandbox`).

    ``limits`` are :class:`SandboxLimits` fields (``timeout`` (s), ``cpu_time`` (s), ``memory_mb``,
    ``max_processes``, ``file_size_mb``, ``output_bytes``) and ``hidden_paths`` (see
    :meth:`Sandbox.run`)::

        >>> run_python("print(input()[::-1])", stdin="abc", timeout=2).stdout
        'cba\\n'
    """
    if timeout is not None:
        limits["timeout"] = timeout
    hidden = limits.pop("hidden_paths", ())
    return default_sandbox().run(code, stdin, hidden_paths=hidden, **limits)
