"""The repository-test supervisor. Runs INSIDE a fresh sandbox run, never in GEM's process, and
never imports the repository's code.

:mod:`gem.envs.swe.grading` sends this file's source (after :mod:`gem.tools._shell_runtime`, whose
archive and clean-up helpers it uses) as the program; on stdin: a header (for each test, the input
of its child process: its own test source, or the id and report key of a pytest test), the
workspace as a tar (hidden tests already laid over it), and last a random nonce. No expected value
is ever sent here: GEM's process keeps them and compares.

Per test, in order:

* a fresh copy of the workspace;
* a new interpreter (``python -I -S -B``, so no ``sitecustomize``, ``usercustomize``, ``.pth`` or
  environment variable of the workspace runs) started with ``exec``, never forked from this
  process with its memory: it holds nothing but its own input. Its fds are 0 (its input, then
  ``/dev/null``), 1 (a pipe only this test's result travels on) and 2 (``/dev/null``);
* after it ends or its time is up, every process left is killed (as PID 1 of the run's namespace,
  ``kill(-1)``), and the copy wiped.

This process keeps the run's stdout on a private descriptor (fds 1 and 2 point at ``/dev/null``),
is undumpable (no ``/proc/<pid>/fd`` or ``mem`` for the tests' processes), and as PID 1 of the run's
namespace cannot be killed or stopped by them. It forwards each child's output, as data, in one
line framed by the nonce; GEM's process decides.
"""

import json as _sv_json
import os as _sv_os
import select as _sv_select
import signal as _sv_signal
import subprocess as _sv_subprocess
import sys as _sv_sys
import time as _sv_time

_SV_MAX_RESULT = 1 << 20


def _sv_site_dirs() -> list:
    try:
        import site

        dirs = list(site.getsitepackages())
    except Exception:  # noqa: BLE001 - a virtualenv's old site.py
        dirs = []
    dirs += [p for p in _sv_sys.path if p.endswith(("site-packages", "dist-packages")) and p not in dirs]
    return [d for d in dirs if _sv_os.path.isdir(d)]


def _sv_collect(proc, deadline: float) -> tuple:
    """The child's stdout (up to the cap) and ``ok`` / ``timeout`` / ``too_large``."""
    fd = proc.stdout.fileno()
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
        try:
            proc = _sv_subprocess.Popen(
                [_sv_sys.executable, "-I", "-S", "-B", "-c", header["programs"][test["program"]]],
                stdin=_sv_subprocess.PIPE, stdout=_sv_subprocess.PIPE, stderr=null, cwd=ws, env=env,
                close_fds=True, start_new_session=True)
        except OSError as exc:
            emit({"i": i, "status": "not_started", "out": f"{type(exc).__name__}: {exc}"})
            continue
        try:
            proc.stdin.write(_sv_json.dumps(child_input).encode("utf-8"))
            proc.stdin.close()
        except OSError:
            pass
        out, status = _sv_collect(proc, deadline)
        proc.stdout.close()
        _gem_cleanup(proc.pid)
        try:
            proc.wait(timeout=0)
        except Exception:  # noqa: BLE001 - reaped by the clean-up already
            pass
        emit({"i": i, "status": status, "out": out.decode("utf-8", "replace")})
        for done in (ws, scratch):
            if _sv_os.path.isdir(done):
                _sv_os.chmod(done, 0o700)
                _gem_wipe(done)
    emit({"done": True})


_sv_main()
