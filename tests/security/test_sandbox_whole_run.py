"""What a run can leave behind, or take, beyond its own processes.

* Pooled namespaces: a slot's network, IPC and UTS namespaces serve one run after another. After a
  run that tries to change everything in them (sysctls, IPv6 flow labels, protocol counters,
  sockets, routes and interfaces, System V and POSIX IPC, the hostname), the host enumerates the
  namespaces a later run of the slot gets and compares them with fresh ones: they must be equal.
* Limits cover the whole run (cgroups): memory summed over every process and the kernel memory of
  its sockets, and the number of processes and threads.
* Socket families a run never needs are refused (AF_VSOCK reaches the hypervisor's host).
* A session is frozen whole between cells: nothing a cell started computes until the next cell.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid

import pytest

from gem.sandbox import Sandbox, SandboxLimits

IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="enters the run's namespaces from the host (root)")


def _host_cgroups() -> set[str]:
    """Controllers this host has enabled (``/proc/cgroups``), if we are root (the sandbox uses
    cgroups only as root)."""
    if not IS_ROOT:
        return set()
    try:
        with open("/proc/cgroups") as fh:
            rows = [line.split() for line in fh if not line.startswith("#")]
    except OSError:
        return set()
    return {row[0] for row in rows if len(row) >= 4 and row[3] == "1"}


def _needs_cgroups(box: Sandbox, *controllers: str) -> None:
    """Skip where the host has no cgroups for the sandbox; where it has, the sandbox must use them."""
    missing = {"memory", "pids", *controllers} - _host_cgroups()
    if missing:
        pytest.skip(f"this host gives the sandbox no cgroup controllers {sorted(missing)} (or we are not root)")


@pytest.fixture(scope="module")
def box():
    sb = Sandbox(SandboxLimits(timeout=20), slots=8)
    try:
        yield sb
    finally:
        sb.close()


# ------------------------------------------------------------------ pooled namespaces
# Run in the sandbox: try to change every piece of state of the network, IPC and UTS namespaces,
# leaving nothing the worker's per-run check counts (no socket, no System V object left), so that
# the slot's next run gets the same namespaces.
DIRTY = r"""
import ctypes, os, socket, struct, subprocess
libc = ctypes.CDLL(None, use_errno=True)
done = []
def attempt(name, fn):
    try:
        if fn() is not False:
            done.append(name)
    except Exception:
        pass
for top in ("/proc/sys/net", "/proc/sys/kernel", "/proc/sys/fs/mqueue"):
    for root, _dirs, files in os.walk(top):
        for f in files:
            path = os.path.join(root, f)
            if top == "/proc/sys/kernel" and not f.startswith(("shm", "msg", "sem", "hostname", "domainname")):
                continue
            def write(path=path):
                old = open(path).read().split() or ["0"]
                new = " ".join(str(int(x) + 1) if x.lstrip("-").isdigit() else x + "x" for x in old)
                with open(path, "w") as fh:
                    fh.write(new)
            attempt("sysctl " + path, write)
def flow_labels():  # IPV6_FLOWLABEL_MGR, IPV6_FL_A_GET, IPV6_FL_S_ANY, IPV6_FL_F_CREATE, 60 s linger
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    for label in range(0x1234, 0x1244):
        req = struct.pack("=16sIBBHHHI", socket.inet_pton(socket.AF_INET6, "::1"), socket.htonl(label), 0, 255, 1, 60, 60, 0)
        s.setsockopt(socket.IPPROTO_IPV6, 32, req)
    s.close()
attempt("ipv6 flow labels", flow_labels)
def counters():  # protocol counters (/proc/net/snmp: OutNoRoutes, ...) count every try
    for fam, addr in ((socket.AF_INET, ("1.1.1.1", 53)), (socket.AF_INET6, ("::1", 53))):
        s = socket.socket(fam, socket.SOCK_DGRAM)
        for _ in range(37):
            try:
                s.sendto(b"x", addr)
            except OSError:
                pass
        s.close()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
    s.close()
attempt("ip counters", counters)
for fam in range(1, 46):
    for typ in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_RAW, socket.SOCK_SEQPACKET):
        attempt(f"socket {fam} {typ}", lambda: socket.socket(fam, typ).close())
def sysv():  # create and remove: the ids the namespace hands out next move on
    for _ in range(5):
        shm = libc.shmget(0, 4096, 0o600)
        if shm < 0:
            return False
        libc.shmctl(shm, 0, None)
        libc.msgctl(libc.msgget(0, 0o600), 0, None)
        libc.semctl(libc.semget(0, 1, 0o600), 0, 0)
