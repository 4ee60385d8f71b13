"""Attacks on the sandbox by the code it runs: each test is one that worked before its fix.

* Session status forgery: a cell's status line comes from the session's own process, which the
  cell's code controls. A cell that writes "exited 0, nothing else runs" itself returns at once
  and goes on running after its result (outside any cell's wall-time limit). The caller must
  freeze the session after every cell, whatever the status line says.
* The session's own socket: the caller waited on it for a JSON report; a cell sending anything
  there crashed the caller (a JSON or type error out of ``SandboxSession.run``).
* Pseudo-terminals: runs shared the host's devpts, one pool of ``kernel.pty.max`` for the whole
  machine: one run could take them all, and saw other runs' ptys.
* Hidden paths: the checkout a ``gem-llm`` install came from (``direct_url.json``) and checkouts
  named by ``.pth`` or ``.egg-link`` files stayed readable.
* The shell: a command's ``kill -INT 1`` ended the cell mid-command; the shell restarted empty.
* uids: workers with different slot counts could hand out the same uid.
* A freeze that fails: the worker stopped the session's kernel alone and said "stopped"; the
  session's other processes ran on between cells.
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from gem.sandbox import Sandbox, SandboxLimits


@pytest.fixture(scope="module")
def box():
    sb = Sandbox(SandboxLimits(timeout=20), slots=4)
    try:
        yield sb
    finally:
        sb.close()


# Writes a forged status line ("exit 0, 0 s of CPU, nothing else runs") to every pipe this process
# holds open for writing but its stdout and stderr (the cell's status pipe is one of them), then
# keeps recording the time for 1.5 s.
FORGE_STATUS = r"""
import fcntl, os, stat, time
for name in os.listdir("/proc/self/fd"):
    fd = int(name)
    try:
        if fd > 2 and stat.S_ISFIFO(os.fstat(fd).st_mode) and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
            os.write(fd, b"0 0.0 0\n")
    except OSError:
        pass
STAMPS = []
t0 = time.time()
while time.time() - t0 < 1.5:
    STAMPS.append(time.time())
    time.sleep(0.005)
"""


def test_a_cell_that_forges_its_status_does_not_run_after_its_result(box):
    with box.session(timeout=10) as s:
        first = s.run(FORGE_STATUS)
        returned = time.time()
        assert first.reason == "ok"
        time.sleep(0.6)
        resumed = time.time()
        second = s.run("print(repr([t for t in STAMPS]))")
        assert second.reason == "ok", second.stderr
        stamps = eval(second.stdout)  # noqa: S307 - our own repr of floats
        assert stamps, "the first cell recorded nothing"
        between = [t for t in stamps if returned + 0.05 < t < resumed - 0.01]
        assert not between, f"the first cell ran {len(between)} times between its result and the next cell"


# ------------------------------------------------------------------ pseudo-terminals
# Opens every pty it can (the host's /dev/pts is one pool for the whole machine, kernel.pty.max),
# holds them a while, then checks that a pty still works once it lets them go.
PTY_GRAB = r"""
import os, pty, time
fds = []
try:
    for _ in range(5000):
        fds.append(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))
except OSError as exc:
    print("stopped", exc.strerror)
print("ptys", len(fds))
time.sleep(1.5)
for fd in fds:
    os.close(fd)
