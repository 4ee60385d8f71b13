"""The repository-test supervisor. Runs INSIDE a fresh sandbox run, never in GEM's process, and
never imports the repository's code.

:mod:`gem.envs.swe.grading` sends this file's source (after :mod:`gem.sandbox._shell_runtime`, whose
archive and clean-up helpers it uses) as the program; on stdin: a header (for each test, the input
of its child process: its own test source, or the id and report key of a pytest test), the
workspace as a tar (hidden tests already laid over it), and last a random nonce. No expected value
is ever sent here: GEM's process keeps them and compares.

Per test, in order:

* a fresh copy of the workspace;
* a process that holds nothing but its own input, never a fork of this process (whose memory holds
  the nonce and every test): it is forked from the *launcher*, a process this one forks first
  thing, before it reads its input, whose memory therefore holds only this program (forking is
  much cheaper than starting Python). If the launcher is gone (a test's code may kill it), a new
  interpreter (``python -I -S -B``) is started with ``exec`` instead. Either way the test's fds are
  0 (its input, then ``/dev/null``), 1 (a pipe only this test's result travels on) and 2
  (``/dev/null``), and no ``sitecustomize``, ``usercustomize``, ``.pth`` file or environment
  variable of the workspace runs;
* after it ends or its time is up, every process left but the launcher is killed, and the copy
  wiped.

This process keeps the run's stdout on a private descriptor (fds 1 and 2 point at ``/dev/null``),
is undumpable (no ``/proc/<pid>/fd`` or ``mem`` for the tests' processes), and as PID 1 of the run's
namespace cannot be killed or stopped by them. It forwards each child's output, as data, in one
line framed by the nonce; GEM's process decides.
"""

import json as _sv_json
import os as _sv_os
import select as _sv_select
import signal as _sv_signal
import socket as _sv_socket
import subprocess as _sv_subprocess
import sys as _sv_sys
import time as _sv_time

_SV_MAX_RESULT = 1 << 20


def _sv_site_dirs() -> list:
    """The site-packages directories this interpreter imports from (those of its environment, not
    the base installation's)."""
    dirs = []
    for p in _sv_sys.path:
        if p.endswith(("site-packages", "dist-packages")) and p not in dirs and _sv_os.path.isdir(p):
            dirs.append(p)
    return dirs


def _sv_launcher(sock) -> None:
    """The launcher's loop: for each request (a program name, a workspace, an environment, and the
    test's input and result pipes), fork a child that runs the program there."""
    null = _sv_os.open(_sv_os.devnull, _sv_os.O_RDWR)
    for fd in (0, 1, 2):
        _sv_os.dup2(null, fd)
    keep = {sock.fileno(), null, 0, 1, 2}
    for fd in range(3, 1024):
        if fd not in keep:
            try:
                _sv_os.close(fd)
            except OSError:
                pass
    programs = {}
    _sv_signal.signal(_sv_signal.SIGCHLD, _sv_signal.SIG_IGN)  # the kernel reaps the tests' processes
    while True:
        try:
            msg, fds, _flags, _addr = _sv_socket.recv_fds(sock, 1 << 22, 2)
        except OSError:
            _sv_os._exit(0)
        if not msg:
            _sv_os._exit(0)
        request = _sv_json.loads(msg)
        if "programs" in request:
            programs = request["programs"]
            continue
        if len(fds) != 2:
            for fd in fds:
                _sv_os.close(fd)
            sock.send(b'{"pid": 0}')
            continue
        pid = _sv_os.fork()
        if pid == 0:
            try:
                _sv_signal.signal(_sv_signal.SIGCHLD, _sv_signal.SIG_DFL)
                _sv_os.setsid()
                _sv_os.chdir(request["ws"])
                _sv_os.dup2(fds[0], 0)
                _sv_os.dup2(fds[1], 1)
                _sv_os.dup2(null, 2)
                _sv_os.closerange(3, 1 << 16)
                _sv_os.environ.clear()
                _sv_os.environ.update(request["env"])
                code = compile(programs[request["program"]], "<gem-test>", "exec")
                del msg, request, programs
                exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
            finally:
                _sv_os._exit(0)
        for fd in fds:
            _sv_os.close(fd)
        sock.send(_sv_json.dumps({"pid": pid}).encode("ascii"))


def _sv_start_launcher():
    """Fork the launcher (before any input is read); ``(pid, socket)`` or ``None``."""
    try:
        mine, theirs = _sv_socket.socketpair(_sv_socket.AF_UNIX, _sv_socket.SOCK_SEQPACKET)
        pid = _sv_os.fork()
    except OSError:
        return None
    if pid == 0:
        try:
            mine.close()
            _sv_launcher(theirs)
        finally:
            _sv_os._exit(0)
    theirs.close()
    return pid, mine


def _sv_launch(launcher, program: str, ws: str, env: dict):
    """Ask the launcher for a test process: ``(pid, input fd, result fd)``, or ``None`` when the
    launcher does not answer (then it is killed and no longer used)."""
    pid, sock = launcher
    in_r, in_w = _sv_os.pipe()
    out_r, out_w = _sv_os.pipe()
    try:
        _sv_socket.send_fds(sock, [_sv_json.dumps({"program": program, "ws": ws, "env": env}).encode("utf-8")],
                            [in_r, out_w])
        ready, _, _ = _sv_select.select([sock], [], [], 5.0)
        reply = _sv_json.loads(sock.recv(4096)) if ready else {}
        child = int(reply.get("pid", 0))
    except (OSError, ValueError, TypeError, AttributeError):
        child = 0
    finally:
        _sv_os.close(in_r)
        _sv_os.close(out_w)
    if child <= 0:
        _sv_os.close(in_w)
        _sv_os.close(out_r)
        try:
            _sv_os.kill(pid, _sv_signal.SIGKILL)
        except OSError:
            pass
        return None
    return child, in_w, out_r


