"""Attacks on the sandbox's isolation, each asserting containment.

Every test runs hostile code through :class:`gem.sandbox.Sandbox` and checks from the host
that the attack did not reach anything outside the run: other runs (concurrent or later), the
worker, the host's processes and files, GEM's data. The non-root path is exercised for real by a
Python started as uid 65534.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import pytest

import gem
from gem.sandbox import _zygote as _sandbox_zygote
from gem.sandbox import Sandbox, SandboxError, SandboxLimits

IS_ROOT = os.geteuid() == 0
GEM_DIR = os.path.dirname(os.path.abspath(gem.__file__))
CHECKOUT = os.path.dirname(GEM_DIR)


def _ways_to_the_interpreter() -> set[tuple[str, str]]:
    """(directory, entry) pairs that lead to this interpreter's prefix.

    Runs must import the standard library and site-packages, so where a venv lives inside a hidden
    directory or under /tmp (a CI checkout's venv), the sandbox binds it back at its own path and
    its parent directories show that one entry, nothing else.
    """
    ways = set()
    for prefix in {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}:
        parent, name = os.path.split(prefix)
        while name:
            ways.add((parent, name))
            parent, name = os.path.split(parent)
    return ways
SETPRIV_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
needs_root = pytest.mark.skipif(not IS_ROOT, reason="the test switches uids / reads other users' processes")


@pytest.fixture(scope="module")
def sb():
    box = Sandbox(SandboxLimits(timeout=10), slots=16, tmp_mb=16, tmp_inodes=2048)
    try:
        assert box.run("pass").ok
        yield box
    finally:
        box.close()


@pytest.fixture(scope="module")
def one_slot():
    """Every run lands in the same slot, so it reuses what the sandbox pools per slot."""
    box = Sandbox(slots=1, prefork=1)
    try:
        yield box
    finally:
        box.close()


@pytest.fixture
def public_tmp():
    """A directory any user can read (pytest's tmp_path is private to root)."""
    import pathlib

    path = tempfile.mkdtemp(dir="/var/tmp")
    os.chmod(path, 0o755)
    try:
        yield pathlib.Path(path)
    finally:
        shutil.rmtree(path)


def _concurrently(*calls):
    """Run the callables in threads; return their results in order."""
    results = [None] * len(calls)

    def work(i, fn):
        results[i] = fn()

    threads = [threading.Thread(target=work, args=(i, fn)) for i, fn in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def _comm_pids(name: str) -> list[int]:
    """Host pids of live (non-zombie) processes whose name is ``name``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as fh:
                head, tail = fh.read().rsplit(")", 1)
        except OSError:
            continue
        if head.split("(", 1)[1] == name and tail.split()[0] != "Z":
            found.append(int(pid))
    return found


def _wait_gone(name: str, seconds: float = 5.0) -> list[int]:
    end = time.monotonic() + seconds
    while _comm_pids(name) and time.monotonic() < end:
        time.sleep(0.05)
    return _comm_pids(name)


SET_NAME = "import ctypes\nctypes.CDLL(None).prctl(15, {name!r}.encode(), 0, 0, 0)\n"  # PR_SET_NAME


# ------------------------------------------------------------------ System V IPC
def test_sysv_ipc_is_refused_and_leaves_nothing(sb, one_slot):
    """System V objects and their id counters would live on in the slot's pooled IPC namespace
    (an id handed out later tells how many were made before): the filter refuses every call."""
    key = 0x5E0000 + os.getpid() % 0xFFFF
    plant = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "out = []\n"
        f"for name, args in (('shmget', ({key}, 4096, 0o1666)), ('msgget', ({key}, 0o1666)),\n"
        f"                   ('semget', ({key}, 1, 0o1666)), ('shmget', (0, 4096, 0o600)),\n"
        "                   ('shmctl', (0, 0, None)), ('msgctl', (0, 0, None)), ('semctl', (0, 0, 0)),\n"
        "                   ('shmat', (0, None, 0)), ('shmdt', (None,)), ('msgsnd', (0, None, 0, 0)),\n"
        "                   ('msgrcv', (0, None, 0, 0, 0)), ('semop', (0, None, 0)),\n"
        "                   ('semtimedop', (0, None, 0, None))):\n"
        "    ret = getattr(libc, name)(*args)\n"
        "    out.append((name, ret, os.strerror(ctypes.get_errno())))\n"
        "print(out)\n"
        "print(open('/proc/sysvipc/shm').read().count('\\n'), open('/proc/sysvipc/msg').read().count('\\n'),\n"
        "      open('/proc/sysvipc/sem').read().count('\\n'))\n"
    )
    for box in (sb, one_slot):  # a later run of another slot, and of the same slot
        r = box.run(plant)
        assert r.ok, r.stderr
        calls, tables = r.stdout.splitlines()
        for name, ret, err in eval(calls):
            assert ret == -1 and err == "Operation not permitted", (name, ret, err)
        assert tables.split() == ["1", "1", "1"]  # only the tables' headers
    with open("/proc/sysvipc/shm") as fh:  # nor on the host
        assert f"{key:>10}" not in fh.read()


def test_posix_message_queues_are_refused(sb):
    r = sb.run(
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "fd = libc.mq_open(b'/gem-q', 0o100 | 2, 0o600, None)\n"
        "print(fd, os.strerror(ctypes.get_errno()))"
    )
    assert r.stdout.startswith("-1 Operation not permitted"), r.stdout + r.stderr


# ------------------------------------------------------------------ /proc and the host's processes
def test_proc_shows_only_the_run(sb):
    token = f"--token=host-secret-{uuid.uuid4().hex}"
    host = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", token])
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        r = sb.run(
            "import os\n"
            "pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
            "print(pids)\n"
            "blob = ''\n"
            "for p in pids:\n"
            "    for f in ('cmdline', 'environ'):\n"
            "        try:\n"
            "            blob += open(f'/proc/{p}/{f}', 'rb').read().decode(errors='replace')\n"
            "        except OSError:\n"
            "            pass\n"
            "for f in ('tcp', 'tcp6', 'udp', 'unix'):\n"
            "    blob += open(f'/proc/net/{f}').read()\n"
            "print(repr(blob))\n"
        )
        assert r.ok, r.stderr
        assert r.stdout.splitlines()[0] == "[1]"  # itself, pid 1 of its own namespace
        assert "host-secret" not in r.stdout
        assert f":{port:04X}" not in r.stdout  # the host's listening port
        assert "_zygote" not in r.stdout  # not even the worker's command line
    finally:
        host.kill()
        host.wait()
        server.close()


def test_host_pid_1_environment_is_not_reachable(sb):
    r = sb.run(
        "try:\n    print(open('/proc/1/environ', 'rb').read())\n"
        "except PermissionError:\n    print('denied')\n"
        "import os\nprint(os.getpid(), os.getppid())"
    )
    assert r.ok, r.stderr
    env = r.stdout.splitlines()[0]
    assert "GEM_TEST" not in env and "PYTHONPATH" not in env and "HOME=/root" not in env
    assert r.stdout.splitlines()[1] == "1 0"


def test_ptrace_and_process_vm_are_refused(sb):
    r = sb.run(
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "child = os.fork()\n"
        "if child == 0:\n    import time; time.sleep(5); os._exit(0)\n"
        "print(libc.ptrace(16, child, 0, 0), ctypes.get_errno())\n"  # PTRACE_ATTACH
        "print(libc.ptrace(0, 0, 0, 0), ctypes.get_errno())\n"  # PTRACE_TRACEME
        "buf = ctypes.create_string_buffer(8)\n"
        "iov = (ctypes.c_void_p * 2)(ctypes.addressof(buf), 8)\n"
        "print(libc.process_vm_readv(child, iov, 1, iov, 1, 0), ctypes.get_errno())\n"
    )
    assert r.ok, r.stderr
    assert r.stdout.split() == ["-1", "1"] * 3  # EPERM each time


# ------------------------------------------------------------------ namespaces, mounts, kernel interfaces
def test_new_namespaces_and_mounts_are_refused(sb):
    r = sb.run(
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "out = []\n"
        "for flags in (0x10000000, 0x00020000, 0x20000000, 0x40000000, 0x08000000):\n"
        "    out.append((libc.unshare(flags), ctypes.get_errno()))\n"
        "out.append((libc.mount(b'none', b'/tmp', b'tmpfs', 0, None), ctypes.get_errno()))\n"
        "out.append((libc.umount2(b'/proc', 2), ctypes.get_errno()))\n"
        "out.append((libc.setns(os.open('/proc/self/ns/net', 0), 0), ctypes.get_errno()))\n"
        "out.append((libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0), ctypes.get_errno()))\n"  # clone(NEWUSER)
        "out.append((libc.syscall(435, 0, 0), ctypes.get_errno()))\n"  # clone3: ENOSYS
        # bpf, perf_event_open, keyctl, add_key, init/finit_module, reboot, swapon, kexec_load
        "for nr in (321, 298, 250, 248, 175, 313, 169, 167, 246):\n"
        "    out.append((libc.syscall(nr, 0, 0, 0, 0, 0), ctypes.get_errno()))\n"
        "print(out)\n"
    )
    assert r.ok, r.stderr
    got = eval(r.stdout)  # noqa: S307 - a list of int pairs printed by the run
    assert got[:9] == [(-1, 1)] * 9
    assert got[9] == (-1, 38)
    assert got[10:] == [(-1, 1)] * 9


def test_user_namespace_inside_python_is_refused(sb):
    r = sb.run(
        "import subprocess\nprint(subprocess.run(['unshare', '-Ur', 'id'], capture_output=True).returncode)"
    )
    assert r.stdout.strip() != "0"


# ------------------------------------------------------------------ the worker
def test_worker_cannot_be_stopped_or_killed(sb):
    worker = sb._proc.pid
    attack = (
        "import os, signal, time\n"
        "if os.fork() == 0:\n"
        "    end = time.time() + 3\n"
        "    while time.time() < end:\n"
        f"        for pid in ({worker}, -1, 0):\n"
        "            for sig in (signal.SIGSTOP, signal.SIGKILL):\n"
        "                try:\n"
        "                    os.kill(pid, sig)\n"
        "                except OSError:\n"
        "                    pass\n"
        "    os._exit(0)\n"
        "try:\n"
        f"    os.kill({worker}, signal.SIGKILL)\n"
        "except OSError as exc:\n"
        "    print(type(exc).__name__, flush=True)\n"
        "time.sleep(10)\n"
    )

    def others():
        time.sleep(0.3)
        return [sb.run(f"print({i})", timeout=5).stdout for i in range(20)]

    attacked, served = _concurrently(lambda: sb.run(attack, timeout=1.5), others)
    assert attacked.stdout.strip() == "ProcessLookupError"  # the worker is not even visible
    assert served == [f"{i}\n" for i in range(20)]
    with open(f"/proc/{worker}/stat") as fh:
        assert fh.read().rsplit(")", 1)[1].split()[0] != "T"  # not stopped
    assert sb._proc.poll() is None and sb.run("print('alive')").stdout == "alive\n"


def test_fork_bomb_is_contained(sb):
    t = time.monotonic()
    bomb, other = _concurrently(
        lambda: sb.run(
            SET_NAME.format(name="gembomb") + "import os\nwhile True:\n    try:\n        os.fork()\n"
            "    except OSError:\n        pass",
            timeout=2,
            max_processes=32,
        ),
        lambda: (time.sleep(0.5), sb.run("import os\nprint(os.fork() >= 0)"))[1],
    )
    assert bomb.reason == "timeout" and time.monotonic() - t < 10
    assert other.ok and other.stdout.startswith("True")  # its own process budget
    assert _wait_gone("gembomb") == []


def test_rlimits_cannot_be_raised(sb):
    r = sb.run(
        "import resource\n"
        "for name in ('RLIMIT_AS', 'RLIMIT_CPU', 'RLIMIT_NPROC', 'RLIMIT_FSIZE'):\n"
        "    lim = getattr(resource, name)\n"
        "    soft, hard = resource.getrlimit(lim)\n"
        "    try:\n"
        "        resource.setrlimit(lim, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))\n"
        "        print(name, 'raised')\n"
        "    except (ValueError, OSError):\n"
        "        print(name, 'refused', soft == hard)\n",
        timeout=5,
    )
    assert r.ok, r.stderr
    names = ("RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_NPROC", "RLIMIT_FSIZE")
    assert r.stdout.split("\n")[:4] == [f"{n} refused True" for n in names]


# ------------------------------------------------------------------ what a run leaves behind
def test_deep_tree_and_many_files_do_not_hurt_others(sb):
    deep = (
        "import os\nos.chdir('/tmp')\n"
        "for i in range(1200):\n    os.mkdir('d')\n    os.chdir('d')\n"
        "n = 0\n"
        "try:\n"
        "    while True:\n        open(f'f{n}', 'w').close()\n        n += 1\n"
        "except OSError as exc:\n    print('stopped', n, exc.strerror)\n"
    )

    def limited():
        time.sleep(0.2)
        t = time.monotonic()
        r = sb.run("while True: pass", timeout=1)
        return r, time.monotonic() - t

    results = _concurrently(lambda: sb.run(deep), lambda: sb.run(deep), limited)
    for r in results[:2]:
        assert r.ok, r.stderr
        assert r.stdout.startswith("stopped") and "No space left on device" in r.stdout
        assert int(r.stdout.split()[1]) < 2048 - 1200 + 16  # the inode quota, not the disk
    timed, elapsed = results[2]
    assert timed.reason == "timeout" and elapsed < 4
    assert sb._proc.poll() is None
    assert [sb.run(f"print({i})").stdout for i in range(8)] == [f"{i}\n" for i in range(8)]


def test_filling_tmp_fails_only_the_run_that_does_it(sb):
    fill = (
        "n = 0\ntry:\n    with open('/tmp/big', 'wb') as fh:\n        while True:\n"
        "            fh.write(b'x' * (1 << 20))\n            n += 1\n"
        "except OSError as exc:\n    print(n, exc.strerror)\n"
    )
    small = (
        "import time\ntime.sleep(0.5)\nopen('/tmp/mine', 'wb').write(b'y' * (4 << 20))\n"
        "print(len(open('/tmp/mine', 'rb').read()))"
    )
    filled, other = _concurrently(lambda: sb.run(fill, file_size_mb=None), lambda: sb.run(small))
    assert filled.ok and "No space left on device" in filled.stdout and int(filled.stdout.split()[0]) <= 16
    assert other.ok and other.stdout == f"{4 << 20}\n", other.stderr


def test_daemons_do_not_survive_the_run(sb):
    r = sb.run(
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        + "        " + SET_NAME.format(name="gemdaemon1").replace("\n", "\n        ")
        + "time.sleep(1000)\n"
        "    os._exit(0)\n"
        "time.sleep(0.2)\nprint('parent done')\n"
    )
    assert r.ok and r.stdout == "parent done\n", r.stderr
    assert _wait_gone("gemdaemon1") == []


def test_daemons_do_not_survive_close():
    box = Sandbox(slots=4)
    daemon = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        + "        " + SET_NAME.format(name="gemdaemon2").replace("\n", "\n        ")
        + "time.sleep(1000)\n"
        "    os._exit(0)\n"
        "print('forked', flush=True)\ntime.sleep(1000)\n"
    )
    results = []
    t = threading.Thread(target=lambda: results.append(box.run(daemon, timeout=30)))
    t.start()
    end = time.monotonic() + 10
    while not _comm_pids("gemdaemon2") and time.monotonic() < end:
        time.sleep(0.05)
    assert _comm_pids("gemdaemon2"), "the daemon never started"
    box.close()
    t.join(15)
    assert not t.is_alive()
    assert _wait_gone("gemdaemon2") == []


# ------------------------------------------------------------------ other runs and the network
def test_abstract_sockets_do_not_connect_runs(sb, one_slot):
    name = f"gem-abstract-{uuid.uuid4().hex}"
    server = (
        "import socket, time\n"
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        f"s.bind('\\0{name}')\ns.listen(5)\ns.settimeout(2.5)\n"
        "print('listening', flush=True)\n"
        "try:\n    s.accept()\n    print('ACCEPTED')\nexcept OSError:\n    print('nobody')\n"
    )
    client = (
        "import socket, time\ntime.sleep(0.7)\n"
        "c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        f"try:\n    c.connect('\\0{name}')\n    print('CONNECTED')\n"
        "except OSError as exc:\n    print(type(exc).__name__)\n"
    )
    srv, cli = _concurrently(lambda: sb.run(server), lambda: sb.run(client))
    assert srv.stdout == "listening\nnobody\n", srv.stderr
    assert cli.stdout == "ConnectionRefusedError\n", cli.stderr
    # A socket kept alive in flight (passed to itself, never received) must not reach a later run
    # of the same slot.
    keep = (
        "import socket, array\n"
        f"s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\ns.bind('\\0{name}')\n"
        "a, b = socket.socketpair()\n"
        "fds = array.array('i', [s.fileno(), a.fileno(), b.fileno()])\n"
        "a.sendmsg([b'x'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])\n"
        "print('kept')\n"
    )
    later = (
        "import socket\nc = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
        f"try:\n    c.sendto(b'hi', '\\0{name}')\n    print('SENT')\n"
        "except OSError as exc:\n    print(type(exc).__name__)\n"
    )
    assert one_slot.run(keep).stdout == "kept\n"
    assert one_slot.run(later).stdout == "ConnectionRefusedError\n"


def test_no_network_to_the_host(sb):
    server = socket.socket()
    server.bind(("0.0.0.0", 0))
    server.listen(1)
    server.settimeout(0.3)
    port = server.getsockname()[1]
    try:
        r = sb.run(
            "import socket\nout = []\n"
            f"for host in ('127.0.0.1', '10.0.2.2', '1.1.1.1'):\n"
            "    try:\n"
            f"        socket.create_connection((host, {port}), timeout=1)\n"
            "        out.append('CONNECTED')\n"
            "    except OSError as exc:\n"
            "        out.append(type(exc).__name__)\n"
            "print(out)"
        )
        assert r.ok and "CONNECTED" not in r.stdout, r.stdout
        with pytest.raises(socket.timeout):
            server.accept()
    finally:
        server.close()


# ------------------------------------------------------------------ files
def test_writes_outside_tmp_fail_and_tmp_is_private(sb):
    open_dir = tempfile.mkdtemp(dir="/var/tmp")
    os.chmod(open_dir, 0o777)
    site = sorted(p for p in sys.path if p.endswith("site-packages"))[0]
    try:
        for path in (
            f"{open_dir}/escape.txt",
            "/etc/gem-escape",
            "/dev/shm/gem-escape",
            f"{site}/gem-escape.pth",
            "/proc/sys/kernel/hostname",
            "/sys/kernel/mm/transparent_hugepage/enabled",
        ):
            r = sb.run(f"open({path!r}, 'w').write('import os')")
            assert r.reason == "error", path
            assert any(e in r.stderr for e in ("Read-only file system", "PermissionError", "No such file"))
            assert path.startswith(("/proc", "/sys")) or not os.path.exists(path)
        venv = sorted(name for parent, name in _ways_to_the_interpreter() if parent == "/tmp")
        r = sb.run("open('mine.txt', 'w').write('mine'); import os; print(os.getcwd(), sorted(os.listdir('/tmp')))")
        assert r.ok and r.stdout == f"/tmp {sorted(['mine.txt', *venv])}\n", r.stderr  # its working directory
        assert not os.path.exists("/tmp/mine.txt")
        assert sb.run("import os; print(sorted(os.listdir('/tmp')))").stdout == f"{venv}\n"  # nothing of the last run
    finally:
        shutil.rmtree(open_dir)


def test_gem_data_and_checkout_are_hidden(sb):
    secret = f"gem-planted-secret-{uuid.uuid4().hex}"
    planted = [os.path.join(GEM_DIR, f"_planted_{secret}.txt")]
    if os.path.exists(os.path.join(CHECKOUT, "pyproject.toml")):
        planted.append(os.path.join(CHECKOUT, f"_planted_{secret}.txt"))
    for path in planted:
        with open(path, "w") as fh:
            fh.write(secret)
    bundled = [
        os.path.join(GEM_DIR, "data", "bundled", n) for n in ("code_problems.jsonl", "arithmetic.jsonl.gz")
    ]
    try:
        r = sb.run(
            "import os\nhits = []\n"
            f"secret = {secret!r}\n"
            f"for p in {[*planted, *bundled, GEM_DIR, CHECKOUT]!r}:\n"
            "    try:\n"
            "        hits.append((p, os.listdir(p) if os.path.isdir(p) else open(p, 'rb').read(64)))\n"
            "    except OSError:\n"
            "        pass\n"
            f"ways = {sorted(_ways_to_the_interpreter())!r}\n"
            "hits = [h for h in hits if h[1] and not (isinstance(h[1], list)\n"
            "        and all((h[0], name) in {tuple(w) for w in ways} for name in h[1]))]\n"
            "for root, dirs, files in os.walk('/'):\n"
            "    if root.startswith(('/proc', '/sys', '/dev')):\n"
            "        dirs[:] = []\n"
            "        continue\n"
            "    for f in files:\n"
            "        if secret in f:\n"
            "            hits.append(os.path.join(root, f))\n"
            "print(hits)\n",
            timeout=60,
        )
        assert r.ok, r.stderr
        assert r.stdout == "[]\n"
        r = sb.run("import numpy, json, xml.dom.minidom\nprint(int(numpy.ones(3).sum()))")
        assert r.stdout == "3\n", r.stderr  # the interpreter and site-packages stay importable
    finally:
        for path in planted:
            os.unlink(path)


@pytest.mark.slow
def test_no_readable_file_holds_a_planted_secret(sb):
    secret = f"gem-content-secret-{uuid.uuid4().hex}"
    planted = os.path.join(GEM_DIR, "data", "_planted_secret.txt")
    with open(planted, "w") as fh:
        fh.write(secret)
    try:
        r = sb.run(
            "import os\nfound = []\n"
            f"needle = {secret!r}.encode()\n"
            "for root, dirs, files in os.walk('/'):\n"
            "    if root.startswith(('/proc', '/sys', '/dev')):\n"
            "        dirs[:] = []\n"
            "        continue\n"
            "    for f in files:\n"
            "        p = os.path.join(root, f)\n"
            "        try:\n"
            "            if os.path.islink(p) or os.path.getsize(p) > 1 << 20:\n"
            "                continue\n"
            "            if needle in open(p, 'rb').read():\n"
            "                found.append(p)\n"
            "        except OSError:\n"
            "            pass\n"
            "print(found)\n",
            timeout=300,
            cpu_time=300,
        )
        assert r.ok, r.stderr
        assert r.stdout == "[]\n"
    finally:
        os.unlink(planted)


def test_hidden_paths_added_by_the_caller(sb, public_tmp):
    # /tmp is private to each run: the data lives outside it, readable by anyone.
    answers = os.path.join(public_tmp, "answers.jsonl")
    with open(answers, "w") as fh:
        fh.write('{"answer": 42}\n')
    os.chmod(answers, 0o644)
    code = f"print(open({answers!r}).read().strip())"
    assert sb.run(code).stdout == '{"answer": 42}\n'
    r = sb.run(code, hidden_paths=[answers])
    assert r.reason == "error" and "answer" not in r.stdout
    r = sb.run(f"import os\nprint(os.listdir({str(public_tmp)!r}))", hidden_paths=[str(public_tmp)])
    assert r.stdout == "[]\n"
    assert sb.run(code).stdout == '{"answer": 42}\n'  # the sandbox itself is unchanged


# ------------------------------------------------------------------ sessions
@pytest.mark.parametrize("cgroups", [True, False], ids=["cgroups", "no-cgroups"])
def test_each_session_cell_gets_its_own_cpu_allowance(cgroups):
    # Cells that together use several allowances all run (root without CAP_SYS_RESOURCE cannot
    # raise the session's hard limit: its first cell's allowance held for the whole session, and
    # the second cell here was killed); a cell over its own allowance is still stopped for it.
    box = Sandbox(cgroups=cgroups)
    try:
        with box.session(cpu_time=1, timeout=20) as s:
            burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass\nprint('ok')"
            for _ in range(4):
                r = s.run(burn)
                assert r.ok and r.stdout == "ok\n" and not r.isolation["restarted"], (r.reason, r.stderr)
            r = s.run("while True: pass", timeout=60)
            assert r.reason == "timeout" and "CPU-time limit" in r.stderr, r.stderr
            assert r.wall_time < 30
    finally:
        box.close()


def test_a_session_with_a_freezer_is_frozen_by_its_caller():
    # With a freezer (root), the caller freezes the session itself after each cell: no round trip
    # through the worker. Nothing of it runs between cells: a thread's ticks stop at the cell's end.
    box = Sandbox()
    try:
        assert box.run("pass").ok
        if not (box.isolation.get("cgroup_freezer") and box.isolation.get("privileged")):
            pytest.skip("the host gives this sandbox no cgroup freezer (root with cgroups)")
        with box.session() as s:
            r = s.run(
                "import threading, time\nticks = []\n"
                "def tick():\n    while True:\n        ticks.append(time.monotonic())\n        time.sleep(0.005)\n"
                "threading.Thread(target=tick, daemon=True).start()\ntime.sleep(0.05)\nprint(len(ticks) > 0)"
            )
            assert r.stdout == "True\n", r.stderr
            assert s._freezer is not None and s._freezer.frozen  # a thread besides the kernel: frozen
            ended = time.monotonic()
            time.sleep(0.5)
            began = time.monotonic()
            r = s.run(f"print(len([t for t in ticks if {ended + 0.05} < t < {began - 0.05}]))")
            assert r.stdout == "0\n", r.stdout + r.stderr
        with box.session() as s:
            # The kernel alone: stopped (SIGSTOP from outside its PID namespace), not frozen (a cell
            # that forges its end and computes on: tests/security/test_sandbox_redteam.py).
            assert s.run("x = 1").ok
            assert s._freezer is not None and s._freezer.stopped and not s._freezer.frozen
            stat = open(f"/proc/{s._freezer.pid}/stat").read().rsplit(")", 1)[1].split()
            cpu = int(stat[11]) + int(stat[12])
            time.sleep(0.5)
            stat = open(f"/proc/{s._freezer.pid}/stat").read().rsplit(")", 1)[1].split()
            assert stat[0] == "T" and int(stat[11]) + int(stat[12]) == cpu  # no CPU between cells
            assert s.run("print(1)").stdout == "1\n"
    finally:
        box.close()


def test_session_cell_cannot_raise_cpu_limit_or_leave_work_running(sb):
    with sb.session(cpu_time=2, timeout=10) as s:
        r = s.run(
            "import resource, os, threading, time\n"
            "try:\n"
            "    resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))\n"
            "    print('raised')\n"
            "except (ValueError, OSError):\n"
            "    print('refused')\n"
            "ticks = []\n"
            "def tick():\n"
            "    while True:\n"
            "        ticks.append(time.monotonic())\n"
            "        time.sleep(0.01)\n"
            "threading.Thread(target=tick, daemon=True).start()\n"
            "child = os.fork()\n"
            "if child == 0:\n"
            "    while True:\n"
            "        pass\n"
            "print(child)\n"
        )
        assert r.ok, r.stderr
        assert r.stdout.splitlines()[0] == "refused"
        child = int(r.stdout.splitlines()[1])
        ended = time.monotonic()
        time.sleep(1.0)
        began = time.monotonic()
        r = s.run(
            "import os\n"
            "try:\n"
            f"    os.kill({child}, 0)\n"
            "    print('child alive')\n"
            "except ProcessLookupError:\n"
            "    print('child gone')\n"
            f"print(len([t for t in ticks if {ended + 0.2} < t < {began - 0.05}]))\n"
        )
        assert r.stdout.split("\n")[:2] == ["child gone", "0"], r.stdout + r.stderr
        # Each cell's CPU allowance holds: killed for CPU time (2 s), well before a generous wall
        # limit (a loaded machine may give the cell less than a core).
        r = s.run("while True: pass", timeout=60)
        assert r.reason == "timeout" and "CPU-time limit" in r.stderr, r.stderr


# ------------------------------------------------------------------ the seccomp table
def test_seccomp_numbers_match_libseccomp():
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("seccomp")
    if not name:
        pytest.skip("libseccomp is not installed (only used to cross-check the table)")
    lib = ctypes.CDLL(name)
    lib.seccomp_syscall_resolve_name_arch.argtypes = [ctypes.c_uint32, ctypes.c_char_p]
    for arch, table in _sandbox_zygote._SYSCALLS.values():
        for call, nr in table.items():
            assert lib.seccomp_syscall_resolve_name_arch(arch, call.encode()) == nr, call
    assert _sandbox_zygote._seccomp_program("sparc") is None


def _filter_verdict(program: bytes, nr: int, arch: int, arg0: int = 0, arg2: int = 0, arg1: int = 0) -> int:
    """Run a classic-BPF seccomp program on one system call, as the kernel would."""
    import struct

    code = [struct.unpack("<HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    data, pc, acc = {0: nr, 4: arch, 16: arg0 & 0xFFFFFFFF, 24: arg1 & 0xFFFFFFFF, 32: arg2 & 0xFFFFFFFF}, 0, 0
    while True:
        op, jt, jf, k = code[pc]
        if op == 0x06:
            return k
        if op == 0x20:
            acc, pc = data[k], pc + 1
        elif op == 0x05:
            pc += 1 + k
        else:
            taken = {0x15: acc == k, 0x35: acc >= k, 0x45: bool(acc & k)}[op]
            pc += 1 + (jt if taken else jf)


@pytest.mark.parametrize("machine", sorted(_sandbox_zygote._SYSCALLS))
def test_seccomp_filter_decisions(machine):
    arch, table = _sandbox_zygote._SYSCALLS[machine]
    program = _sandbox_zygote._seccomp_program(machine)
    denied = {table[n] for n in _sandbox_zygote.DENIED_SYSCALLS if n in table}
    allow, eperm, enosys = 0x7FFF0000, 0x50000 | 1, 0x50000 | 38
    special = {table[n] for n in ("clone", "clone3", "socket", "socketpair", "fcntl", "flock")}
    unsupported = {table[n] for n in _sandbox_zygote.UNSUPPORTED_SYSCALLS if n in table}
    for nr in range(0, 512):
        if nr in special:
            continue
        expected = eperm if nr in denied else enosys if nr in unsupported else allow
        assert _filter_verdict(program, nr, arch) == expected, nr
    # Locks succeed without locking (runs share the host's files); F_GETLK and the rest of fcntl run.
    no_op, einval = 0x50000, 0x50000 | 22
    assert _filter_verdict(program, table["flock"], arch, 3, 0, 2) == no_op
    for cmd in range(0, 1100):
        verdict = _filter_verdict(program, table["fcntl"], arch, 3, 0, cmd)
        assert verdict == (no_op if cmd in (6, 7, 37, 38) else einval if cmd == 1026 else allow), cmd
    assert _filter_verdict(program, table["fcntl"], arch, 3, 0, (1 << 32) | 6) == no_op  # (32-bit command)
    assert _filter_verdict(program, table["inotify_init1"], arch) == enosys
    for name in ("shmget", "semget", "msgget", "shmat", "mq_open", "unshare"):
        assert _filter_verdict(program, table[name], arch) == eperm, name
    # Socket families: AF_UNIX only, unless runs share the host's network.
    eafnosupport = 0x50000 | 97
    networked = _sandbox_zygote._seccomp_program(machine, _sandbox_zygote.NETWORK_FAMILIES)
    for call in ("socket", "socketpair"):
        for family in range(0, 64):
            verdict = _filter_verdict(program, table[call], arch, family)
            assert verdict == (allow if family == 1 else eafnosupport), (call, family)
            verdict = _filter_verdict(networked, table[call], arch, family)
            assert verdict == (allow if family in (1, 2, 10, 16) else eafnosupport), (call, family)
        # netlink: the routing protocol only (not NETLINK_KOBJECT_UEVENT, NETLINK_AUDIT, ...)
        assert _filter_verdict(networked, table[call], arch, 16, 0) == allow
        for protocol in (9, 15, 16):
            assert _filter_verdict(networked, table[call], arch, 16, protocol) == eafnosupport
    assert _filter_verdict(program, table["clone3"], arch) == enosys
    assert _filter_verdict(program, table["clone"], arch, 17) == allow  # a plain fork
    for flag in (0x10000000, 0x20000000, 0x40000000, 0x08000000, 0x00020000):
        assert _filter_verdict(program, table["clone"], arch, flag | 17) == eperm
    assert _filter_verdict(program, 1, 0x40000003) == eperm  # another ABI (i386)
    if machine == "x86_64":
        assert _filter_verdict(program, 0x40000001, arch) == eperm  # x32


# ------------------------------------------------------------------ a host without root
NONROOT_SCRIPT = r"""
import importlib.util, json, os, sys
spec = importlib.util.spec_from_file_location("gem_sandbox_nonroot", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = mod
spec.loader.exec_module(mod)
out = {"uid": os.getuid()}
try:
    with mod.Sandbox(slots=4) as sb:
        r = sb.run(sys.argv[2])
        out.update(stdout=r.stdout, stderr=r.stderr, mode=r.isolation.get("mode"))
        key = 0x5E1234
        sb.run(f"import ctypes\nprint(ctypes.CDLL(None).shmget({key}, 4096, 0o1666))")
        later = sb.run(f"import ctypes\nprint(ctypes.CDLL(None).shmget({key}, 0, 0))")
        out["shm_later"] = later.stdout.strip()
        # The run's uid maps to the worker's, which owns the pooled namespaces' sysctls.
        wrote = sb.run(
            "out = []\n"
            "for p in ('/proc/sys/kernel/shmmax', '/proc/sys/kernel/msgmnb', '/proc/sys/fs/mqueue/msg_max',\n"
            "          '/proc/sys/net/core/somaxconn', '/proc/sys/net/ipv4/ping_group_range'):\n"
            "    try:\n"
            "        old = open(p).read()\n"
            "        open(p, 'w').write(old)\n"
            "        out.append(p)\n"
            "    except OSError:\n"
            "        pass\n"
            "print(out)"
        )
        out["sysctls_written"] = wrote.stdout.strip() + wrote.stderr
except mod.SandboxError as exc:
    out["error"] = str(exc)
print(json.dumps(out))
"""


@needs_root
def test_non_root_host_runs_isolated_in_user_namespaces(public_tmp):
    tmp_path = public_tmp
    import gem.sandbox.sandbox as sandbox_module

    target = tempfile.mkdtemp(dir="/var/tmp")  # a directory the non-root user owns
    os.chown(target, 65534, 65534)
    os.chmod(target, 0o700)
    script = tmp_path / "nonroot.py"
    script.write_text(NONROOT_SCRIPT)
    os.chmod(tmp_path, 0o755)
    os.chmod(script, 0o644)
    code = (
        "import os, json, resource\n"
        "pids = [p for p in os.listdir('/proc') if p.isdigit()]\n"
        "status = dict(l.split(':', 1) for l in open('/proc/self/status'))\n"
        "try:\n"
        f"    open({target + '/evil.pth'!r}, 'w').write('import os')\n"
        "    wrote = True\n"
        "except OSError:\n"
        "    wrote = False\n"
        "print(json.dumps({'pids': pids, 'seccomp': status['Seccomp'].strip(),\n"
        "                  'caps': status['CapEff'].strip(), 'wrote': wrote, 'uid': os.getuid()}))\n"
    )
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    try:
        proc = subprocess.run(
            [*SETPRIV_NOBODY, python, str(script), sandbox_module.__file__, code],
            capture_output=True, text=True, timeout=120, cwd="/",
            env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
        )
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        assert out["uid"] == 65534
        if "error" in out:  # the kernel refuses unprivileged user namespaces: refused clearly
            assert "user namespaces" in out["error"] and "GEM_SANDBOX_UNSAFE" in out["error"]
            return
        assert out["mode"] == "userns"
        run = json.loads(out["stdout"])
        assert run["pids"] == ["1"] and run["seccomp"] == "2" and int(run["caps"], 16) == 0
        assert run["wrote"] is False and not os.path.exists(target + "/evil.pth")
        assert out["shm_later"] == "-1"
        assert out["sysctls_written"] == "[]"
    finally:
        shutil.rmtree(target)


@needs_root
def test_non_root_without_user_namespaces_refuses_unless_unsafe(public_tmp):
    tmp_path = public_tmp
    script = tmp_path / "refuse.py"
    script.write_text(
        "import ctypes, importlib.util, json, os, sys\n"
        "assert ctypes.CDLL(None).unshare(0x10000000) == 0\n"  # a user namespace of its own, without mapping
        "spec = importlib.util.spec_from_file_location('gem_sandbox_refuse', sys.argv[1])\n"
        "mod = importlib.util.module_from_spec(spec)\n"
        "sys.modules[spec.name] = mod\n"
        "spec.loader.exec_module(mod)\n"
        "out = {}\n"
        "try:\n"
        "    with mod.Sandbox(slots=2) as sb:\n"
        "        out['ran'] = sb.run('print(1)').stdout\n"
        "except mod.SandboxError as exc:\n"
        "    out['error'] = str(exc)\n"
        "os.environ['GEM_SANDBOX_UNSAFE'] = '1'\n"
        "with mod.Sandbox(slots=2) as sb:\n"
        "    r = sb.run('print(6 * 7)')\n"
        "    out['unsafe'] = [r.stdout, r.isolation['mode']]\n"
        "print(json.dumps(out))\n"
    )
    os.chmod(tmp_path, 0o755)
    import gem.sandbox.sandbox as sandbox_module

    # Nested in a user namespace where it is unmapped (uid 65534, no capabilities), a process can
    # create no further user namespace that could map it: the sandbox has nothing to stand on.
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    proc = subprocess.run(
        [*SETPRIV_NOBODY, python, str(script), sandbox_module.__file__],
        capture_output=True, text=True, timeout=120, cwd="/", env={"PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if "ran" in out:
        pytest.skip("this kernel still gave the nested process a working user namespace")
    assert "Refusing to run untrusted code" in out["error"] and "GEM_SANDBOX_UNSAFE=1" in out["error"]
    assert out["unsafe"] == ["42\n", "unsafe"]


def test_sandbox_error_is_a_runtime_error():
    assert issubclass(SandboxError, RuntimeError)


def test_check_command_reports_protections():
    proc = subprocess.run(
        [sys.executable, "-m", "gem.sandbox", "--check"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": CHECKOUT},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = proc.stdout.splitlines()
    for line in ("pid namespace", "seccomp filter", "network namespace", "/tmp quotas", "hidden paths"):
        assert any(line in row and row.startswith("ok") for row in rows), (line, proc.stdout)
    assert any("hard rlimits" in row and row.startswith("ok") for row in rows)
    for line in ("socket families", "System V IPC refused"):
        assert any(line in row and row.startswith("ok") for row in rows), (line, proc.stdout)
    assert any(row.startswith("holds   ") and "memory_mb" in row for row in rows), proc.stdout
    assert "untrusted code: allowed" in proc.stdout
