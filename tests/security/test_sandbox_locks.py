"""Concurrent runs cannot signal each other through kernel state attached to the host's files.

Every run can open the host's read-only files (the interpreter's own modules, at least), and a lock
or a change notification on such a file is kernel state that all of them share: one run holding a
``flock``/POSIX/OFD lock on ``os.py`` would be seen by another that tests the lock, and a run
watching a host directory with inotify would see another run's reads. The sandbox's seccomp
filter makes lock requests succeed without locking anything and refuses the watches, so a run
sees neither; a run's own programs (sqlite in its temporary directory) keep working.
"""

from __future__ import annotations

import os

import pytest

from gem.sandbox import Sandbox, SandboxLimits
from tests.security.test_sandbox_isolation import _concurrently

HOST_FILE = os.path.realpath(os.__file__)  # a read-only host file every run can open

HOLDER = f"""
import fcntl, os, struct, time
f = open({HOST_FILE!r}, 'rb')
fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
fcntl.lockf(f, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, 0)      # a POSIX read lock on byte 0 (F_SETLK)
ofd = struct.pack('hhqqi', fcntl.F_RDLCK, 0, 1, 1, 0)      # an OFD read lock on byte 1
fcntl.fcntl(f, getattr(fcntl, 'F_OFD_SETLK', 37), ofd)
print('holding', flush=True)
time.sleep(3.0)
"""

PROBE = f"""
import fcntl, struct, time
time.sleep(1.2)
f = open({HOST_FILE!r}, 'rb')
try:
    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print('flock: free')
except OSError as exc:
    print('flock: held', exc.errno)
for name, cmd, start in (('F_GETLK', fcntl.F_GETLK, 0), ('F_OFD_GETLK', getattr(fcntl, 'F_OFD_GETLK', 36), 1)):
    query = struct.pack('hhqqi', fcntl.F_WRLCK, 0, start, 1, 0)
    kind = struct.unpack('hhqqi', fcntl.fcntl(f, cmd, query))[0]
    print(name + ':', 'unlocked' if kind == fcntl.F_UNLCK else 'locked')
"""

WATCHER = f"""
import ctypes, os, select, time
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_NONBLOCK)
if fd < 0:
    print('inotify: refused', ctypes.get_errno())
else:
    libc.inotify_add_watch(fd, {os.path.dirname(HOST_FILE)!r}.encode(), 0x1 | 0x20)  # IN_ACCESS | IN_OPEN
    seen = select.select([fd], [], [], 3.0)[0]
    print('inotify: saw another run' if seen else 'inotify: nothing')
"""

READER = f"""
import time
time.sleep(1.0)
for _ in range(20):
    open({HOST_FILE!r}, 'rb').read(100)
print('read')
"""

OWN_FILES = """
import fcntl, sqlite3
db = sqlite3.connect('x.db')
db.execute('create table t(a)')
db.execute('insert into t values (1)')
db.commit()
print(db.execute('select a from t').fetchall())
with open('lockfile', 'w') as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    fcntl.lockf(f, fcntl.LOCK_EX)
    print('locked own file')
"""


@pytest.fixture(scope="module")
def sb():
    box = Sandbox(SandboxLimits(timeout=15), slots=4)
    try:
        mode = box.run("print(open('/proc/self/status').read().split('Seccomp:')[1].split()[0])")
        if mode.stdout != "2\n":
            pytest.skip(f"this host runs the sandbox without its seccomp filter (Seccomp: {mode.stdout.strip()})")
        yield box
    finally:
        box.close()


def test_a_lock_on_a_host_file_is_not_seen_by_a_concurrent_run(sb):
    holder, probe = _concurrently(lambda: sb.run(HOLDER), lambda: sb.run(PROBE))
    assert holder.stdout == "holding\n", holder.stderr
    assert probe.stdout == "flock: free\nF_GETLK: unlocked\nF_OFD_GETLK: unlocked\n", probe.stderr


def test_a_run_cannot_watch_host_files_for_another_runs_reads(sb):
    watcher, reader = _concurrently(lambda: sb.run(WATCHER), lambda: sb.run(READER))
    assert reader.stdout == "read\n", reader.stderr
    assert watcher.stdout == "inotify: refused 38\n", watcher.stderr  # ENOSYS, as a kernel without inotify


def test_locks_and_sqlite_on_a_runs_own_files_still_work(sb):
    result = sb.run(OWN_FILES)
    assert result.stdout == "[(1,)]\nlocked own file\n", result.stderr