def _sv_kill_rest(pgid: int, spare: int) -> None:
    """Kill what the test left running: its process group, and as PID 1 every process but the
    launcher (``spare``); reap what ended."""
    deadline = _sv_time.monotonic() + 2.0
    while True:
        alive = False
        try:
            _sv_os.killpg(pgid, _sv_signal.SIGKILL)
            alive = True
        except OSError:
            pass
        if _gem.get("kill_all") and _sv_os.getpid() == 1:
            for name in _sv_os.listdir("/proc"):
                if name.isdigit() and int(name) not in (1, spare):
                    try:
                        _sv_os.kill(int(name), _sv_signal.SIGKILL)
                        alive = True
                    except OSError:
                        pass
        elif _gem.get("kill_all") and not spare:
            try:
                _sv_os.kill(-1, _sv_signal.SIGKILL)
            except OSError:
                pass
        _gem_reap()
        if not alive or _sv_time.monotonic() > deadline:
            return
        _sv_time.sleep(0.001)


def _sv_collect(fd: int, deadline: float) -> tuple:
    """The child's stdout (up to the cap) and ``ok`` / ``timeout`` / ``too_large``."""
    chunks, size = [], 0
    while True:
        left = deadline - _sv_time.monotonic()
        if left <= 0:
            return b"", "timeout"
        ready, _, _ = _sv_select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = _sv_os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks), "ok"
        size += len(chunk)
        if size > _SV_MAX_RESULT:
            return b"", "too_large"
        chunks.append(chunk)


def _sv_main() -> None:
    try:
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    except (OSError, AttributeError):
        pass
    # As PID 1 of the run's namespace only signals with a handler reach this process: drop Python's.
    _sv_signal.signal(_sv_signal.SIGINT, _sv_signal.SIG_DFL)
    launcher = _sv_start_launcher()  # first: its memory must never hold what stdin carries
    data = _sv_sys.stdin.buffer.read()
    null = _sv_os.open(_sv_os.devnull, _sv_os.O_RDWR)
    _sv_os.dup2(null, 0)
    hlen = int.from_bytes(data[:8], "little")
    header = _sv_json.loads(data[8:8 + hlen])
    tlen = int.from_bytes(data[8 + hlen:16 + hlen], "little")
    tar = data[16 + hlen:16 + hlen + tlen]
    nonce = data[16 + hlen + tlen:].decode("ascii").strip()
    del data
    _sv_sys.stdout.flush()
    channel = _sv_os.dup(1)  # not inheritable
    _sv_os.dup2(null, 1)
    _sv_os.dup2(null, 2)

    def emit(record: dict) -> None:
        line = (nonce + " " + _sv_json.dumps(record) + "\n").encode("utf-8", "replace")
        while line:
            line = line[_sv_os.write(channel, line):]

    _gem.update(kill_all=bool(_gem_may_kill_all()))
    paths = _sv_site_dirs()
    if launcher is not None:
        try:
            launcher[1].send(_sv_json.dumps({"programs": header["programs"]}).encode("utf-8"))
        except OSError:
            launcher = None
    home = _sv_os.getcwd()
    timeout = float(header.get("test_timeout", 30))
    emit({"start": len(header["tests"])})
    for i, test in enumerate(header["tests"]):
        ws = _sv_os.path.join(home, f"workspace{i}")
        scratch = ws + ".tmp"
        try:
            _gem_extract(tar, ws)
            _sv_os.makedirs(scratch, exist_ok=True)
        except Exception as exc:  # noqa: BLE001 - e.g. a workspace that fills the disk
            emit({"error": f"could not prepare the workspace: {type(exc).__name__}: {exc}"})
            return
        child_input = dict(test["input"], paths=paths)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": ws,
               "TMPDIR": scratch}
        deadline = _sv_time.monotonic() + timeout
        started = _sv_launch(launcher, test["program"], ws, env) if launcher is not None else None
        if started is None:
            launcher = None
            try:
                proc = _sv_subprocess.Popen(
                    [_sv_sys.executable, "-I", "-S", "-B", "-c", header["programs"][test["program"]]],
                    stdin=_sv_subprocess.PIPE, stdout=_sv_subprocess.PIPE, stderr=null, cwd=ws, env=env,
                    close_fds=True, start_new_session=True)
            except OSError as exc:
                emit({"i": i, "status": "not_started", "out": f"{type(exc).__name__}: {exc}"})
                continue
            started = (proc.pid, _sv_os.dup(proc.stdin.fileno()), _sv_os.dup(proc.stdout.fileno()))
            proc.stdin.close()
            proc.stdout.close()
        pid, in_w, out_r = started
        try:
            payload = _sv_json.dumps(child_input).encode("utf-8")
            while payload:
                payload = payload[_sv_os.write(in_w, payload):]
        except OSError:
            pass
        _sv_os.close(in_w)
        out, status = _sv_collect(out_r, deadline)
        _sv_os.close(out_r)
        _sv_kill_rest(pid, launcher[0] if launcher is not None else 0)
        emit({"i": i, "status": status, "out": out.decode("utf-8", "replace")})
        for done in (ws, scratch):
            if _sv_os.path.isdir(done):
                _sv_os.chmod(done, 0o700)
                _gem_wipe(done)
    emit({"done": True})


_sv_main()