attempt("sysv ids", sysv)
def mqueue():
    fd = libc.mq_open(b"/gem-dirty", os.O_CREAT | os.O_RDWR, 0o600, None)
    return fd >= 0
attempt("posix mqueue", mqueue)
attempt("hostname", lambda: libc.sethostname(b"dirty", 5) == 0)
attempt("domainname", lambda: libc.setdomainname(b"dirty", 5) == 0)
for ip in ("/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"):
    if os.path.exists(ip):
        for args in (["link", "set", "lo", "up"], ["addr", "add", "10.9.9.9/24", "dev", "lo"],
                     ["link", "add", "gemdummy", "type", "dummy"], ["route", "add", "blackhole", "10.8.0.0/16"],
                     ["rule", "add", "pref", "123", "table", "123"]):
            attempt("ip " + " ".join(args), lambda: subprocess.run([ip, *args], capture_output=True).returncode == 0)
        break
for tool, args in (("nft", ["add", "table", "inet", "gemdirty"]), ("iptables", ["-A", "INPUT", "-j", "DROP"])):
    for d in ("/usr/sbin", "/sbin", "/usr/bin"):
        if os.path.exists(f"{d}/{tool}"):
            attempt(tool, lambda: subprocess.run([f"{d}/{tool}", *args], capture_output=True).returncode == 0)
            break
print(done)
"""

# Run on the host (root) in a run's network, IPC and UTS namespaces: everything they hold.
ENUMERATE = r"""
import ctypes, errno, json, os, re, shutil, subprocess, sys, tempfile
libc = ctypes.CDLL(None, use_errno=True)
pid = int(sys.argv[1])
for kind, flag in (("net", 0x40000000), ("ipc", 0x08000000), ("uts", 0x04000000)):
    fd = os.open(f"/proc/{pid}/ns/{kind}", os.O_RDONLY)
    assert libc.setns(fd, flag) == 0, kind
    os.close(fd)
assert libc.unshare(0x00020000) == 0  # a mount namespace of its own, for the mqueue mount
libc.mount(None, b"/", None, (1 << 14) | (1 << 18), None)
state = {}
def read(path):
    try:
        with open(path) as fh:
            return fh.read()
    except OSError as exc:
        return f"<{errno.errorcode.get(exc.errno, exc.errno)}>"
for top in ("/proc/sys/net", "/proc/sys/fs/mqueue"):
    for root, _dirs, files in os.walk(top):
        for f in files:
            state[os.path.join(root, f)] = read(os.path.join(root, f))
for f in ("shmmax", "shmall", "shmmni", "shm_rmid_forced", "shm_next_id", "msgmax", "msgmni", "msgmnb",
          "msg_next_id", "sem", "sem_next_id", "hostname", "domainname"):
    state["/proc/sys/kernel/" + f] = read("/proc/sys/kernel/" + f)
# Socket tables: how many rows (inode numbers differ from one namespace to the next).
TABLES = ("tcp", "tcp6", "udp", "udp6", "udplite", "udplite6", "raw", "raw6", "unix", "netlink", "packet",
          "icmp", "icmp6", "ip6_flowlabel")
for name in sorted(os.listdir("/proc/self/net")):
    path = "/proc/self/net/" + name
    if name in GLOBAL or not os.path.isfile(path):
        continue
    text = read(path)
    if name in ("sockstat", "sockstat6"):  # TCP/UDP "alloc", "mem" and "orphan" are host-wide counters
        text = re.sub(r"\b(alloc|mem|orphan) \d+", r"\1 *", text)
    elif name == "protocols":  # its "memory" column is host-wide (the "sockets" one is ours)
        text = "\n".join(" ".join(f[:3] + f[4:]) for f in (line.split() for line in text.splitlines()))
    state[path] = len(text.splitlines()) if name in TABLES and name != "ip6_flowlabel" else text
for name in ("shm", "msg", "sem"):
    state["/proc/sysvipc/" + name] = read("/proc/sysvipc/" + name)
ids = {}
ids["shm"] = libc.shmget(0, 4096, 0o600); libc.shmctl(ids["shm"], 0, None)
ids["msg"] = libc.msgget(0, 0o600); libc.msgctl(ids["msg"], 0, None)
ids["sem"] = libc.semget(0, 1, 0o600); libc.semctl(ids["sem"], 0, 0)
state["sysv next ids"] = ids
mq = tempfile.mkdtemp()
if libc.mount(b"mqueue", mq.encode(), b"mqueue", 0, None) == 0:
    state["posix mqueues"] = sorted(os.listdir(mq))