master, slave = pty.openpty()
os.write(slave, b"hi\n")
print("works", os.read(master, 10))
"""


def _host_ptys() -> int:
    with open("/proc/sys/kernel/pty/nr") as fh:
        return int(fh.read())


def test_a_run_cannot_take_the_hosts_ptys_nor_see_other_runs(box):
    box.run("print(1)")  # started: its isolation report is in
    if not box.isolation.get("mount_namespace") or not os.path.exists("/dev/ptmx"):
        pytest.skip("runs have no mount namespace here, or the host has no /dev/ptmx")
    held: list = []
    holder = threading.Thread(target=lambda: held.append(box.run(PTY_GRAB, timeout=20)))
    before = _host_ptys()
    holder.start()
    time.sleep(1.0)
    during = _host_ptys()
    other = box.run("import os; print(sorted(os.listdir('/dev/pts')))")
    holder.join()
    r = held[0]
    assert r.reason == "ok", r.stderr[-500:]
    n = int(r.stdout.split("ptys ")[1].split()[0])
    assert 0 < n <= 64, r.stdout  # its own devpts instance, bounded
    assert "works b'hi" in r.stdout, r.stdout
    assert during - before < 100, (before, during)  # the host's pool is untouched
    assert other.stdout.strip() == "['ptmx']", other.stdout  # nothing of the other run


# ------------------------------------------------------------------ the session's own socket
@pytest.mark.parametrize(
    "payload",
    [b"not json", b"[]", b'{"status": "x"}', b'{"status": 0, "cpu": "nan"}', b'{"status": 0, "cpu": 0.0}'],
)
def test_a_cell_writing_on_the_session_socket_ends_its_session_not_the_caller(box, payload):
    # The session's process holds its end of the socket the caller waits on: whatever a cell sends
    # there is no result (nothing legitimate ever comes that way), the session is killed.
    with box.session(timeout=10) as s:
        r = s.run(
            "import os, socket, time\n"
            f"socket.socket(fileno=os.dup(3)).send({payload!r})\n"
            "time.sleep(5)\n"
            "print('still here')\n"
        )
        assert r.reason != "ok" and "still here" not in r.stdout, (r.reason, r.stdout)
        assert r.wall_time < 4
        assert not s.alive
        again = s.run("print(41 + 1)")
        assert again.stdout == "42\n" and again.isolation["restarted"]


def test_a_forged_status_line_with_an_impossible_cpu_time_is_not_taken(box):
    r = box.run(
        "import fcntl, os, stat\n"
        "for name in os.listdir('/proc/self/fd'):\n"
        "    fd = int(name)\n"
        "    try:\n"
        "        if fd > 2 and stat.S_ISFIFO(os.fstat(fd).st_mode) and fcntl.fcntl(fd, fcntl.F_GETFL) & 3 == 1:\n"
        "            os.write(fd, b'0 inf\\n')\n"
        "    except OSError:\n"
        "        pass\n"
        "raise SystemExit(3)\n"
    )
    assert r.exit_code == 3 and r.cpu_time < 60, (r.exit_code, r.cpu_time)


# ------------------------------------------------------------------ other copies of GEM
@pytest.mark.parametrize("how", ["direct_url", "pth", "egg_link"])
def test_the_source_gem_was_installed_from_is_hidden(how, monkeypatch):
    # ``pip install <checkout>`` leaves the checkout (tests, task data) where it was and records it
    # in the dist-info; path-based editable installs name it in a .pth or .egg-link file.
    import json as _json
    import shutil
    import tempfile

    import gem.sandbox.sandbox as sandbox_module

    top = tempfile.mkdtemp(dir="/var/tmp")
    try:
        checkout, site = os.path.join(top, "checkout"), os.path.join(top, "site")
        os.makedirs(os.path.join(checkout, "gem"))
        os.makedirs(site)
        open(os.path.join(checkout, "gem", "__init__.py"), "w").close()
        with open(os.path.join(checkout, "answers.txt"), "w") as fh:
            fh.write("the-hidden-answer")
        if how == "direct_url":
            os.makedirs(os.path.join(site, "gem_llm-9.9.dist-info"))
            with open(os.path.join(site, "gem_llm-9.9.dist-info", "direct_url.json"), "w") as fh:
                _json.dump({"dir_info": {}, "url": "file://" + checkout}, fh)
        elif how == "pth":
            with open(os.path.join(site, "gem_dev.pth"), "w") as fh:
                fh.write(checkout + "\n")
        else:
            with open(os.path.join(site, "gem-llm.egg-link"), "w") as fh:
                fh.write(checkout + "\n.\n")
        for d, _dirs, files in os.walk(top):
            os.chmod(d, 0o755)
            for f in files:
                os.chmod(os.path.join(d, f), 0o644)
        real = sandbox_module._site_dirs
        monkeypatch.setattr(sandbox_module, "_site_dirs", lambda: [*real(), site])
        sb = Sandbox(SandboxLimits(timeout=20), slots=1)
        try:
            r = sb.run(f"print(open({os.path.join(checkout, 'answers.txt')!r}).read())")
        finally:
            sb.close()
        assert "the-hidden-answer" not in r.stdout, how
        assert r.reason == "error" and ("FileNotFoundError" in r.stderr or "PermissionError" in r.stderr)
    finally:
        shutil.rmtree(top)


# ------------------------------------------------------------------ the shell
def test_a_command_signalling_the_shell_process_keeps_the_session_and_workspace():
    # The session's process (pid 1 there, the commands' parent) handled SIGINT as Python does: a
    # command's ``kill -INT 1`` ended the cell mid-command and the shell restarted empty.
    from gem.tools.bash_tool import SandboxShell

    sh = SandboxShell()
    try:
        sh.start()
        assert sh.run("echo kept > note.txt").exit_code == 0
        r = sh.run("kill -INT 1; kill -INT $PPID; sleep 0.2; echo after")
        assert r.exit_code == 0 and r.output == "after\n", (r.exit_code, r.output)
        assert sh.run("cat note.txt").output == "kept\n"
        # The commands themselves still see SIGINT's default action.
        # (A foreground command: bash starts background jobs with SIGINT ignored, so a signal sent
        # to one only acted when it arrived before the job's exec, a race.)
        r = sh.run("bash -c 'kill -INT $$; sleep 5'; echo status $?")
        assert r.output == "status 130\n", r.output
    finally:
        sh.close()


# ------------------------------------------------------------------ uids
def test_workers_of_different_sizes_never_share_a_uid():
    # A shared uid shares RLIMIT_NPROC, the pipe-buffer and inotify quotas per user between runs.
    # Sandboxes in one process may have different slot counts (the shell's, the code tool's).
    from gem.sandbox import _zygote as zygote

    taken: dict[int, tuple[int, int]] = {}
    for slots in (1, 2, 3, 7, 256):
        for pid in range(2, 700):
            first = zygote.run_uid_base(1_000_000, pid)
            for uid in range(first, first + slots):
                owner = taken.setdefault(uid, (pid, slots))
                assert owner[0] == pid, f"uid {uid}: worker {pid} ({slots} slots) and worker {owner}"


def test_runs_of_two_sandboxes_of_different_sizes_get_disjoint_uid_ranges():
    if os.geteuid() != 0:
        pytest.skip("uid ranges are given as root only")
    a, b = Sandbox(slots=2), Sandbox(slots=3)
    try:
        ra, rb = a.run("import os; print(os.getuid())"), b.run("import os; print(os.getuid())")
        lo_a, hi_a = a.isolation["uid_range"]
        lo_b, hi_b = b.isolation["uid_range"]
        assert hi_a <= lo_b or hi_b <= lo_a, (a.isolation["uid_range"], b.isolation["uid_range"])
        assert lo_a <= int(ra.stdout) < hi_a and lo_b <= int(rb.stdout) < hi_b
    finally:
        a.close()
        b.close()


# ------------------------------------------------------------------ a freeze that fails
def test_a_session_that_cannot_be_frozen_is_ended_not_left_running():
    # Where the freezer cannot freeze the session in time (here: the host keeps thawing it), the
    # worker stopped the kernel process alone and said "stopped": the session's other processes
    # ran on between cells. It must end the session instead.
    import glob

    if os.geteuid() != 0:
        pytest.skip("the freezer is used as root only")
    sb = Sandbox(SandboxLimits(timeout=20), slots=1)
    try:
        sb.run("print(1)")
        if not sb.isolation.get("cgroup_freezer") or sb.isolation.get("cgroups") != 1:
            pytest.skip("no cgroup v1 freezer here")
        states = glob.glob(f"/sys/fs/cgroup/freezer/**/gem-sandbox-{sb._proc.pid}/s*/freezer.state", recursive=True)
        assert states
        stop = threading.Event()

        def keep_thawing() -> None:
            while not stop.is_set():
                for path in states:
                    try:
                        with open(path, "w") as fh:
                            fh.write("THAWED")
                    except OSError:
                        pass
                time.sleep(0.0005)

        s = sb.session(timeout=20)
        cell = (
            "import fcntl, os, stat, time\n"
            "if os.fork() == 0:\n"
            "    while True:\n"
            "        with open('/tmp/stamps', 'a') as fh:\n"
            "            fh.write('%r\\n' % time.time())\n"
            "        time.sleep(0.005)\n"
            "time.sleep(0.1)\n"
            + FORGE_STATUS.split("STAMPS = []")[0]
            + "time.sleep(3)\n"
        )
        thawer = threading.Thread(target=keep_thawing)
        thawer.start()
        try:
            first = s.run(cell)
            returned = time.time()
        finally:
            stop.set()
            thawer.join()
        time.sleep(0.5)
        resumed = time.time()
        second = s.run("import os\nprint(open('/tmp/stamps').read() if os.path.exists('/tmp/stamps') else '')")
        stamps = [float(x) for x in second.stdout.split()]
        between = [t for t in stamps if returned + 0.05 < t < resumed - 0.01]
        assert not between, (first.reason, len(between), second.isolation)
        s.close()
    finally:
        sb.close()
