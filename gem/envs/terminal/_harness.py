"""The verification harness. Runs INSIDE a fresh sandbox run, never in GEM's process.

:mod:`gem.envs.terminal.verify` sends this file's source (after :mod:`gem.sandbox._shell_runtime`,
whose archive helpers it uses) as the program, and on stdin: a header (the tests, which the
agent's session never received), the agent's workspace as a tar, and last a random nonce.

Trust boundary, in order:

* the harness makes itself undumpable (no ptrace, no ``/proc/<pid>/mem`` or ``/fd`` for other
  processes of its uid), reads all of stdin and closes it;
* it keeps the only descriptor of the run's stdout for itself and points fds 1 and 2 at
  ``/dev/null``: every process it starts inherits those, so nothing the agent wrote can print to
  the channel the verdicts travel on; each verdict line also starts with the nonce;
* each test runs in a forked child (undumpable too, as a fork) that reports through a pipe of its
  own; the agent's programs are started by the checks as subprocesses, which cannot reach the
  checker's memory or descriptors. After each test everything left running is killed;
* verdicts stream out one line per test, so a harness killed half-way (the agent's program can
  signal it) yields the verdicts so far; the rest count as failed on the host side;
* checks import nothing from a place the agent's programs can write: before any workspace is
  unpacked, the run's directory, the temporary directories and any relative entry leave ``sys.path`` (the
  sandbox starts Python isolated: no ``PYTHONPATH``, no user site);
* the task's starting files (the pristine inputs) arrive separately from the workspace and stay
  in this process's memory: checks read them with ``original(path)``, and before any test runs,
  every input the task does not declare mutable must be in the workspace unchanged (content,
  type and mode), or every test fails.

Run as ``python3 -I gem_runner.py --harbor TESTS_DIR LOGS_DIR`` in a workspace (an exported
Harbor task's ``tests/test.sh`` does), the same code grades that workspace and writes Harbor's
``reward.txt`` and ``reward.json``.
"""

import sys as _gem_sys
import os as _gem_os


def _gem_isolate_imports() -> None:
    """Keep on ``sys.path`` only absolute entries outside every directory the agent's programs
    can write (this run's directory, HOME, the temporary directories)."""
    unsafe = [_gem_os.getcwd(), "/tmp", "/var/tmp", "/dev/shm", _gem_os.environ.get("HOME"),
              _gem_os.environ.get("TMPDIR")]
    roots = {_gem_os.path.realpath(p).rstrip("/") for p in unsafe if p}
    roots.discard("")
    keep = []
    for entry in _gem_sys.path:
        if not entry or not _gem_os.path.isabs(entry):
            continue
        real = _gem_os.path.realpath(entry)
        if any(real == r or real.startswith(r + "/") for r in roots):
            continue
        keep.append(entry)
    _gem_sys.path[:] = keep
    _gem_sys.path_importer_cache.clear()
    _gem_sys.dont_write_bytecode = True


_gem_isolate_imports()

import base64  # noqa: E402
import io as _gem_io  # noqa: E402
import json as _gem_json  # noqa: E402
import math as _gem_math  # noqa: E402
import select as _gem_select  # noqa: E402
import subprocess as _gem_subprocess  # noqa: E402
import tarfile as _gem_tarfile  # noqa: E402
import tempfile as _gem_tempfile  # noqa: E402
import time as _gem_time  # noqa: E402
import traceback as _gem_traceback  # noqa: E402

_GEM_FIXED_PATH = "/usr/local/bin:/usr/bin:/bin"
_gem_pristine: dict = {}  # the task's starting files: path -> (bytes, mode); filled before any test


class _GemCheckFailure(AssertionError):
    pass