else:
    state["posix mqueues"] = "<mount failed>"
state["uname"] = list(os.uname())
for cmd in (["ip", "-d", "link"], ["ip", "addr"], ["ip", "route", "show", "table", "all"],
            ["ip", "-6", "route", "show", "table", "all"], ["ip", "rule"], ["ip", "-6", "rule"], ["ip", "neigh"],
            ["nft", "list", "ruleset"], ["iptables-save"], ["ip6tables-save"]):
    exe = shutil.which(cmd[0], path="/usr/sbin:/sbin:/usr/bin:/bin")
    if exe:
        out = subprocess.run([exe, *cmd[1:]], capture_output=True, text=True)
        state[" ".join(cmd)] = out.stdout + out.stderr
print(json.dumps(state))
"""
# Files of /proc/net that are not the namespace's (host-wide per-CPU statistics, the device
# drivers' packet types): they move with the host's traffic, not with what a run does.
GLOBAL = ("softnet_stat", "stat", "ptype", "dev_mcast", "pnp")


def _enumerate_namespaces_of_a_run(sb: Sandbox) -> dict:
    """Start a run that waits, enumerate its namespaces from the host, end it."""
    name = "gem-ns-" + uuid.uuid4().hex[:6]
    done: list = []
    waiter = threading.Thread(
        target=lambda: done.append(
            sb.run(f"import ctypes, time\nctypes.CDLL(None).prctl(15, {name!r}.encode(), 0, 0, 0)\ntime.sleep(30)")
        )
    )
    waiter.start()
    try:
        pid = None
        end = time.monotonic() + 10
        while pid is None and time.monotonic() < end:
            for p in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{p}/comm") as fh:
                        if fh.read().strip() == name:
                            pid = int(p)
                except OSError:
                    pass
            time.sleep(0.02)
        assert pid is not None, "the waiting run did not start"
        proc = subprocess.run(
            [sys.executable, "-c", f"GLOBAL = {GLOBAL!r}\n" + ENUMERATE, str(pid)],
            capture_output=True, text=True, timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        os.kill(pid, 9)
    finally:
        waiter.join(40)
    return json.loads(proc.stdout)


@needs_root
def test_pooled_namespaces_are_as_fresh_after_a_run_that_dirtied_them():
    with Sandbox(slots=1, prefork=1) as fresh:
        baseline = _enumerate_namespaces_of_a_run(fresh)  # the slot's first namespaces: new
    with Sandbox(slots=1, prefork=1) as sb:  # one slot: every run gets the slot's pooled namespaces
        dirty = sb.run(DIRTY, timeout=60)
        assert dirty.exit_code == 0, dirty.stderr
        changed = [x for x in eval(dirty.stdout) if not x.startswith("socket 1 ")]  # (AF_UNIX works)
        later = _enumerate_namespaces_of_a_run(sb)
    assert baseline.keys() == later.keys()
    diff = {k: (baseline[k], later[k]) for k in baseline if baseline[k] != later[k]}
    assert not diff, f"state a run left for the next (the run managed: {changed}): {diff}"
    assert "/proc/self/net/ip6_flowlabel" in later and "/proc/sys/net/core/somaxconn" in later
    assert later["uname"][1] == "gem-sandbox"


def test_runs_cannot_write_sysctls(box):
    # As root the run's uid owns nothing and its /proc is read-only (runs in user namespaces, on a
    # host without root: see test_non_root_host_runs_isolated_in_user_namespaces).
    r = box.run(
        "out = []\n"
        "for p in ('/proc/sys/net/core/somaxconn', '/proc/sys/kernel/shmmax', '/proc/sys/fs/mqueue/msg_max',\n"
        "          '/proc/sys/kernel/hostname'):\n"
        "    try:\n"
        "        open(p, 'w').write('7')\n"
        "        out.append(p)\n"
        "    except OSError:\n"
        "        pass\n"
        "print(out)"
    )
    assert r.stdout == "[]\n", r.stdout + r.stderr


# ------------------------------------------------------------------ socket families
def test_socket_families_a_run_never_needs_are_refused(box):
    r = box.run(
        "import socket\n"
        "out = {}\n"
        "for name, fam, typ in (('vsock', 40, socket.SOCK_STREAM), ('packet', 17, socket.SOCK_RAW),\n"
        "                       ('netlink', 16, socket.SOCK_RAW), ('bluetooth', 31, socket.SOCK_STREAM),\n"
        "                       ('alg', 38, socket.SOCK_SEQPACKET), ('key', 15, socket.SOCK_RAW),\n"
        "                       ('xdp', 44, socket.SOCK_RAW), ('inet', 2, socket.SOCK_DGRAM),\n"
        "                       ('inet6', 10, socket.SOCK_DGRAM), ('unix', 1, socket.SOCK_STREAM)):\n"
        "    try:\n"
        "        socket.socket(fam, typ).close()\n"
        "        out[name] = 'created'\n"
        "    except OSError as exc:\n"
        "        out[name] = exc.errno\n"
        "try:\n"
        "    socket.socketpair(40, socket.SOCK_STREAM)\n"
        "    out['vsock pair'] = 'created'\n"
        "except OSError as exc:\n"
        "    out['vsock pair'] = exc.errno\n"
        "a, b = socket.socketpair()\n"
        "a.sendall(b'ok')\n"
        "out['unix pair'] = b.recv(2).decode()\n"
        "print(out)"
    )
    out = eval(r.stdout)
    assert out.pop("unix") == "created" and out.pop("unix pair") == "ok", r.stdout
    assert all(v == 97 for v in out.values()), out  # EAFNOSUPPORT, from the filter


def test_network_mode_allows_ip_sockets_but_not_vsock():
    with Sandbox(network=True, slots=2) as sb:
        r = sb.run(
            "import socket\nsocket.socket(socket.AF_INET6, socket.SOCK_DGRAM).close()\n"
            "socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()\n"
            "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close()\n"
            "for fam, proto in ((40, 0), (socket.AF_NETLINK, 15)):  # AF_VSOCK, NETLINK_KOBJECT_UEVENT\n"
            "    try:\n        socket.socket(fam, socket.SOCK_RAW if fam == 16 else socket.SOCK_STREAM, proto)\n"
            "        print('created')\n"
            "    except OSError as exc:\n        print(exc.errno)"
        )
    assert r.stdout == "97\n97\n", r.stdout + r.stderr


# ------------------------------------------------------------------ limits over the whole run
EIGHT_CHILDREN = """
import os, time
kids = []
for _ in range(8):
    pid = os.fork()
    if pid == 0:
        block = bytearray(b'x') * (200 << 20)  # touched: 200 MB each
        time.sleep(5)
        os._exit(0)
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
print('all lived')
"""


def test_memory_limit_covers_all_processes_of_the_run(box):
    _needs_cgroups(box)
    r = box.run(EIGHT_CHILDREN, memory_mb=256, timeout=20)
    assert r.reason == "memory" and "all lived" not in r.stdout, (r.reason, r.stdout, r.stderr[-500:])
    assert r.wall_time < 10  # ended at the first kill, not when the children were done
    assert box.run("print(1)", memory_mb=256).stdout == "1\n"  # the slot is usable again


def test_socket_buffers_count_against_the_run_memory(box):
    _needs_cgroups(box)
    stuff = (
        "import socket\n"
        "total, keep = 0, []\n"
        "while total < (512 << 20) and len(keep) < 4000:\n"
        "    a, b = socket.socketpair()\n"
        "    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 << 20)\n"
        "    a.setblocking(False)\n"
        "    try:\n"
        "        while True:\n"
        "            total += a.send(b'x' * 65536)\n"
        "    except BlockingIOError:\n"
        "        pass\n"
        "    keep.append((a, b))\n"
        "print('stuffed', total >> 20, 'MB')\n"
    )
    r = box.run(stuff, memory_mb=256, timeout=30)
    assert r.reason == "memory", (r.reason, r.stdout, r.stderr[-500:])


@pytest.mark.parametrize("drop_privileges", [True, False])
def test_fork_bomb_is_capped_for_the_run(drop_privileges):
    # As uid 0 (drop_privileges=False) RLIMIT_NPROC does not apply at all: only the run's pids
    # cgroup holds it.
    with Sandbox(slots=2, drop_privileges=drop_privileges) as sb:
        _needs_cgroups(sb)
        r = sb.run(
            "import os, time\n"
            "n = 0\n"
            "for _ in range(64):\n"
            "    try:\n"
            "        if os.fork() == 0:\n"
            "            time.sleep(3)\n"
            "            os._exit(0)\n"
            "        n += 1\n"
            "    except OSError:\n"
            "        pass\n"
            "print(n)",
            max_processes=8,
            timeout=20,
        )
    assert r.ok, r.stderr
    assert int(r.stdout) == 7, r.stdout  # the run itself and 7 children


# ------------------------------------------------------------------ sessions
def test_session_is_frozen_whole_between_cells(box):
    _needs_cgroups(box, "freezer")
    with box.session(timeout=10, max_processes=64) as s:
        # A thread keeps starting processes that count in a file: the cell's end kills the ones
        # that exist, the thread starts new ones at once.
        r = s.run(
            "import os, threading, time\n"
            "def spawn():\n"
            "    while True:\n"
            "        pid = os.fork()\n"
            "        if pid == 0:\n"
            "            n = 0\n"
            "            while True:\n"
            "                n += 1\n"
            "                if n % 20000 == 0:\n"
            "                    with open('/tmp/ticks', 'a') as fh:\n"
            "                        fh.write(f'{time.monotonic()}\\n')\n"
            "        try:\n"
            "            os.waitpid(pid, 0)\n"
            "        except ChildProcessError:\n"
            "            time.sleep(0.001)\n"
            "threading.Thread(target=spawn, daemon=True).start()\n"
            "time.sleep(0.3)\n"
        )
        assert r.ok, r.stderr
        ended = time.monotonic()
        time.sleep(1.0)
        began = time.monotonic()
        r = s.run("print(open('/tmp/ticks').read())")
        ticks = [float(t) for t in r.stdout.split()]
        assert ticks and min(ticks) < ended, r.stdout  # it did compute during the cell
        between = [t for t in ticks if ended < t < began]
        assert not between, f"{len(between)} ticks between the cells"


def test_session_timers_and_signal_handlers_do_not_run_between_cells(box):
    # Single-threaded after the cell (nothing to freeze), the kernel waits for the next cell with
    # every signal blocked: a timer's handler cannot run code meanwhile.
    with box.session(timeout=10) as s:
        r = s.run(
            "import signal, time\n"
            "ticks = []\n"
            "signal.signal(signal.SIGALRM, lambda *_: ticks.append(time.monotonic()))\n"
            "signal.setitimer(signal.ITIMER_REAL, 0.01, 0.01)\n"
            "time.sleep(0.2)\n"
        )
        assert r.ok, r.stderr
        ended = time.monotonic()
        time.sleep(0.6)
        began = time.monotonic()
        r = s.run("signal.setitimer(signal.ITIMER_REAL, 0, 0)\nprint(len(ticks), ticks)")
        count, _, listed = r.stdout.partition(" ")
        ticks = eval(listed)
        assert int(count) >= 5, r.stdout  # it ticked during the first cell
        assert not [t for t in ticks if ended < t < began], r.stdout


@pytest.mark.skipif(not IS_ROOT, reason="the sandbox uses cgroups only as root")
def test_cgroup_v2_files_are_the_ones_the_kernel_documents(tmp_path, monkeypatch):
    """cgroup v2 on a host with only v1 controllers: the worker's v2 path, against a directory
    laid out as the kernel lays out a v2 hierarchy (the files are plain files here: each write
    is appended, so the content is the sequence of writes)."""
    from gem.sandbox import _zygote as z

    mount = tmp_path / "cg2"
    own = mount / "system.slice" / "job.service"
    own.mkdir(parents=True)
    (mount / "system.slice" / "cgroup.controllers").write_text("cpu io memory pids\n")
    base = mount / "system.slice" / f"gem-sandbox-{os.getpid()}"
    slot = base / "s3"
    slot.mkdir(parents=True)
    (base / "cgroup.subtree_control").write_text("")
    for name in ("cgroup.procs", "memory.max", "pids.max", "memory.oom.group", "memory.swap.max", "cgroup.freeze"):
        (slot / name).write_text("")
    (slot / "memory.events").write_text("low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\noom_group_kill 1\n")
    (slot / "cgroup.events").write_text("populated 1\nfrozen 1\n")
    monkeypatch.setattr(z, "_own_cgroups", lambda: ({}, "/system.slice/job.service"))
    monkeypatch.setattr(z, "_cgroup_mounts", lambda: ({}, (str(mount), "/")))
    cg = z.Cgroups()
    try:
        assert cg.version == 2 and cg.freezer, cg.why
        # Beside the worker's own cgroup (which holds processes), with the controllers handed down.
        assert (base / "cgroup.subtree_control").read_text() == "+memory +pids"
        s = cg.slot(3)
        assert [os.readlink(f"/proc/self/fd/{fd}") for fd in s.procs] == [str(slot / "cgroup.procs")]
        assert (slot / "memory.oom.group").read_text() == "1"  # an OOM kill takes the whole run
        assert (slot / "memory.swap.max").read_text() == "0"
        assert (slot / "cgroup.freeze").read_text() == "0"  # thawed for its first run
        assert cg.oom_kills(s) == 2 and s.oom_seen == 2
        assert cg.limit_values(256 << 20, 8) == [b"268435456", b"8"]
        assert cg.limit_values(-1, -1) == [b"max", b"max"]
        for fd, value in zip(s.limits, cg.limit_values(256 << 20, 8)):
            os.write(fd, value)
        assert (slot / "memory.max").read_text() == "268435456" and (slot / "pids.max").read_text() == "8"
        assert cg.set_frozen(s, True) and s.frozen  # waits for "frozen 1" in cgroup.events
        cg.set_frozen(s, False)
        assert (slot / "cgroup.freeze").read_text() == "010"
    finally:
        for name in os.listdir(slot):  # (in a real hierarchy the kernel's files go with rmdir)
            os.unlink(slot / name)
        os.unlink(base / "cgroup.subtree_control")
        cg.close()
    assert not base.exists()  # removed with its slots at shutdown


def test_a_run_moves_itself_into_its_slot_without_the_global_cgroup_lock():
    """v1: a waiting child moves itself (its only thread) through each hierarchy's ``tasks``, the
    one move the kernel makes without write-locking every fork and exit on the host
    (``cgroup.procs`` takes that lock); it lands in all of its slot's cgroups all the same."""
    from gem.sandbox import _zygote as z

    cg = z.Cgroups()
    if cg.version != 1:
        cg.close()
        pytest.skip(f"no cgroup v1 hierarchies for the sandbox here ({cg.why or 'cgroup v2'})")
    try:
        s = cg.slot(5)
        entries = {os.path.basename(os.readlink(f"/proc/self/fd/{fd}")) for fd in s.procs}
        assert entries == {"tasks"}
        pid = os.fork()
        if pid == 0:
            try:
                for fd in s.procs:
                    os.write(fd, b"0")
                time.sleep(5)
            finally:
                os._exit(0)
        try:
            deadline = time.monotonic() + 5
            while True:
                with open(f"/proc/{pid}/cgroup") as fh:
                    where = {line.split(":")[1]: line.strip().split(":", 2)[2] for line in fh}
                moved = {c for c in cg.bases if where.get(c, "").endswith(f"/gem-sandbox-{os.getpid()}/s5")}
                if moved == set(cg.bases) or time.monotonic() > deadline:
                    break
                time.sleep(0.01)
            assert moved == set(cg.bases), where
        finally:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
    finally:
        cg.close()


