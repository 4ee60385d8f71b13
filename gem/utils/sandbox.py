"""Run untrusted Python with limits, fast.

One entry point, :func:`run_python` (or :meth:`Sandbox.run` on a sandbox of your own), runs a
program with optional stdin and returns a :class:`SandboxResult`: stdout, stderr, exit status, wall
time and ``reason`` (``"ok"``, ``"error"``, ``"timeout"``, ``"memory"``, ``"output_limit"``).

How it is confined (see :mod:`gem.utils._sandbox_zygote` for the mechanics):

* a warm worker (the "zygote", a Python with common modules imported) forks one child per run, so
  ``print(1+1)`` costs about a millisecond instead of starting an interpreter;
* limits per run: wall time (enforced here, the whole process tree is killed), CPU time, address
  space, number of processes, file size, output size;
* as root: no network (a fresh network namespace with no interface up), a read-only view of the
  file system except the run's private temporary directory (removed afterwards), and an
  unprivileged uid of its own per concurrent run (so it cannot read ``/etc/shadow``, signal the
  zygote or other runs, and everything it started is killed with ``kill(-1)`` as that uid);
* the environment is scrubbed: the worker starts with a minimal environment, never the parent's.

Without root, runs keep the caller's uid; the network is isolated only if unprivileged user
namespaces work; the result's ``isolation`` says what was in force. Thread-safe: many threads may
call :meth:`Sandbox.run` at once.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from typing import Any

logger = logging.getLogger(__name__)

# ------------------------------------------------------------------ defaults (one place)
DEFAULT_TIMEOUT = 10.0  # seconds of wall time
DEFAULT_MEMORY_MB = 1024  # address space
DEFAULT_MAX_PROCESSES = 16  # processes and threads of the run's uid
DEFAULT_FILE_SIZE_MB = 16  # largest file it may write
DEFAULT_OUTPUT_BYTES = 1 << 20  # stdout + stderr kept; more kills the run
MAX_CODE_BYTES = 16 << 20
_ZYGOTE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_sandbox_zygote.py")
_START_TIMEOUT = 30.0
_KILL_GRACE = 5.0  # after a kill, how long to wait for the worker's confirmation
_READ_CHUNK = 1 << 16
_PIPE_PREFILL = 1 << 16  # a pipe's default capacity

REASONS = ("ok", "error", "timeout", "memory", "output_limit")
# kind (0 run, 1 session), address space bytes, CPU seconds, file size bytes, processes; -1: none.
_HEADER = struct.Struct("<Bqdqq")


@dataclasses.dataclass(frozen=True)
class SandboxLimits:
    """Per-run limits. ``cpu_time`` defaults to the wall time; ``None`` disables a limit."""

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
        """The request header the worker's child reads (see ``_sandbox_zygote.HEADER``)."""
        return _HEADER.pack(
            1 if session else 0,
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
            ``timeout`` (wall or CPU time), ``memory`` (MemoryError under the memory limit),
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

    def run(self, done: socket.socket, deadline: float, kill: Any) -> tuple[dict | None, bool]:
        """Pump until ``done`` delivers a JSON message; kill on timeout or output flood.

        Returns ``(message or None, timed_out)``. Plain ``poll`` (no selector object, no epoll
        descriptor): a run's whole life is a handful of wake-ups.
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
                                exit_s, cpu_s = status_buf.split()
                                status = {"status": (int(exit_s) & 0xFF) << 8, "cpu": float(cpu_s)}
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
                        if not msg:
                            return None, timed_out
                        if not self.over_limit:
                            self._drain(streams)
                        return json.loads(msg), timed_out
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
    return struct.pack("<Q", len(body)) + body + tail


def _classify(
    status_msg: dict | None, timed_out: bool, over_limit: bool, stderr: str
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
    if timed_out or code == -signal.SIGXCPU:
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
        network: ``False`` leaves the network reachable (not recommended).
        drop_privileges: run each program as its own unprivileged uid when this process is root.
        uid_base: where the uid pools start. A worker with pid P uses
            ``uid_base + P * slots .. + slots``, so live workers never share a uid; no real user
            may own uids in ``uid_base .. uid_base + pid_max * slots``.
        slots: the most runs at once (each has its own uid).
        tmp_mb: size of the tmpfs that holds the runs' directories (root only).
        preload: modules the worker imports once (e.g. ``("numpy",)``), so runs import them for
            free; one that fails to import is noted in ``isolation["notes"]``.
        prefork: children kept forked and waiting, so a run does not wait for a fork.
    """

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        network: bool = False,
        drop_privileges: bool = True,
        uid_base: int = 1_000_000,
        slots: int = 256,
        tmp_mb: int = 1024,
        preload: tuple[str, ...] = (),
        prefork: int = 4,
    ) -> None:
        if not 1 <= slots <= 256:
            raise ValueError(f"slots must be between 1 and 256, got {slots}.")
        if not 1000 <= uid_base <= 1_000_000_000:
            raise ValueError(
                f"uid_base must be between 1000 and 10**9 (uids above it stay < 2**31), got {uid_base}."
            )
        self.limits = limits or SandboxLimits()
        self._config = {
            "network": not network,
            "drop_privileges": bool(drop_privileges),
            "uid_base": int(uid_base),
            "slots": int(slots),
            "tmp_mb": int(tmp_mb),
            "preload": list(preload),
            "prefork": max(1, int(prefork)),
        }
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._sock: socket.socket | None = None  # the worker's lifeline (closing it stops it)
        self._work: socket.socket | None = None  # requests, taken by idle children
        self._closed = False
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
            try:
                self._proc = subprocess.Popen(
                    [
                        sys.executable,
                        "-I",
                        "-S",  # its site-packages come from _site_dirs(), without start-up hooks
                        _ZYGOTE,
                        str(child.fileno()),
                        str(work_child.fileno()),
                        json.dumps(
                            {
                                **self._config,
                                "site_dirs": _site_dirs(),
                                "debug": bool(os.environ.get("GEM_SANDBOX_DEBUG")),
                            }
                        ),
                    ],
                    pass_fds=[child.fileno(), work_child.fileno()],
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
            parent.settimeout(_START_TIMEOUT)
            try:
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
            self.isolation = json.loads(hello)
            if not self.isolation.get("network_isolated") and self._config["network"]:
                logger.warning(
                    "sandbox: network isolation is not available here (%s)", self.isolation.get("notes")
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
        **overrides: Any,
    ) -> SandboxResult:
        """Run ``code`` as a Python script with ``stdin``; never raises for anything the code does.

        ``overrides`` are :class:`SandboxLimits` fields (``timeout=2``, ``memory_mb=256``, ...).
        """
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
        code, reason = _classify(msg, timed_out, pump.over_limit, stderr)
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
    return box


def _send_kill(ctl: socket.socket) -> None:
    try:
        ctl.send(b"kill")
    except OSError:
        pass


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
                    socket.send_fds(self._chan, [b"cell"], pump.child_fds())  # type: ignore[arg-type]
                except OSError:  # the kernel is gone: a fresh one gets this cell
                    self._end()
                    self._start()
                    socket.send_fds(self._chan, [b"cell"], pump.child_fds())  # type: ignore[arg-type]
            except BaseException:
                pump.close_own_ends()
                raise
            finally:
                pump.close_child_ends()
            ctl = self._ctl
            assert ctl is not None and self._chan is not None
            msg, timed_out = pump.run(self._chan, start + lim.timeout, lambda: _send_kill(ctl))
            died = msg is None
            if died or pump.over_limit:
                # The kernel was killed (timeout, output flood) or exited: report how, then forget it.
                if not died:
                    _send_kill(ctl)
                ctl.settimeout(_KILL_GRACE)
                try:
                    raw = ctl.recv(1 << 16)
                    status_msg: dict | None = json.loads(raw) if raw else None
                except (OSError, ValueError):
                    status_msg = None
                self._end()
                if pump.over_limit:
                    status_msg = status_msg or {"status": 0}
            else:
                status_msg = msg
                self.cells_run += 1
            result = self.sandbox._result(pump, status_msg, timed_out, start)
            result.isolation = {**result.isolation, "restarted": restarted, "session_alive": self.alive}
            return result

    def _end(self) -> None:
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


def run_python(code: str, stdin: str | bytes | None = None, **limits: Any) -> SandboxResult:
    """Run untrusted Python ``code`` with ``stdin`` in the shared sandbox.

    ``limits`` are :class:`SandboxLimits` fields: ``timeout`` (s), ``cpu_time`` (s), ``memory_mb``,
    ``max_processes``, ``file_size_mb``, ``output_bytes``. Example::

        >>> run_python("print(input()[::-1])", stdin="abc", timeout=2).stdout
        'cba\\n'
    """
    return default_sandbox().run(code, stdin, **limits)