def _gem_helpers(ws: str, default_timeout: float) -> dict:
    """What a check's module sees besides the builtins."""

    scratch = ws + ".tmp"  # mktemp & co. (outside the workspace, per test)
    _gem_os.makedirs(scratch, exist_ok=True)

    def resolve(path: str) -> str:
        full = _gem_os.path.join(ws, path)
        if not _gem_inside(ws, full):
            raise _GemCheckFailure(f"{path} is outside the workspace (a link pointing out of it?)")
        return full

    def sh(command: str, input=None, timeout: float = default_timeout, cwd: str = ".", env=None):
        """Run ``command`` in bash in the workspace; a CompletedProcess with text output."""
        environ = {"PATH": _GEM_FIXED_PATH, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": ws,
                   "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": scratch}
        environ.update(env or {})
        try:
            return _gem_subprocess.run(
                ["bash", "--noprofile", "--norc", "-c", command], cwd=resolve(cwd), input=input,
                capture_output=True, text=True, errors="replace", timeout=timeout, env=environ,
                start_new_session=True,
            )
        except _gem_subprocess.TimeoutExpired:
            raise _GemCheckFailure(f"`{command[:80]}` did not finish within {timeout:g} s")

    def read_bytes(path: str) -> bytes:
        full = resolve(path)
        if not _gem_os.path.isfile(full):
            raise _GemCheckFailure(f"{path} does not exist or is not a file")
        with open(full, "rb") as fh:
            return fh.read(64 << 20)

    def read(path: str) -> str:
        return read_bytes(path).decode("utf-8", "replace")

    def lines(path: str) -> list:
        return read(path).splitlines()

    def exists(path: str) -> bool:
        full = _gem_os.path.join(ws, path)
        return _gem_os.path.lexists(full) and _gem_inside(ws, full)

    def is_file(path: str) -> bool:
        return exists(path) and _gem_os.path.isfile(resolve(path))

    def is_dir(path: str) -> bool:
        return exists(path) and _gem_os.path.isdir(resolve(path))

    def mode(path: str) -> int:
        full = _gem_os.path.join(ws, path)
        if not _gem_os.path.lexists(full):
            raise _GemCheckFailure(f"{path} does not exist")
        return _gem_os.lstat(full).st_mode & 0o7777

    def listdir(path: str = ".") -> list:
        full = resolve(path)
        if not _gem_os.path.isdir(full):
            raise _GemCheckFailure(f"{path} is not a directory")
        return sorted(_gem_os.listdir(full))

    def original_bytes(path: str) -> bytes:
        """A starting file of the task as the task defines it (never the agent's copy)."""
        key = _gem_os.path.normpath(path).lstrip("/")
        if key not in _gem_pristine:
            raise _GemCheckFailure(f"{path} is not one of the task's starting files")
        return _gem_pristine[key][0]

    def original(path: str) -> str:
        return original_bytes(path).decode("utf-8", "replace")

    def original_lines(path: str) -> list:
        return original(path).splitlines()

    def raises(exc_type, fn, *args, **kwargs):
        try:
            fn(*args, **kwargs)
        except exc_type:
            return True
        raise _GemCheckFailure(f"{getattr(fn, '__name__', fn)} did not raise {exc_type.__name__}")

    return {"WS": ws, "sh": sh, "read": read, "read_bytes": read_bytes, "lines": lines, "exists": exists,
            "is_file": is_file, "is_dir": is_dir, "mode": mode, "listdir": listdir, "raises": raises,
            "original": original, "original_bytes": original_bytes, "original_lines": original_lines,
            "os": _gem_os, "json": _gem_json, "__name__": "gem_checks"}


def _gem_run_check(header: dict, test: dict, ws: str) -> dict:
    """In the forked child: run one test; ``{"passed": bool, "detail": str}``."""
    kind = header["kind"]
    if kind == "checks":
        namespace = _gem_helpers(ws, float(header.get("command_timeout", 10)))
        _gem_os.chdir(ws)
        import linecache

        source = header["source"]
        linecache.cache["checks.py"] = (len(source), None, source.splitlines(True), "checks.py")
        exec(compile(source, "checks.py", "exec"), namespace)
        namespace[test["name"]]()
        return {"passed": True}
    if kind == "unit":
        return _gem_run_unit(test["name"], ws, header.get("runner", "gem"))
    if kind == "script":
        return _gem_run_script(header, ws)
    raise ValueError(f"unknown test kind {kind!r}")