def test_a_killed_worker_leaves_no_frozen_session_behind():
    """A worker killed while a session is frozen: the next worker thaws and removes its cgroups,
    so the session's processes end instead of staying frozen for good."""
    import glob
    import signal

    sb = Sandbox(slots=2)
    _needs_cgroups(sb, "freezer")
    s = sb.session()
    r = s.run("import threading, time\nthreading.Thread(target=lambda: time.sleep(1000), daemon=True).start()")
    assert r.ok and r.isolation["session_alive"], r.stderr
    pid = sb._proc.pid
    os.kill(pid, signal.SIGKILL)
    sb._proc.wait()
    left = [d for d in glob.glob(f"/sys/fs/cgroup/*/gem-sandbox-{pid}/s*") if os.path.exists(d + "/freezer.state")]
    assert any(open(d + "/freezer.state").read().startswith("FROZEN") for d in left), left
    for _ in range(3):  # each new worker removes what it can; the thawed processes die meanwhile
        with Sandbox(slots=2) as later:
            assert later.run("print(1)").stdout == "1\n"
        if not glob.glob(f"/sys/fs/cgroup/*/gem-sandbox-{pid}"):
            break
        time.sleep(0.3)
    assert not glob.glob(f"/sys/fs/cgroup/*/gem-sandbox-{pid}") and not glob.glob(
        f"/sys/fs/cgroup/*/*/*/gem-sandbox-{pid}"
    )
    sb._proc = None
    sb.close()