def _gem_run_unit(test_id: str, ws: str, runner: str) -> dict:
    """A unit test named like pytest names it (``path.py::func`` or ``path.py::Class::method``).

    ``runner="gem"`` imports the file and calls the test in this process, without pytest (a
    ``pytest`` module in the workspace never replaces the installed one);
    ``runner="pytest"`` runs ``python -m pytest <id>`` in the workspace.
    """
    _gem_os.chdir(ws)
    if runner == "pytest":
        proc = _gem_subprocess.run(
            [_gem_sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", test_id],
            cwd=ws, capture_output=True, text=True, errors="replace",
            env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": ws, "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"},
        )
        return {"passed": proc.returncode == 0, "detail": (proc.stdout + proc.stderr)[-800:]}
    if any(_gem_os.path.lexists(_gem_os.path.join(ws, n)) for n in ("pytest.py", "pytest", "_pytest")):
        try:  # the real one first, so the workspace's cannot stand in for it
            import pytest  # noqa: F401
        except ImportError:
            pass
    _gem_sys.path.insert(0, ws)
    _gem_sys.dont_write_bytecode = True
    path, _, rest = test_id.partition("::")
    parts = rest.split("::") if rest else []
    if not parts or "[" in test_id:
        raise ValueError(f"test id {test_id!r} needs runner='pytest' (parametrized or no test name)")
    import importlib.util

    full = _gem_os.path.join(ws, path)
    if not _gem_inside(ws, full) or not _gem_os.path.isfile(full):
        raise FileNotFoundError(f"no test file {path}")
    spec = importlib.util.spec_from_file_location("gem_test_module", full)
    module = importlib.util.module_from_spec(spec)
    _gem_sys.modules["gem_test_module"] = module
    spec.loader.exec_module(module)
    obj = getattr(module, parts[0])
    if len(parts) == 1:
        obj()
        return {"passed": True}
    import unittest

    if isinstance(obj, type) and issubclass(obj, unittest.TestCase):
        result = unittest.TestResult()
        obj(parts[1]).run(result)
        problems = result.failures + result.errors
        if problems or result.skipped or not result.testsRun:
            return {"passed": False, "detail": (problems[0][1] if problems else "skipped")[-800:]}
        return {"passed": True}
    instance = obj()
    if hasattr(instance, "setup_method"):
        instance.setup_method(getattr(instance, parts[1]))
    getattr(instance, parts[1])()
    return {"passed": True}


def _gem_run_script(header: dict, ws: str) -> dict:
    """A Harbor / Terminal-Bench ``tests/test.sh``: its reward file decides (see the docs' caveat)."""
    home = _gem_os.path.dirname(ws)
    tests_dir = _gem_os.path.join(home, "tests")
    logs = _gem_os.path.join(home, "logs", "verifier")
    _gem_os.makedirs(logs, exist_ok=True)
    _gem_extract(base64.b64decode(header["tests_tar"]), tests_dir)
    verifier_home = _gem_os.path.join(home, "verifier-home")
    _gem_os.makedirs(verifier_home, exist_ok=True)
    # A fixed PATH without the workspace; Python started from the script imports nothing from the
    # workspace (no cwd or script directory on its path, no user site, no PYTHONPATH).
    env = {"PATH": _GEM_FIXED_PATH, "LANG": "C.UTF-8", "HOME": verifier_home, "TEST_DIR": tests_dir,
           "REWARD_FILE": _gem_os.path.join(logs, "reward.txt"), "LOGS_DIR": logs, "WORKSPACE": ws,
           "PYTHONSAFEPATH": "1", "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    proc = _gem_subprocess.run(["bash", _gem_os.path.join(tests_dir, "test.sh")], cwd=ws, env=env,
                               capture_output=True, text=True, errors="replace")
    # What the script's programs left running could still write the reward file: gone first.
    _gem_kill_descendants()
    score = None
    for name in ("reward.txt", "reward.json"):
        path = _gem_os.path.join(logs, name)
        if _gem_os.path.isfile(path) and not _gem_os.path.islink(path):
            with open(path) as fh:
                text = fh.read(1000).strip()
            try:
                value = _gem_json.loads(text) if name.endswith("json") else float(text)
                score = float(value["reward"] if isinstance(value, dict) else value)
            except OverflowError:
                score = float("inf")
            except (ValueError, KeyError, TypeError):
                score = None
            break
    if score is not None and not _gem_math.isfinite(score):  # inf, nan: no verdict, never a pass
        return {"passed": False, "ungraded": f"the reward file holds {score!r}, not a finite number",
                "detail": (proc.stdout + proc.stderr)[-800:]}
    if score is None:  # no reward file: the exit status decides, as Terminal-Bench's run-tests.sh
        score = 1.0 if proc.returncode == 0 else 0.0
    score = min(1.0, max(0.0, score))
    return {"passed": score >= 1.0, "score": score, "detail": (proc.stdout + proc.stderr)[-800:]}


def _gem_child(header: dict, test: dict, ws: str, report_fd: int) -> None:
    try:
        _gem_os.setsid()
        _gem_undumpable()
        for fd in range(3, 1024):
            if fd != report_fd:
                try:
                    _gem_os.close(fd)
                except OSError:
                    pass
        result = _gem_run_check(header, test, ws)
    except BaseException as exc:  # noqa: BLE001 - a failing test is a result
        if isinstance(exc, AssertionError):
            detail = f"AssertionError: {exc}" if str(exc) else "AssertionError"
            tb = _gem_traceback.extract_tb(exc.__traceback__)
            if tb and not str(exc):
                detail += f" at line {tb[-1].lineno}: {tb[-1].line}"
        else:
            detail = f"{type(exc).__name__}: {exc}"
        result = {"passed": False, "detail": detail.replace(ws + "/", "").replace(ws, ".")[-800:]}
    try:
        _gem_os.write(report_fd, _gem_json.dumps(result).encode("utf-8", "replace")[:8000])
    finally:
        _gem_os._exit(0)


def _gem_wait(pid: int, read_fd: int, timeout: float) -> dict:
    deadline = _gem_time.monotonic() + timeout
    chunks = []
    timed_out = False
    while True:
        left = deadline - _gem_time.monotonic()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = _gem_select.select([read_fd], [], [], left)
        if not ready:
            continue
        chunk = _gem_os.read(read_fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    _gem_os.close(read_fd)
    _gem_cleanup(pid)
    _gem_kill_descendants()
    if timed_out:
        return {"passed": False, "detail": f"the test did not finish within {timeout:g} s"}
    try:
        result = _gem_json.loads(b"".join(chunks).decode("utf-8", "replace"))
        if not isinstance(result, dict):
            raise ValueError
    except ValueError:
        return {"passed": False, "detail": "the test process ended without a result"}
    return {"passed": result.get("passed") is True, "score": result.get("score"),
            "detail": str(result.get("detail", ""))[:800],
            **({"ungraded": str(result["ungraded"])[:300]} if result.get("ungraded") else {})}


def _gem_load_pristine(data: bytes) -> None:
    """Keep the task's starting files (a tar) in memory, for ``original()`` and the input check."""
    _gem_pristine.clear()
    if not data:
        return
    with _gem_tarfile.open(fileobj=_gem_io.BytesIO(data), mode="r:") as tar:
        for member in tar:
            if member.isfile():
                fh = tar.extractfile(member)
                key = _gem_os.path.normpath(member.name).lstrip("/")
                _gem_pristine[key] = (fh.read() if fh is not None else b"", member.mode & 0o777)


def _gem_changed_inputs(workspace_tar: bytes, protected: list) -> list:
    """What happened to each protected starting file that is not in the workspace as it was."""
    wanted = {_gem_os.path.normpath(p).lstrip("/") for p in protected}
    found = {}
    with _gem_tarfile.open(fileobj=_gem_io.BytesIO(workspace_tar), mode="r:") as tar:
        for member in tar:
            key = _gem_os.path.normpath(member.name).lstrip("/")
            if key in wanted:
                fh = tar.extractfile(member) if member.isfile() else None
                found[key] = (member, fh.read() if fh is not None else None)
    problems = []
    for path in sorted(wanted):
        if path not in _gem_pristine:
            continue
        data, mode = _gem_pristine[path]
        if path not in found:
            problems.append(f"{path} was removed")
            continue
        member, got = found[path]
        if not member.isfile():
            problems.append(f"{path} is no longer a regular file")
        elif got != data:
            problems.append(f"{path} was changed")
        elif member.mode & 0o777 != mode:
            problems.append(f"{path}'s mode changed from {oct(mode)} to {oct(member.mode & 0o777)}")
    return problems


def _gem_grade(header: dict, tar: bytes, inputs: bytes, emit) -> None:
    """Run every test of ``header`` on its own copy of the workspace ``tar``; ``emit`` each verdict."""

    def prepare(ws: str) -> None:
        """A fresh copy of the workspace for one test, hidden files (SWE tests) laid over it."""
        _gem_extract(tar, ws)
        for rel, content in header.get("overlay", {}).items():
            target = _gem_os.path.join(ws, rel)
            _gem_os.makedirs(_gem_os.path.dirname(target), exist_ok=True)
            if not _gem_inside(ws, _gem_os.path.dirname(target)):
                raise ValueError(f"cannot place {rel}: a parent is a link out of the workspace")
            if _gem_os.path.lexists(target):
                if _gem_os.path.isdir(target) and not _gem_os.path.islink(target):
                    _gem_wipe(target)
                    _gem_os.rmdir(target)
                else:
                    _gem_os.unlink(target)
            with open(target, "w", encoding="utf-8") as fh:
                fh.write(content)

    _gem.update(kill_all=bool(_gem_may_kill_all()))
    try:
        _gem_load_pristine(inputs)
        changed = _gem_changed_inputs(tar, header.get("protected", []))
    except (_gem_tarfile.TarError, OSError, ValueError) as exc:
        emit({"error": f"could not read the workspace or the task's inputs: {type(exc).__name__}: {exc}"})
        return
    emit({"start": len(header["tests"])})
    if changed:
        shown = "; ".join(changed[:5]) + (f"; and {len(changed) - 5} more" if len(changed) > 5 else "")
        detail = f"starting files this task does not allow changing were changed: {shown}"
        for test in header["tests"]:
            emit({"test": test["name"], "passed": False, "detail": detail})
        emit({"done": True})
        return
    for i, test in enumerate(header["tests"]):
        # Each test gets its own copy in a directory made for it (a name no earlier test could
        # predict, and that cannot exist before): what one test's programs change or plant next
        # to their workspace, the next does not see.
        test_dir = _gem_tempfile.mkdtemp(prefix=f"test{i}-", dir=_gem_os.getcwd())
        ws = _gem_os.path.join(test_dir, "workspace")
        try:
            prepare(ws)
        except Exception as exc:  # noqa: BLE001 - e.g. a workspace that fills the disk
            emit({"error": f"could not prepare the workspace: {type(exc).__name__}: {exc}"})
            return
        read_fd, write_fd = _gem_os.pipe()
        pid = _gem_os.fork()
        if pid == 0:
            _gem_os.close(read_fd)
            for fd in header.get("_close_in_child", ()):
                try:
                    _gem_os.close(fd)
                except OSError:
                    pass
            _gem_child(header, test, ws, write_fd)
        _gem_os.close(write_fd)
        result = _gem_wait(pid, read_fd, float(header.get("test_timeout", 20)))
        result["test"] = test["name"]
        emit(result)
        _gem_remove_tree(test_dir)
    emit({"done": True})


def _gem_remove_tree(root: str) -> None:
    """Remove ``root`` and everything under it (read-only directories too, links never followed)."""
    try:
        _gem_os.chmod(root, 0o700)
        _gem_wipe(root)
        _gem_os.rmdir(root)
    except OSError:
        pass


def _gem_undumpable() -> None:
    """No ptrace, no ``/proc/<pid>/mem`` or ``/fd`` for other processes of this uid; and become a
    child subreaper: whatever a test's programs leave running (double-forked, in a session of
    its own) stays a descendant of this process, so :func:`_gem_kill_descendants` finds it."""
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER = 1
    except (OSError, AttributeError):
        pass


def _gem_descendants(root: int) -> list:
    """The live (not zombie) processes below ``root``, from ``/proc``."""
    children: dict = {}
    try:
        names = _gem_os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                fields = fh.read().rpartition(b")")[2].split()
        except OSError:
            continue
        if len(fields) > 1 and fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(name))
    found, todo = [], [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            found.append(pid)
            todo.append(pid)
    return found


def _gem_kill_descendants(limit: float = 2.0) -> None:
    """Kill every process below this one (what a test's programs left running, wherever it went:
    a new session, a double fork) and reap what comes back to this subreaper; at most ``limit`` s."""
    deadline = _gem_time.monotonic() + limit
    while True:
        found = _gem_descendants(_gem_os.getpid())
        for pid in found:
            try:
                _gem_os.kill(pid, 9)
            except OSError:
                pass
        _gem_reap()
        if not found or _gem_time.monotonic() > deadline:
            return
        _gem_time.sleep(0.002)


def _gem_harness_main() -> None:
    """stdin: header length, header, workspace tar length, tar, [inputs length, inputs], nonce."""
    _gem_undumpable()
    data = _gem_sys.stdin.buffer.read()
    null = _gem_os.open(_gem_os.devnull, _gem_os.O_RDWR)
    _gem_os.dup2(null, 0)
    hlen = int.from_bytes(data[:8], "little")
    header = _gem_json.loads(data[8:8 + hlen])
    at = 8 + hlen
    tlen = int.from_bytes(data[at:at + 8], "little")
    tar = data[at + 8:at + 8 + tlen]
    at += 8 + tlen
    inputs = b""
    if header.get("inputs"):
        ilen = int.from_bytes(data[at:at + 8], "little")
        inputs = data[at + 8:at + 8 + ilen]
        at += 8 + ilen
    nonce = data[at:].decode("ascii").strip()
    del data
    # The verdict channel: this process's private copy of stdout. Everything started from here
    # gets /dev/null as fds 1 and 2.
    _gem_sys.stdout.flush()
    channel = _gem_os.dup(1)
    _gem_os.dup2(null, 1)
    _gem_os.dup2(null, 2)
    _gem_os.close(null)
    header["_close_in_child"] = [channel]

    def emit(record: dict) -> None:
        line = (nonce + " " + _gem_json.dumps(record) + "\n").encode("utf-8", "replace")
        _gem_os.write(channel, line)

    _gem_grade(header, tar, inputs, emit)


def _gem_harbor_main(argv: list) -> int:
    """Grade the current directory (an exported task's workspace) with the checks in ``TESTS_DIR``;
    write Harbor's ``reward.txt`` (the share of tests passed) and ``reward.json`` (that reward and
    one entry per test) to ``LOGS_DIR``; print each verdict."""
    import shutil
    import tempfile

    _gem_undumpable()
    tests_dir, logs = (_gem_os.path.abspath(a) for a in argv[:2])
    # Fail closed: a reward of 0 stands until the verdicts replace it, so a runner stopped early
    # (killed, out of processes) never leaves a reward file someone else wrote in its place.
    _gem_write_fresh(logs, "reward.json", _gem_json.dumps({"reward": 0.0}))
    _gem_write_fresh(logs, "reward.txt", "0.0\n")
    workspace = _gem_os.getcwd()
    with open(_gem_os.path.join(tests_dir, "gem_task.json"), encoding="utf-8") as fh:
        spec = _gem_json.load(fh)
    with open(_gem_os.path.join(tests_dir, "gem_checks.py"), encoding="utf-8") as fh:
        source = fh.read()
    with open(_gem_os.path.join(tests_dir, "gem_inputs.tar"), "rb") as fh:
        inputs = fh.read()
    header = {"kind": "checks", "source": source, "tests": [{"name": n} for n in spec["tests"]],
              "test_timeout": spec.get("test_timeout", 20), "command_timeout": spec.get("test_timeout", 20),
              "protected": spec.get("protected", [])}
    records = []
    work = tempfile.mkdtemp(prefix="gem-verify-")
    try:
        try:
            tar, skipped = _gem_export(workspace, int(spec.get("export_limit", 32 << 20)))
        except (OSError, OverflowError) as exc:
            tar, skipped = None, [f"the workspace could not be exported: {exc}"]
        for note in skipped:
            print(f"not exported: {note}")
        if tar is not None:
            _gem_os.chdir(work)
            _gem_grade(header, tar, inputs, records.append)
    finally:
        _gem_os.chdir(workspace)
        shutil.rmtree(work, ignore_errors=True)
    verdicts = {r["test"]: r for r in records if "test" in r}
    errors = [r["error"] for r in records if "error" in r]
    for message in errors:
        print(f"error: {message}")
    passed = [n for n in spec["tests"] if verdicts.get(n, {}).get("passed") is True]
    reward = len(passed) / len(spec["tests"]) if spec["tests"] and not errors else 0.0
    for name in spec["tests"]:
        rec = verdicts.get(name, {"detail": "no verdict"})
        mark = "PASS" if name in passed else "FAIL"
        print(f"[{mark}] {name}" + ("" if name in passed else f" - {str(rec.get('detail', ''))[:300]}"))
    metrics = {"reward": reward, "tests_passed": float(len(passed)), "tests_total": float(len(spec["tests"]))}
    for name in spec["tests"]:
        metrics[name] = 1.0 if name in passed else 0.0
    _gem_write_fresh(logs, "reward.json", _gem_json.dumps(metrics))
    _gem_write_fresh(logs, "reward.txt", f"{reward}\n")
    print(f"reward: {reward}")
    return 0


def _gem_write_fresh(directory: str, name: str, text: str) -> None:
    """Write ``directory/name`` as a new file, whatever stood there (a file made read-only, a
    directory, a link: the checks' programs could have left one, with a reward in it)."""
    import shutil

    _gem_os.makedirs(directory, exist_ok=True)
    _gem_os.chmod(directory, _gem_os.stat(directory).st_mode | 0o700)
    path = _gem_os.path.join(directory, name)
    if _gem_os.path.isdir(path) and not _gem_os.path.islink(path):
        shutil.rmtree(path)
    elif _gem_os.path.lexists(path):
        _gem_os.unlink(path)
    fd = _gem_os.open(path, _gem_os.O_WRONLY | _gem_os.O_CREAT | _gem_os.O_EXCL, 0o644)
    with _gem_os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


if len(_gem_sys.argv) > 1 and _gem_sys.argv[1] == "--harbor":
    _gem_sys.exit(_gem_harbor_main(_gem_sys.argv[2:]))
else:
    _gem_harness_main()
